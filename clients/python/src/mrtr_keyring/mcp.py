# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""Seal the Python MCP SDK's request state with the operator's keyring (needs the extra "mcp").

    watcher = KeyringWatcher("/etc/mrtr/keyring").start()
    security = request_state_security(watcher, audience="weather")
    server = MCPServer("weather", request_state_security=security)

KeyringCodec is the SDK's RequestStateCodec over the keyring in service: it hands every seal and
unseal to the SDK's own AESGCMRequestStateCodec built from the keyring's secrets, keys[0] sealing,
so tokens are exactly the SDK's. The SDK's boundary reads security.codec and security.ttl on every
round, so a rotated keyring or token-ttl takes effect on the next round with no restart.

With metrics, meter_boundary(server) makes the count exact: the SDK checks a token's request,
audience and principal after the codec opened it, and only the two middlewares it puts around the
SDK's boundary can tell an opened token the boundary then refused (binding_mismatch) from one it
accepted (ok).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.request_state import (
    AESGCMRequestStateCodec,
    InvalidRequestState,
    RequestStateBoundary,
    RequestStateSecurity,
    authenticated_principal,
)

from ._keyring import Keyring
from ._metrics import FORMAT_PYTHON_SDK, Metrics
from ._watch import KeyringWatcher

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "InvalidRequestState",
    "KeyringCodec",
    "KeyringRequestStateSecurity",
    "TokenTTLExceeded",
    "meter_boundary",
    "request_state_security",
]

# The operator's default tokenTTL (5 minutes): the ttl when neither the caller nor the Secret says.
DEFAULT_TTL_SECONDS = 300.0

KeyringSource = KeyringWatcher | Keyring | Callable[[], Keyring]


def _sdk_codec(ring: Keyring) -> _Built:
    # The SDK refuses two equal secrets in one ring; two ids may share one (the keyring allows it),
    # and the first one's position is the one that counts.
    secrets: list[bytes] = []
    for k in ring.keys:
        if k.secret not in secrets:
            secrets.append(k.secret)
    kids = frozenset(bytes.fromhex(k.python_kid) for k in ring.keys)
    return _Built(ring, AESGCMRequestStateCodec(secrets), kids)


class _Built:
    """The SDK's codec of one keyring, and the kids of its keys (Key.python_kid), which tell a
    rejected token's unknown_key from its bad_mac."""

    __slots__ = ("codec", "kids", "ring")

    def __init__(self, ring: Keyring, codec: AESGCMRequestStateCodec, kids: frozenset[bytes]) -> None:
        self.ring = ring
        self.codec = codec
        self.kids = kids


# mcp 2.3's token layout (mcp.server.request_state): "v1." and the canonical unpadded base64url of
# kid (4 bytes) || nonce (12) || ciphertext || tag (16). docs/consumers.md, "A Python token names
# its key by a kid".
_TOKEN_PREFIX = "v1."  # noqa: S105 (a format prefix)
_KID_LEN = 4
_MIN_RAW_LEN = _KID_LEN + 12 + 16


