# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""Follow a mounted keyring Secret: the Go library's FileSource, with the standard library only.

The kubelet lays a Secret volume out as

    <dir>/keyring.json -> ..data/keyring.json
    <dir>/token-ttl    -> ..data/token-ttl
    <dir>/..data       -> ..2026_07_01_10_00_00.123456789

and updates it by writing a new timestamped directory, swapping ..data over to it in one rename and
only then removing the old one: a timestamped directory never changes while ..data names it. So
both files are read from the directory ..data names, and ..data is read again afterwards: if it
moved in between, the read is retried. A read never mixes two snapshots (a torn read), and a read
that races the swap and finds the old directory gone is retried, not reported.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from ._keyring import (
    MAX_DOCUMENT_BYTES,
    SECRET_DATA_KEY,
    TOKEN_TTL_DATA_KEY,
    Keyring,
    KeyringError,
    parse_keyring,
    parse_token_ttl,
)
from ._metrics import Metrics

log = logging.getLogger("mrtr_keyring")

DATA_LINK = "..data"
_MAX_TOKEN_TTL_FILE_BYTES = 16
# A reload accepts the files once two reads in a row, at least 5 ms apart, agree; the pause doubles
# up to 100 ms, for 8 reads at most (355 ms of pauses), as in the Go library.
_SETTLE_FIRST_WAIT = 0.005
_SETTLE_MAX_WAIT = 0.1
_SETTLE_READS = 8

DEFAULT_POLL_INTERVAL = 0.5
DEFAULT_RESYNC_INTERVAL = 10.0


@dataclass(frozen=True, slots=True)
class _Snapshot:
    data: bytes
    ttl: bytes | None


class _Changed(FileNotFoundError):
    """..data moved while the files were read: retry."""


