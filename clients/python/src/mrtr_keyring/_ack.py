# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""Acknowledge the loaded keyring on the pod's own Pod object: the request of the Go pkg/ack.

One JSON merge patch per keyring,

    PATCH /api/v1/namespaces/<ns>/pods/<pod>?fieldManager=mrtr-ack
    Content-Type: application/merge-patch+json
    {"metadata":{"annotations":{"loaded.mrtr.dev/<secret>":"<fingerprint>"}}}

authenticated with the pod's service account token (read again for every request: the kubelet
rotates it) over TLS verified against the service account's ca.crt only. Failures (an error status,
a refused connection, an answer lost on the way) are retried with jittered exponential backoff,
without end, for the latest fingerprint only: serving never waits for it.
"""

from __future__ import annotations

import hashlib
import http
import http.client
import ipaddress
import json
import os
import random
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._metrics import Metrics
    from ._watch import KeyringWatcher

ANNOTATION_PREFIX = "loaded.mrtr.dev/"
FIELD_MANAGER = "mrtr-ack"
USER_AGENT = "mrtr-ack (mrtr-keyring for Python)"
DEFAULT_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# Replaces the default service account directory when set (the conformance check points it at its
# fake API server's token and CA).
SERVICE_ACCOUNT_DIR_ENV = "MRTR_SERVICE_ACCOUNT_DIR"
DEFAULT_MIN_BACKOFF = 0.2
DEFAULT_MAX_BACKOFF = 30.0
DEFAULT_TIMEOUT = 10.0

_MAX_NAME_PART = 63
_HASH_LEN = 16
_HASH_PREFIX_LEN = _MAX_NAME_PART - 1 - _HASH_LEN
_MAX_ERROR_BODY = 4 << 10
_MAX_DRAINED_BODY = 64 << 10
_MAX_MESSAGE = 200
_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def annotation_key(secret: str) -> str:
    """The Pod annotation that acknowledges the keyring of the Secret named secret: the prefix and
    the name when it is at most 63 characters, else its first 46, a dash and 16 hex digits of its
    SHA-256 (Go's ack.AnnotationKey)."""
    if len(secret) <= _MAX_NAME_PART:
        return ANNOTATION_PREFIX + secret
    digest = hashlib.sha256(secret.encode()).hexdigest()[:_HASH_LEN]
    return ANNOTATION_PREFIX + secret[:_HASH_PREFIX_LEN] + "-" + digest


class AckError(Exception):
    """An acknowledgement that failed; the message never contains the token."""


def _hint(status: int) -> str:
    return {
        401: " (the service account token was not accepted)",
        403: " (is the ClusterRole mrtr-keyring-consumer bound to the pod's ServiceAccount?)",
        404: " (no such pod: check $POD_NAME and $POD_NAMESPACE)",
    }.get(status, "")


def _quote_cut(msg: str) -> str:
    raw = msg.encode()
    if len(raw) <= _MAX_MESSAGE:
        return json.dumps(msg)
    return json.dumps(raw[:_MAX_MESSAGE].decode(errors="ignore")) + "…"


def _status_line(code: int, reason: str, token: str) -> str:
    """The status code and reason phrase; a phrase other than the standard one is the server's text
    (any endpoint the CA trusts can answer), so it is redacted, quoted and cut like a message."""
    try:
        standard = http.HTTPStatus(code).phrase
    except ValueError:
        standard = ""
    reason = reason.strip()
    if not reason or reason == standard:
        return f"{code} {standard}".strip()
    return f"{code} {_quote_cut(reason.replace(token, '[token]'))}"


def _status_message(body: bytes, token: str) -> str:
    try:
        doc = json.loads(body)
        message = doc.get("message") if isinstance(doc, dict) else None
    except ValueError:
        message = None
    if isinstance(message, str) and message:
        return _quote_cut(message.replace(token, "[token]"))
    text = body.decode(errors="replace")
    if len(body) == _MAX_ERROR_BODY:
        # Cut by the read limit, the body may end with the first bytes of the token: drop them.
        for k in range(min(len(token) - 1, len(text)), 0, -1):
            if text.endswith(token[:k]):
                text = text[:-k]
                break
    text = text.replace(token, "[token]").strip()
    return _quote_cut(text) if text else "no message"


class _Deadline:
    """Shuts down the socket of conn once seconds have passed, unless stopped first: the bound on
    one whole request. The socket is shut down, not closed, so that the thread blocked on it wakes
    (its read ends) and the connection is closed by its owner."""

    def __init__(self, conn: http.client.HTTPSConnection, seconds: float) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._passed = False
        self._stopped = False
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._passed = True
            sock = self._conn.sock
        if sock is not None:
            try:
                # The plain socket's shutdown: ssl.SSLSocket's own would also drop its TLS state
                # under the reading thread.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass  # already closed

    def check(self) -> None:
        """Raises TimeoutError if the deadline passed, as while connecting no socket could be cut."""
        with self._lock:
            if self._passed:
                raise TimeoutError("deadline passed")

    def stop(self) -> bool:
        """Stops the timer; reports whether the deadline had passed."""
        with self._lock:
            self._stopped = True
            self._timer.cancel()
            return self._passed


class AckReporter:
    """Publishes the fingerprint of the keyring this process loaded on its own Pod.

    report() never blocks: the latest fingerprint wins and the reporter's thread (start()) sends it.
    follow(watcher) reports the watcher's keyring and every keyring it changes to. Configuration
    comes from the arguments, else from the environment the kubelet and the downward API give a
    container: $POD_NAME, $POD_NAMESPACE (else the service account's namespace file),
    $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, and the service account's token and ca.crt.
    The constructor raises ValueError naming what is missing or wrong.
    """

    def __init__(
        self,
        secret: str,
        *,
        pod_name: str | None = None,
        namespace: str | None = None,
        api_server: str | None = None,
        service_account_dir: str | os.PathLike[str] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        min_backoff: float = DEFAULT_MIN_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        timeout: float = DEFAULT_TIMEOUT,
        metrics: Metrics | None = None,
    ) -> None:
        if not secret:
            raise ValueError("ack: no secret: pass the name of the keyring Secret the pod mounts")
        if len(secret) > 253 or _SECRET_NAME.fullmatch(secret) is None:
            raise ValueError(
                f"ack: secret {secret!r} is not a Secret name "
                "(a DNS subdomain: at most 253 lowercase letters, digits, '-' and '.')"
            )
        sa_dir = os.fspath(
            service_account_dir or os.environ.get(SERVICE_ACCOUNT_DIR_ENV) or DEFAULT_SERVICE_ACCOUNT_DIR
        )
        pod = pod_name or os.environ.get("POD_NAME", "")
        if not pod:
            raise ValueError("ack: no pod name: pass pod_name or set $POD_NAME (the downward API's metadata.name)")
        ns = namespace or os.environ.get("POD_NAMESPACE", "") or self._namespace_file(sa_dir)
        base = self._api_server(api_server)
        if min_backoff < 0 or max_backoff < 0:
            raise ValueError(f"ack: backoff {min_backoff} to {max_backoff}: negative")
        if min_backoff > max_backoff:
            raise ValueError(f"ack: min_backoff {min_backoff} exceeds max_backoff {max_backoff}")
        if timeout <= 0:
            raise ValueError(f"ack: timeout {timeout}: not positive")
        ca = os.path.join(sa_dir, "ca.crt")
        try:
            # Only the cluster's CA: the token must reach the API server and nothing else.
            self._tls = ssl.create_default_context(cafile=ca)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"ack: API server CA {ca}: {e}") from None
        self._tls.minimum_version = ssl.TLSVersion.TLSv1_2
        url = urllib.parse.urlsplit(base)
        self._host = url.hostname or ""
        self._port = url.port or 443
        self._path = (
            url.path.rstrip("/")
            + "/api/v1/namespaces/"
            + urllib.parse.quote(ns, safe="")
            + "/pods/"
            + urllib.parse.quote(pod, safe="")
            + "?fieldManager="
            + FIELD_MANAGER
        )
        self.pod = f"{ns}/{pod}"
        self.key = annotation_key(secret)
        self._token_path = os.path.join(sa_dir, "token")
        self._on_error = on_error
        self._metrics = metrics
        self._state = ""
        self._min, self._max, self._timeout = min_backoff, max_backoff, timeout
        self._cond = threading.Condition()
        self._latest = ""
        self._acked = ""
        # What the Pod is known to carry: the acknowledged fingerprint after an accepted request, ""
        # after a failed one, whose patch the API server may have applied although its answer was
        # lost; so a return to the fingerprint acknowledged before is sent again.
        self._on_pod = ""
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._conn: http.client.HTTPSConnection | None = None

    @staticmethod
    def _namespace_file(sa_dir: str) -> str:
        path = os.path.join(sa_dir, "namespace")
        try:
            with open(path, encoding="utf-8") as f:
                ns = f.read().strip()
        except FileNotFoundError:
            ns = ""
        except OSError as e:
            raise ValueError(
                f"ack: no namespace: pass namespace or set $POD_NAMESPACE (the downward API's metadata.namespace): {e}"
            ) from None
        if not ns:
            raise ValueError(
                "ack: no namespace: pass namespace or set $POD_NAMESPACE "
                f"(the downward API's metadata.namespace); {path} is missing or empty"
            )
        return ns

    @staticmethod
    def _api_server(base: str | None) -> str:
        if not base:
            host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
            if not host or not port:
                raise ValueError(
                    "ack: no API server: pass api_server or set $KUBERNETES_SERVICE_HOST and "
                    "$KUBERNETES_SERVICE_PORT (the kubelet sets both in every container)"
                )
            try:
                bracket = ipaddress.ip_address(host).version == 6
            except ValueError:
                bracket = False
            base = f"https://{'[' + host + ']' if bracket else host}:{port}"
        url = urllib.parse.urlsplit(base)
        # Plain http would send the token in the clear.
        if url.scheme != "https" or not url.hostname:
            raise ValueError(
                f"ack: API server {url._replace(netloc=url.hostname or '').geturl()!r}: not an https:// URL"
            )
        return base

    # Reporting.

    def report(self, fingerprint: str) -> None:
        """Record that the process now seals and opens with the keyring of this fingerprint."""
        if not fingerprint:
            return
        with self._cond:
            if fingerprint == self._latest:
                return  # nothing new, and no retry out of the backoff
            self._latest = fingerprint
            self._set_state("acknowledged" if fingerprint == self._on_pod else "pending")
            self._cond.notify_all()

    def _set_state(self, state: str) -> None:
        # Called with self._cond held, so that the metrics see the states in their order.
        if self._metrics is not None and state != self._state:
            self._state = state
            self._metrics.ack_state_changed(state)

    @property
    def acknowledged(self) -> str:
        """The last fingerprint the API server accepted, "" before the first."""
        with self._cond:
            return self._acked

    def follow(self, watcher: KeyringWatcher) -> None:
        """Report the watcher's keyring now and every keyring it changes to."""
        watcher.on_change(lambda ring: self.report(ring.fingerprint))
        # Registered first, so no change is missed; read again until the keyring holds still.
        while True:
            ring = watcher.keyring
            self.report(ring.fingerprint)
            if watcher.keyring is ring:
                return

    def start(self) -> AckReporter:
        """Publish on a daemon thread until stop()."""
        if self._thread is not None:
            raise RuntimeError(f"ack: reporter for pod {self.pod} already started")
        self._thread = threading.Thread(target=self._run, name=f"mrtr-ack {self.pod}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._close()

    def __enter__(self) -> AckReporter:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def backoff(self, failures: int) -> float:
        """The pause after the n-th failure in a row: uniformly random in the upper half of
        min(min_backoff * 2**n, max_backoff), never outside [min_backoff, max_backoff]."""
        d = self._min
        for _ in range(failures):
            if d > self._max / 2:
                d = self._max
                break
            d *= 2
        return max(d / 2 + random.uniform(0, d / 2), self._min)  # noqa: S311 (jitter, not a secret)

    def _next(self, failed: str, retry_at: float | None) -> tuple[str, float | None] | None:
        """Wait for a fingerprint to publish: the latest one, unless it is acknowledged; while backing
        off from a failure of `failed`, only a newer one or the end of the pause. None once stopped."""
        with self._cond:
            while not self._stopped:
                pending = self._latest if self._latest != self._on_pod else ""
                if retry_at is None:
                    if pending:
                        return pending, None
                    self._cond.wait()
                    continue
                if pending and pending != failed:  # a newer fingerprint: try it at once
                    return pending, None
                remaining = retry_at - time.monotonic()
                if remaining <= 0:
                    retry_at = None
                    continue
                self._cond.wait(remaining)
            return None

    def _run(self) -> None:
        failures = 0
        failed, retry_at = "", None
        while (step := self._next(failed, retry_at)) is not None:
            fp, retry_at = step
            try:
                self.publish(fp)
            except Exception as e:
                with self._cond:
                    self._on_pod = ""
                    self._set_state("retrying")
                failures += 1
                failed, retry_at = fp, time.monotonic() + self.backoff(failures)
                if self._on_error is not None:
                    try:
                        self._on_error(e)
                    except Exception:  # noqa: S110 (a handler's bug must not stop the reporter)
                        pass
                continue
            failures, failed = 0, ""
            with self._cond:
                self._acked = self._on_pod = fp
                self._set_state("acknowledged" if fp == self._latest else "pending")

    def _token(self) -> str:
        try:
            with open(self._token_path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise AckError(f"ack: service account token: {e}") from None
        if not token:
            raise AckError(f"ack: service account token {self._token_path} is empty")
        return token

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def publish(self, fingerprint: str) -> None:
        """Send one PATCH that sets the annotation to fingerprint, now; raise AckError on failure."""
        token = self._token()
        body = json.dumps({"metadata": {"annotations": {self.key: fingerprint}}}, separators=(",", ":")).encode()
        headers = {
            "Authorization": "Bearer " + token,
            "Content-Type": "application/merge-patch+json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if self._conn is None:
            # http.client uses no proxy and follows no redirect: the token goes to this address only.
            self._conn = http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout, context=self._tls)
        conn = self._conn
        # The connection's timeout bounds each socket operation only: an endpoint that trickles a
        # byte now and then would hold the reporter forever. One deadline bounds the whole request,
        # answer included (Go's context.WithTimeout): when it passes, the socket is shut down.
        deadline = _Deadline(conn, self._timeout)
        try:
            conn.request("PATCH", self._path, body=body, headers=headers)
            deadline.check()  # the socket may have come after the deadline passed
            resp = conn.getresponse()
            # An answer cut by the deadline may still parse (a status line without its end): only
            # one whose head came in time counts.
            deadline.check()
            if resp.status // 100 == 2:
                # The patched Pod is of no use; reading a bounded part lets the connection be
                # reused, and a longer answer is cut off by closing it. Accepted is accepted,
                # even if the deadline cuts this read.
                try:
                    resp.read(_MAX_DRAINED_BODY)
                except (OSError, http.client.HTTPException):
                    self._close()
                if deadline.stop() or not resp.isclosed():
                    self._close()
                return
            text = resp.read(_MAX_ERROR_BODY)
            self._close()
        except (OSError, http.client.HTTPException) as e:
            # A lost answer lands here too: the patch may have been applied, and resending it is
            # harmless (the same annotation value), so it is retried like any failure.
            self._close()
            if deadline.stop():
                raise AckError(f"ack: patch pod {self.pod}: no answer within {self._timeout:g} s") from None
            raise AckError(f"ack: patch pod {self.pod}: {type(e).__name__}: {e}") from None
        finally:
            deadline.stop()
        message = _status_message(text, token)
        status = _status_line(resp.status, resp.reason, token)
        raise AckError(f"ack: patch pod {self.pod}: {status}: {message}{_hint(resp.status)}")