def _rejection(kids: frozenset[bytes], token: str) -> str:
    """The result of a token the SDK's codec refused, decided from the token itself, in the order
    the codec checks it (rejections.json): a token not laid out as the SDK writes it is malformed;
    one whose kid is none of the keyring's keys is unknown_key; one whose kid is, bad_mac (the
    AES-GCM tag did not verify). The SDK's error text is not read: another 2.x patch may word it
    otherwise."""
    if not token.startswith(_TOKEN_PREFIX):
        return "malformed"
    text = token[len(_TOKEN_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return "malformed"
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != text or len(raw) < _MIN_RAW_LEN:
        return "malformed"
    return "bad_mac" if raw[:_KID_LEN] in kids else "unknown_key"


class KeyringCodec:
    """The SDK's RequestStateCodec over the current keyring of source (a KeyringWatcher, a fixed
    Keyring, or a function returning the keyring in service)."""

    def __init__(self, source: KeyringSource, *, metrics: Metrics | None = None) -> None:
        self._metrics = metrics
        # A watcher's keyring is read straight from it on every seal and open: the hot path is
        # one attribute read and one identity check in front of the SDK's own codec.
        self._watcher: KeyringWatcher | None = None
        if isinstance(source, KeyringWatcher):
            watcher = self._watcher = source
            self._get: Callable[[], Keyring] = lambda: watcher.keyring
            # Built off the request path when the keyring changes; the identity check covers the
            # rounds that come between the swap and this listener.
            watcher.on_change(self._prebuild)
        elif isinstance(source, Keyring):
            ring = source
            self._get = lambda: ring
        else:
            self._get = source
        self._lock = threading.Lock()
        self._built: _Built = _sdk_codec(self._get())

    @property
    def keyring(self) -> Keyring:
        """The keyring in service."""
        return self._get()

    def _prebuild(self, ring: Keyring) -> None:
        self._build(ring)

    def _build(self, ring: Keyring) -> _Built:
        with self._lock:
            built = self._built
            if built.ring is not ring:
                built = _sdk_codec(ring)
                self._built = built  # one reference swap: readers see the old codec or the new one
            return built

    def _codec(self) -> AESGCMRequestStateCodec:
        w = self._watcher
        ring = w._current if w is not None else self._get()
        built = self._built
        return (built if built.ring is ring else self._build(ring)).codec

    def seal(self, payload: bytes) -> str:
        w = self._watcher
        ring = w._current if w is not None else self._get()
        built = self._built
        token = (built if built.ring is ring else self._build(ring)).codec.seal(payload)
        if self._metrics is not None:
            self._metrics.token_sealed(FORMAT_PYTHON_SDK)
        return token

    def unseal(self, token: str) -> bytes:
        w = self._watcher
        ring = w._current if w is not None else self._get()
        built = self._built
        if built.ring is not ring:
            built = self._build(ring)
        if self._metrics is None:
            return built.codec.unseal(token)
        try:
            payload = built.codec.unseal(token)
        except InvalidRequestState:
            self._metrics.token_opened(FORMAT_PYTHON_SDK, _rejection(built.kids, token))
            raise
        result, exp = _claims_result(payload)
        held = _round.get()
        if result != "ok" or held is None or not held.hold(self._metrics, exp):
            self._metrics.token_opened(FORMAT_PYTHON_SDK, result)
        return payload


def _claims_result(payload: bytes) -> tuple[str, float]:
    """The result of an opened token's claims envelope, and its expiry: the checks the SDK's boundary
    runs on the envelope (mcp 2.3's RequestStateBoundary._unseal), by the clock it reads next.

    A payload that is not the envelope (no JSON object with v, iat, exp and s; another version; an
    s that is not a string; a time that is not a number) is malformed. Issued beyond the boundary's
    60 s future skew, or expired, is expired. What the boundary checks after that, the request, the
    audience and the principal, is its own: without meter_boundary a token it refuses for them
    counts ok here, as the codec opened it."""
    try:
        claims = json.loads(payload)
        version, iat, exp, inner = claims["v"], claims["iat"], claims["exp"], claims["s"]
    except (ValueError, KeyError, TypeError):
        return "malformed", 0.0
    if (
        version != _ENVELOPE_VERSION
        or not isinstance(inner, str)
        or not isinstance(iat, int | float)
        or not isinstance(exp, int | float)
    ):
        return "malformed", 0.0
    now = time.time()
    # Stated positively, as the boundary states them: a NaN fails the comparison and is refused.
    if not (iat <= now + _FUTURE_SKEW_SECONDS) or not (now < exp):
        return "expired", exp
    return "ok", exp


# The SDK's claims envelope (mcp 2.3, mcp.server.request_state): its version and how far in the
# future a token's issue time may be.
_ENVELOPE_VERSION = 1
_FUTURE_SKEW_SECONDS = 60.0


class TokenTTLExceeded(ValueError):
    """The ttl a server asked for is longer than the token-ttl of the keyring in service: its tokens
    would outlive the operator's wait before it removes a key. The SDK answers the round with an
    internal error; the message names both numbers and what to change."""

    def __init__(self, ttl: float, token_ttl: int) -> None:
        super().__init__(
            f"request_state_security: ttl is {ttl:g}s, longer than the {token_ttl}s the keyring declares "
            "(its token-ttl, the MRTRKeyring's tokenTTL): tokens would outlive the rotation's wait; "
            "lower ttl, or raise spec.tokenTTL"
        )
        self.ttl = ttl
        self.token_ttl = token_ttl


class KeyringRequestStateSecurity(RequestStateSecurity):
    """RequestStateSecurity whose ttl is never longer than the keyring's token-ttl, read on every
    seal: the operator drops a key only token-ttl after the last pod sealed with it.

    With no ttl given, the ttl is the token-ttl. A ttl given that is longer than the token-ttl of the
    keyring in service fails every seal (TokenTTLExceeded), as Go's pkg/token, the TypeScript
    package and the Rust crate do, rather than seal for less than the server promises its clients
    without a word (docs/consumers.md, "token-ttl")."""

    codec: KeyringCodec

    def __init__(
        self,
        codec: KeyringCodec,
        *,
        audience: str,
        ttl: float | None = None,
        bind_principal: Callable[[ServerRequestContext[Any, Any]], str | None] | None = authenticated_principal,
    ) -> None:
        if not isinstance(audience, str) or not audience:
            raise ValueError(
                "request_state_security: audience must be a non-empty string shared by every replica "
                "(tokens are bound to it; the SDK's default, the server name, would differ between servers)"
            )
        self._max_ttl: float | None = None
        self._bind_principal: Callable[[ServerRequestContext[Any, Any]], str | None] | None = None
        super().__init__(
            codec=codec,
            ttl=DEFAULT_TTL_SECONDS if ttl is None else ttl,
            bind_principal=bind_principal,
            audience=audience,
        )
        self._max_ttl = ttl

    @property
    def bind_principal(self) -> Callable[[ServerRequestContext[Any, Any]], str | None] | None:
        # The boundary reads it on every round: a failure of the server's own binding is then told
        # apart, by meter_boundary, from a token bound to another principal (the boundary refuses
        # both with one frozen error).
        return None if self._bind_principal is None else self._metered_principal

    @bind_principal.setter
    def bind_principal(self, value: Callable[[ServerRequestContext[Any, Any]], str | None] | None) -> None:
        self._bind_principal = value

    def _metered_principal(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        bind = self._bind_principal
        assert bind is not None
        try:
            principal = bind(ctx)
        except Exception:
            _principal_failed()
            raise
        # The boundary refuses anything but a str or None as the server's mistake too.
        if principal is not None and not isinstance(principal, str):
            _principal_failed()
        return principal

    @property
    def ttl(self) -> float:
        declared = self.codec.keyring.token_ttl
        wanted = self._max_ttl
        if declared is None:
            return DEFAULT_TTL_SECONDS if wanted is None else wanted
        if wanted is None:
            return float(declared)
        if wanted > declared:
            raise TokenTTLExceeded(wanted, declared)
        return wanted

    @ttl.setter
    def ttl(self, value: float) -> None:
        # RequestStateSecurity.__init__ validates and assigns it; any assignment sets the ceiling.
        self._max_ttl = value


def request_state_security(
    source: KeyringSource | KeyringCodec,
    *,
    audience: str,
    ttl: float | None = None,
    bind_principal: Callable[[ServerRequestContext[Any, Any]], str | None] | None = authenticated_principal,
    metrics: Metrics | None = None,
) -> KeyringRequestStateSecurity:
    """The SDK's RequestStateSecurity over the keyring of source, for MCPServer(request_state_security=).

    audience is required and must be the same on every replica (a retry may land on any of them).
    ttl is the token lifetime, in seconds: the Secret's token-ttl when ttl is None (300 s when neither
    says); a ttl longer than the token-ttl of the keyring in service fails every seal with
    TokenTTLExceeded until one of the two changes. metrics,
    if given, counts every seal and open (mrtr_keyring.Metrics; a KeyringCodec source keeps its own).
    """
    codec = source if isinstance(source, KeyringCodec) else KeyringCodec(source, metrics=metrics)
    return KeyringRequestStateSecurity(codec, audience=audience, ttl=ttl, bind_principal=bind_principal)


# Counting what the SDK's boundary refuses (meter_boundary).
#
# mcp 2.3's RequestStateBoundary opens a token with the codec, then checks the claims: the request,
# the audience and the principal. A refusal surfaces only as its frozen error (-32602 "Invalid or
# expired requestState"), so the codec alone cannot count it. meter_boundary puts one middleware on
# each side of the boundary in server.middleware (outermost first, composed on every request): the
# outer one gives the round a _Round, in which the codec holds the count of a token it opened; the
# inner one runs only when the boundary accepted the round (the boundary calls the rest of the
# chain then, and only then), and counts it ok; when the outer one sees the round end without that,
# the boundary refused an opened token for its binding: binding_mismatch, or expired if the token
# expired between the codec's clock and the boundary's. The boundary's checks run without an await
# between the codec and its decision, so no cancellation falls in between.


class _Round:
    """One request's opened token, held between the codec and the SDK's boundary."""

    __slots__ = ("accepted", "exp", "metrics", "principal_failed")

    def __init__(self) -> None:
        self.metrics: Metrics | None = None
        self.exp = 0.0
        self.accepted = False
        self.principal_failed = False

    def hold(self, metrics: Metrics, exp: float) -> bool:
        """Holds the count of an opened token; False if the round holds one already (the SDK
        opens one token per round: a second one is counted at once)."""
        if self.metrics is not None:
            return False
        self.metrics, self.exp = metrics, exp
        return True

    def settle(self) -> None:
        """Counts the held token once the round is over: the inner middleware counted it ok if the
        boundary accepted it; a failure of the server's own bind_principal is no token's result."""
        m = self.metrics
        if m is None or self.accepted or self.principal_failed:
            return
        m.token_opened(FORMAT_PYTHON_SDK, "binding_mismatch" if time.time() < self.exp else "expired")


_round: ContextVar[_Round | None] = ContextVar("mrtr_keyring_round", default=None)


def _principal_failed() -> None:
    held = _round.get()
    if held is not None:
        held.principal_failed = True


class _OuterMeter:
    """Outside the SDK's boundary: gives each round carrying a token a _Round, and settles it."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # The boundary opens a token only where requestState is present and not null.
        if ctx.params is None or ctx.params.get("requestState") is None:
            return await call_next(ctx)
        held = _Round()
        reset = _round.set(held)
        try:
            return await call_next(ctx)
        finally:
            _round.reset(reset)
            held.settle()


class _InnerMeter:
    """Inside the SDK's boundary: reached only when it accepted the round; counts its token ok."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        held = _round.get()
        if held is not None and not held.accepted:
            held.accepted = True
            if held.metrics is not None:
                held.metrics.token_opened(FORMAT_PYTHON_SDK, "ok")
        return await call_next(ctx)


class _Server(Protocol):
    """MCPServer or the low-level Server: their middleware chain, outermost first."""

    @property
    def middleware(self) -> list[ServerMiddleware[Any]]: ...


def _boundary_security(boundary: object) -> RequestStateSecurity | None:
    """The policy the SDK's boundary was built with, or None where this SDK keeps it elsewhere.

    mcp 2.3 offers no public way to read it (RequestStateBoundary keeps it as _security, and MCPServer
    keeps no reference): this is the one place that reads the private attribute, only to refuse a
    server that would count nothing. test_meter_boundary's test of it fails when the pinned SDK
    moves it, rather than meter_boundary silently skipping the check."""
    security = getattr(boundary, "_security", None)
    return security if isinstance(security, RequestStateSecurity) else None


def meter_boundary(server: _Server) -> None:
    """Counts what the SDK's request-state boundary refuses: a token the codec opened counts ok only
    once the boundary accepted it, and binding_mismatch when the boundary refused it for its request,
    audience or principal (expired if it expired in between). A failure of the server's own
    bind_principal counts nothing: it is the server's mistake, not a token's result.

    server is an MCPServer (or a low-level Server) whose request_state_security is
    request_state_security(..., metrics=...): the one boundary in server.middleware gets a middleware
    on each side. Call it once, before serving; a second call changes nothing. Without it, a token the
    boundary refuses for its binding counts ok, as the codec opened it."""
    chain = server.middleware
    if any(isinstance(m, _OuterMeter) for m in chain):
        return
    at = [i for i, m in enumerate(chain) if isinstance(m, RequestStateBoundary)]
    if len(at) != 1:
        raise ValueError(
            f"meter_boundary: the server's middleware holds {len(at)} RequestStateBoundary, not one: "
            "give MCPServer request_state_security=request_state_security(...)"
        )
    security = _boundary_security(chain[at[0]])
    if security is not None and not (
        isinstance(security, KeyringRequestStateSecurity) and security.codec._metrics is not None
    ):
        raise ValueError(
            "meter_boundary: the server's request_state_security counts nothing: "
            "give it request_state_security(..., metrics=Metrics()) or a KeyringCodec with metrics"
        )
    chain.insert(at[0] + 1, _InnerMeter())
    chain.insert(at[0], _OuterMeter())
