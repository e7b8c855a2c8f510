# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The conformance consumer: this package's watcher and reporter behind the check's probe protocol.

    go run ./test/conformance -- python -m mrtr_keyring.conformance

It follows $MRTR_KEYRING_DIR/keyring.json with a KeyringWatcher, acknowledges every keyring it loads
with an AckReporter (Secret $MRTR_SECRET_NAME, pod $POD_NAME in $POD_NAMESPACE, the API server of
$KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, credentials in $MRTR_SERVICE_ACCOUNT_DIR),
prints "loaded <fingerprint> <token-ttl|none>" for each keyring before acknowledging it, answers
"serving?" on stdin with "serving <fingerprint> <token-ttl|none>", and writes every error to stderr,
one line each (docs/consumers.md, "Conformance"). A server does the same with its codec in place of
the probe.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

from ._ack import AckReporter
from ._keyring import Keyring
from ._watch import KeyringWatcher

_out = threading.Lock()


def _say(word: str, ring: Keyring) -> None:
    ttl = "none" if ring.token_ttl is None else str(ring.token_ttl)
    with _out:
        sys.stdout.write(f"{word} {ring.fingerprint} {ttl}\n")
        sys.stdout.flush()


def _error(err: Exception) -> None:
    with _out:
        sys.stderr.write(" ".join(str(err).splitlines()) + "\n")
        sys.stderr.flush()


def main() -> int:
    directory = os.environ.get("MRTR_KEYRING_DIR", "")
    if not directory:
        _error(ValueError("mrtr_keyring.conformance: set $MRTR_KEYRING_DIR to the mounted Secret's directory"))
        return 2
    stopped = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        watcher = KeyringWatcher(directory, on_error=_error)  # no valid keyring: do not start
        reporter = AckReporter(os.environ.get("MRTR_SECRET_NAME", ""), on_error=_error)
    except Exception as e:
        _error(e)
        return 1
    # Listeners run in registration order: "loaded" is printed before follow's listener reports it.
    watcher.on_change(lambda ring: _say("loaded", ring))
    _say("loaded", watcher.keyring)
    reporter.follow(watcher)
    watcher.start()
    reporter.start()

    def probe() -> None:
        for line in sys.stdin:
            if line.strip() == "serving?":
                _say("serving", watcher.keyring)

    threading.Thread(target=probe, name="probe", daemon=True).start()
    while not stopped.wait(1.0):
        pass
    watcher.stop()
    reporter.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
