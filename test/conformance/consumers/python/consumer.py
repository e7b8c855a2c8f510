# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The Python package's conformance consumer: mrtr_keyring's watcher, reporter and codec behind the
check's probe protocol (docs/consumers.md, "Conformance"). It lives in the test tree, not in the
package, and runs with the package (and its extra "mcp") installed:

    go run ./test/conformance -- python test/conformance/consumers/python/consumer.py

It follows $MRTR_KEYRING_DIR/keyring.json with a KeyringWatcher, acknowledges every keyring it loads
with an AckReporter (Secret $MRTR_SECRET_NAME, pod $POD_NAME in $POD_NAMESPACE, the API server of
$KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, credentials in $MRTR_SERVICE_ACCOUNT_DIR),
prints "loaded <fingerprint> <token-ttl|none>" for each keyring before acknowledging it, answers
"serving?" on stdin with "serving <fingerprint> <token-ttl|none>" and "seal?" with "sealed <token>",
and writes every error to stderr, one line each. A server does the same with its MCP server in place
of the probe.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType, SimpleNamespace
from typing import Any, cast

from mcp.server.request_state import InvalidRequestState, RequestStateBoundary

from mrtr_keyring import AckReporter, Keyring, KeyringWatcher, Metrics
from mrtr_keyring.mcp import request_state_security

_out = threading.Lock()


def _say(line: str) -> None:
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _said(word: str, ring: Keyring) -> None:
    ttl = "none" if ring.token_ttl is None else str(ring.token_ttl)
    _say(f"{word} {ring.fingerprint} {ttl}")


def _error(err: Exception) -> None:
    with _out:
        sys.stderr.write(" ".join(str(err).splitlines()) + "\n")
        sys.stderr.flush()


def main() -> int:
    directory = os.environ.get("MRTR_KEYRING_DIR", "")
    if not directory:
        _error(ValueError("consumer.py: set $MRTR_KEYRING_DIR to the mounted Secret's directory"))
        return 2
    stopped = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        # The consumer metrics (docs/consumers.md, "Metrics"), answered to "metrics?".
        metrics = Metrics()
        watcher = KeyringWatcher(directory, on_error=_error, metrics=metrics)  # no valid keyring: do not start
        reporter = AckReporter(os.environ.get("MRTR_SECRET_NAME", ""), on_error=_error, metrics=metrics)
    except Exception as e:
        _error(e)
        return 1
    # The server's own sealing: the SDK's envelope and codec over the keyring in service, with the
    # ttl that follows token-ttl. The boundary is what MCPServer runs around every handler; the
    # probe calls its seal directly, as a tools/call round that asks for input would.
    security = request_state_security(watcher, audience="conformance", metrics=metrics)
    boundary = RequestStateBoundary(security, default_audience=None)
    # Listeners run in registration order: "loaded" is printed before follow's listener reports it.
    watcher.on_change(lambda ring: _said("loaded", ring))
    _said("loaded", watcher.keyring)
    reporter.follow(watcher)
    watcher.start()
    reporter.start()

    def seal() -> str:
        ctx = cast(Any, SimpleNamespace(method="tools/call", params={"name": "conformance"}))
        return boundary._seal(ctx, '{"probe":true}', ("conformance", "", None))

    def probe() -> None:
        for line in sys.stdin:
            if line.strip() == "serving?":
                _said("serving", watcher.keyring)
            elif line.startswith("open? "):
                try:
                    security.codec.unseal(line[len("open? ") :].strip())
                    _say("opened ok")
                except InvalidRequestState:
                    _say("opened rejected")
            elif line.strip() == "metrics?":
                _say("".join("metric " + m + "\n" for m in metrics.exposition().splitlines()) + "metrics end")
            elif line.strip() == "seal?":
                try:
                    _say("sealed " + seal())
                except Exception as e:
                    _error(e)

    threading.Thread(target=probe, name="probe", daemon=True).start()
    while not stopped.wait(1.0):
        pass
    watcher.stop()
    reporter.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
