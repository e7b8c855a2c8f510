# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The consumer metrics of the contract (docs/consumers.md, "Metrics"), with no dependency.

One Metrics object per process, given to the watcher (KeyringWatcher(metrics=...)), the reporter
(AckReporter(metrics=...)) and the codec (KeyringCodec(source, metrics=...)); serve
Metrics.exposition() on GET /metrics with CONTENT_TYPE. The names and labels are Go's, TypeScript's
and Rust's: one alert covers every consumer. No label carries key bytes.
"""

from __future__ import annotations

import threading
from typing import Final

TOKENS_SEALED_TOTAL: Final = "mrtr_consumer_tokens_sealed_total"
TOKENS_OPENED_TOTAL: Final = "mrtr_consumer_tokens_opened_total"
KEYRING_INFO: Final = "mrtr_consumer_keyring_info"
RELOAD_FAILURES_TOTAL: Final = "mrtr_consumer_reload_failures_total"
ACK_STATE: Final = "mrtr_consumer_ack_state"

#: The results of an open, in the order the exposition lists them.
RESULTS: Final = ("ok", "expired", "unknown_key", "bad_mac", "binding_mismatch", "malformed", "too_large")
#: The acknowledgement's states.
ACK_STATES: Final = ("pending", "acknowledged", "retrying")
#: The format the python-sdk's codec writes, as kubectl mrtr inspect names it.
FORMAT_PYTHON_SDK: Final = "python-sdk"
#: The media type of the exposition.
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Counters and gauges of one consumer process, safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sealed: dict[str, int] = {}
        self._opened: dict[str, dict[str, int]] = {}
        self._fingerprint = ""
        self._reload_failures = 0
        self._ack = ""

    def _format(self, fmt: str) -> None:
        # Every series of a format at 0 from its first use: the first rejection is an increase.
        if fmt not in self._opened:
            self._sealed[fmt] = 0
            self._opened[fmt] = dict.fromkeys(RESULTS, 0)

    def token_sealed(self, fmt: str) -> None:
        with self._lock:
            self._format(fmt)
            self._sealed[fmt] += 1

    def token_opened(self, fmt: str, result: str) -> None:
        if result not in RESULTS:
            raise ValueError(f"result {result!r} is not one of {', '.join(RESULTS)}")
        with self._lock:
            self._format(fmt)
            self._opened[fmt][result] += 1

    def keyring_in_service(self, fingerprint: str) -> None:
        with self._lock:
            self._fingerprint = fingerprint

    def reload_failed(self) -> None:
        with self._lock:
            self._reload_failures += 1

    def ack_state_changed(self, state: str) -> None:
        if state not in ACK_STATES:
            raise ValueError(f"state {state!r} is not one of {', '.join(ACK_STATES)}")
        with self._lock:
            self._ack = state

    def opened(self, fmt: str, result: str) -> int:
        with self._lock:
            return self._opened.get(fmt, {}).get(result, 0)

    def sealed(self, fmt: str) -> int:
        with self._lock:
            return self._sealed.get(fmt, 0)

    @property
    def fingerprint(self) -> str:
        with self._lock:
            return self._fingerprint

    @property
    def reload_failures(self) -> int:
        with self._lock:
            return self._reload_failures

    @property
    def ack_state(self) -> str:
        with self._lock:
            return self._ack

    def exposition(self) -> str:
        """Every metric in the Prometheus text format, as Go's metrics.Text writes it."""
        with self._lock:
            out: list[str] = []
            formats = sorted(self._sealed)
            out += [
                f"# HELP {TOKENS_SEALED_TOTAL} Request-state tokens sealed, by format.",
                f"# TYPE {TOKENS_SEALED_TOTAL} counter",
            ]
            out += [f'{TOKENS_SEALED_TOTAL}{{format="{f}"}} {self._sealed[f]}' for f in formats]
            out += [
                f"# HELP {TOKENS_OPENED_TOTAL} Request-state tokens opened, by format and result.",
                f"# TYPE {TOKENS_OPENED_TOTAL} counter",
            ]
            for f in formats:
                out += [f'{TOKENS_OPENED_TOTAL}{{format="{f}",result="{r}"}} {self._opened[f][r]}' for r in RESULTS]
            out += [
                f"# HELP {KEYRING_INFO} The keyring in service, by fingerprint.",
                f"# TYPE {KEYRING_INFO} gauge",
            ]
            if self._fingerprint:
                out.append(f'{KEYRING_INFO}{{fingerprint="{self._fingerprint}"}} 1')
            out += [
                f"# HELP {RELOAD_FAILURES_TOTAL} Reloads that kept the last good keyring.",
                f"# TYPE {RELOAD_FAILURES_TOTAL} counter",
                f"{RELOAD_FAILURES_TOTAL} {self._reload_failures}",
                f"# HELP {ACK_STATE} The acknowledgement's state: 1 for the current one.",
                f"# TYPE {ACK_STATE} gauge",
            ]
            if self._ack:
                out += [f'{ACK_STATE}{{state="{s}"}} {1 if s == self._ack else 0}' for s in ACK_STATES]
            return "\n".join(out) + "\n"