def _read_limited(path: str, limit: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


def _read_snapshot(path: str) -> _Snapshot:
    directory, name = os.path.split(path)
    link = os.path.join(directory, DATA_LINK)
    target: str | None = None
    if os.path.islink(path):  # a plain file is read where it is
        try:
            target = os.readlink(link)
        except OSError:
            target = None
    snap = directory if target is None else os.path.join(directory, target)
    data = _read_limited(os.path.join(snap, name), MAX_DOCUMENT_BYTES + 1)
    try:
        ttl: bytes | None = _read_limited(os.path.join(snap, TOKEN_TTL_DATA_KEY), _MAX_TOKEN_TTL_FILE_BYTES + 1)
    except FileNotFoundError:
        ttl = None
    if target is not None:
        try:
            again: str | None = os.readlink(link)
        except OSError:
            again = None
        if again != target:
            raise _Changed(f"keyring: {link} changed while it was read")
    return _Snapshot(data, ttl)


def _read_settled(path: str, sleep: Callable[[float], None]) -> _Snapshot:
    wait = _SETTLE_FIRST_WAIT
    previous: _Snapshot | None = None
    missing: FileNotFoundError | None = None
    for i in range(_SETTLE_READS):
        if i > 0:
            sleep(wait)
            wait = min(wait * 2, _SETTLE_MAX_WAIT)
        try:
            current = _read_snapshot(path)
        except FileNotFoundError as e:
            missing, previous = e, None
            continue
        if previous is not None and current == previous:
            return current
        previous, missing = current, None
    if missing is not None:
        raise missing
    raise KeyringError(f"keyring: {path} kept changing: {_SETTLE_READS} reads in a row differed")


def _parse_snapshot(path: str, snap: _Snapshot) -> Keyring:
    try:
        ring = parse_keyring(snap.data)
    except KeyringError as e:
        raise KeyringError(f"keyring: {path}: {e}", index=e.index) from None
    if snap.ttl is None:
        return ring
    try:
        ttl = parse_token_ttl(snap.ttl)
    except KeyringError as e:
        raise KeyringError(f"keyring: {os.path.join(os.path.dirname(path), TOKEN_TTL_DATA_KEY)}: {e}") from None
    return replace(ring, token_ttl=ttl)


def _keyring_path(directory: str | os.PathLike[str], filename: str) -> str:
    return os.path.join(os.fspath(directory), filename)


def load_dir(directory: str | os.PathLike[str], *, filename: str = SECRET_DATA_KEY) -> Keyring:
    """Read the keyring (and token-ttl, if there is one) of a mounted Secret directory once, from one
    snapshot. Raises KeyringError for an invalid file, OSError for an unreadable one."""
    path = _keyring_path(directory, filename)
    for attempt in range(3):
        try:
            return _parse_snapshot(path, _read_snapshot(path))
        except FileNotFoundError:
            # The old snapshot vanished under the read: the new one is in place by now.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _signature(path: str) -> tuple[object, ...]:
    """What changes when either file changes: ..data's target and both files' stat."""
    directory = os.path.dirname(path)
    parts: list[object] = []
    with contextlib.suppress(OSError):
        parts.append(os.readlink(os.path.join(directory, DATA_LINK)))
    for p in (path, os.path.join(directory, TOKEN_TTL_DATA_KEY)):
        try:
            st = os.stat(p)
            parts.append((st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError as e:
            parts.append(e.errno)
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class WatcherStats:
    """What a watcher did since it was made; every counter only grows."""

    reloads: int
    changes: int
    errors: int


class KeyringWatcher:
    """Follows the keyring.json (and token-ttl) of a mounted Secret directory.

    The constructor reads the keyring and raises if it is not valid: a server should not start
    without keys. start() then checks the directory every poll_interval seconds (a readlink and two
    stats) and re-reads it when anything moved, and re-reads it every resync_interval seconds
    anyway. A new keyring is parsed and validated in full before it replaces the old one, so
    `keyring` is always a valid keyring; an invalid or unreadable file is reported (on_error,
    last_error, stats) and the last good keyring stays in service until a valid one appears.

    Listeners registered with on_change are called, in order, on the watcher's thread, with each
    keyring after it went into service. `keyring` never blocks.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        filename: str = SECRET_DATA_KEY,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        resync_interval: float = DEFAULT_RESYNC_INTERVAL,
        on_error: Callable[[Exception], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        metrics: Metrics | None = None,
    ) -> None:
        if not poll_interval > 0 or not resync_interval > 0:
            raise ValueError(f"poll interval {poll_interval} and resync interval {resync_interval} must be positive")
        self.path = _keyring_path(directory, filename)
        self.directory = Path(os.fspath(directory))
        self._poll = poll_interval
        self._resync = resync_interval
        self._on_error = on_error
        self._sleep = sleep
        self._metrics = metrics
        self._reload_lock = threading.Lock()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Keyring], None]] = []
        self._last_error: Exception | None = None
        # The text of the last reload's read error, None once a reload could read: the same read
        # error again is not reported again.
        self._last_unread: str | None = None
        self._reloads = self._changes = self._errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Taken before the first read, so that a change during it or before start() is seen.
        self._sig = _signature(self.path)
        snap = _read_settled(self.path, sleep)
        self._current = _parse_snapshot(self.path, snap)
        self._last_sum: bytes | None = self._sum(snap)
        if metrics is not None:
            metrics.keyring_in_service(self._current.fingerprint)

    @staticmethod
    def _sum(snap: _Snapshot) -> bytes:
        # A digest of what was read, to tell "nothing new" from a change; never shown anywhere.
        h = hashlib.sha256(snap.data)
        h.update(b"\x00" if snap.ttl is None else b"\x01" + snap.ttl)
        return h.digest()

    @property
    def keyring(self) -> Keyring:
        """The keyring in service."""
        return self._current

    @property
    def last_error(self) -> Exception | None:
        """The error of the latest reload, None if it succeeded: while set, the files hold something
        that could not be put in service, and the last good keyring is still served."""
        with self._lock:
            return self._last_error

    @property
    def stats(self) -> WatcherStats:
        with self._lock:
            return WatcherStats(self._reloads, self._changes, self._errors)

    def on_change(self, listener: Callable[[Keyring], None]) -> None:
        """Call listener with every keyring that goes into service from now on (not the current one)."""
        with self._lock:
            self._listeners.append(listener)

    def reload(self) -> bool:
        """Read the files now; put their keyring in service if it is valid and different. Returns
        whether the keyring changed; raises the error of this attempt (the keyring in service is
        then unchanged)."""
        with self._reload_lock:
            with self._lock:
                self._reloads += 1
            try:
                snap = _read_settled(self.path, self._sleep)
            except Exception as e:
                self._last_sum = None  # so the same bytes are parsed again once readable
                # A snapshot that stays unreadable for the same reason is one failure, as one that
                # stays invalid is: counted per failure, not per poll, as every consumer counts it.
                if str(e) == self._last_unread:
                    with self._lock:
                        self._last_error = e
                    raise
                self._last_unread = str(e)
                self._failed(e)
                raise
            self._last_unread = None
            digest = self._sum(snap)
            if digest == self._last_sum:
                # Nothing new; a file that is still invalid keeps its error without reporting it again.
                err = self.last_error
                if err is not None:
                    raise err
                return False
            self._last_sum = digest
            try:
                ring = _parse_snapshot(self.path, snap)
            except KeyringError as e:
                self._failed(e)
                raise
            with self._lock:
                self._last_error = None
            if ring == self._current:  # same keys, other spelling
                return False
            self._current = ring
            if self._metrics is not None:
                self._metrics.keyring_in_service(ring.fingerprint)
            with self._lock:
                self._changes += 1
                listeners = list(self._listeners)
            for listener in listeners:
                try:
                    listener(ring)
                except Exception as e:  # a listener's bug must not stop the watcher
                    self._report(e)
            return True

    def _failed(self, err: Exception) -> None:
        if self._metrics is not None:
            self._metrics.reload_failed()
        with self._lock:
            self._last_error = err
            self._errors += 1
        self._report(err)

    def _report(self, err: Exception) -> None:
        if self._on_error is not None:
            try:
                self._on_error(err)
            except Exception:
                log.exception("mrtr_keyring: the watcher's error handler raised")
        else:
            log.warning("mrtr_keyring: %s (serving keyring %s)", err, self._current.fingerprint)

    def start(self) -> KeyringWatcher:
        """Follow the directory on a daemon thread until stop()."""
        if self._thread is not None:
            raise RuntimeError("keyring watcher already started")
        self._thread = threading.Thread(target=self._run, name=f"mrtr-keyring-watch {self.path}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def __enter__(self) -> KeyringWatcher:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _run(self) -> None:
        sig = self._sig
        next_resync = time.monotonic() + self._resync
        while not self._stop.wait(self._poll):
            now_sig = _signature(self.path)
            if now_sig == sig and time.monotonic() < next_resync:
                continue
            # Taken before the read, so a change during the read is seen at the next poll.
            sig = now_sig
            next_resync = time.monotonic() + self._resync
            with contextlib.suppress(Exception):  # reported by reload
                self.reload()
