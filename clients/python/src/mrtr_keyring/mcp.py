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
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.request_state import (
    AESGCMRequestStateCodec,
    InvalidRequestState,
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
    "request_state_security",
]

# The operator's default tokenTTL (5 minutes): the ttl when neither the caller nor the Secret says.
DEFAULT_TTL_SECONDS = 300.0

KeyringSource = KeyringWatcher | Keyring | Callable[[], Keyring]


def _sdk_codec(ring: Keyring) -> AESGCMRequestStateCodec:
    # The SDK refuses two equal secrets in one ring; two ids may share one (the keyring allows it),
    # and the first one's position is the one that counts.
    secrets: list[bytes] = []
    for k in ring.keys:
        if k.secret not in secrets:
            secrets.append(k.secret)
    return AESGCMRequestStateCodec(secrets)


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
        first = self._get()
        self._built: tuple[Keyring, AESGCMRequestStateCodec] = (first, _sdk_codec(first))

    @property
    def keyring(self) -> Keyring:
        """The keyring in service."""
        return self._get()

    def _prebuild(self, ring: Keyring) -> None:
        self._build(ring)

    def _build(self, ring: Keyring) -> AESGCMRequestStateCodec:
        with self._lock:
            built = self._built
            if built[0] is not ring:
                built = (ring, _sdk_codec(ring))
                self._built = built  # one reference swap: readers see the old pair or the new one
            return built[1]

    def _codec(self) -> AESGCMRequestStateCodec:
        w = self._watcher
        ring = w._current if w is not None else self._get()
        built = self._built
        return built[1] if built[0] is ring else self._build(ring)

    def seal(self, payload: bytes) -> str:
        w = self._watcher
        ring = w._current if w is not None else self._get()
        built = self._built
        token = (built[1] if built[0] is ring else self._build(ring)).seal(payload)
        if self._metrics is not None:
            self._metrics.token_sealed(FORMAT_PYTHON_SDK)
        return token

    def unseal(self, token: str) -> bytes:
        w = self._watcher
        ring = w._current if w is not None else self._get()
        built = self._built
        if self._metrics is None:
            return (built[1] if built[0] is ring else self._build(ring)).unseal(token)
        try:
            payload = (built[1] if built[0] is ring else self._build(ring)).unseal(token)
        except InvalidRequestState as e:
            self._metrics.token_opened(FORMAT_PYTHON_SDK, _UNSEAL_RESULTS.get(str(e), "malformed"))
            raise
        self._metrics.token_opened(FORMAT_PYTHON_SDK, _claims_result(payload))
        return payload


# The python-sdk codec's reasons (mcp 2.3's AESGCMRequestStateCodec.unseal) as the contract's
# results: the AES-GCM tag covers the whole claims envelope, so a token of another binding is bad_mac.
_UNSEAL_RESULTS = {"malformed": "malformed", "unknown key": "unknown_key", "seal": "bad_mac"}


def _claims_result(payload: bytes) -> str:
    """ok, or expired when the SDK's claims envelope says so by the clock the SDK's boundary reads
    next. The boundary's other checks (the request, the audience, the principal) are its own: a
    token it refuses for them counts as ok here, as the codec opened it."""
    try:
        exp = json.loads(payload).get("exp")
    except (ValueError, AttributeError):
        return "malformed"
    if isinstance(exp, int | float) and not time.time() < exp:
        return "expired"
    return "ok"


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
        super().__init__(
            codec=codec,
            ttl=DEFAULT_TTL_SECONDS if ttl is None else ttl,
            bind_principal=bind_principal,
            audience=audience,
        )
        self._max_ttl = ttl

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
