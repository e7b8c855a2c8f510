# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""KeyringWatcher and load_dir on a Secret volume laid out and updated as the kubelet does."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mrtr_keyring import KeyringError, KeyringWatcher, load_dir, parse_keyring

from .kubelet import SecretVolume, keyring_json

A, B, C = ("a", b"A" * 32), ("b", b"B" * 32), ("c", b"C" * 40)


def test_load_dir_reads_keyring_and_token_ttl(tmp_path: Path) -> None:
    SecretVolume(tmp_path, {"keyring.json": keyring_json(A, B), "token-ttl": b"120"})
    ring = load_dir(tmp_path)
    assert ring.ids == ("a", "b")
    assert ring.token_ttl == 120
    assert ring.fingerprint == parse_keyring(keyring_json(A, B)).fingerprint


def test_load_dir_names_the_file_and_entry(tmp_path: Path) -> None:
    SecretVolume(tmp_path, {"keyring.json": keyring_json(A, ("b", b"short"))})
    with pytest.raises(KeyringError, match=r'keyring\.json: keyring\.json: keys\[1\] \(id "b"\): secret is 5 bytes'):
        load_dir(tmp_path)
    SecretVolume(tmp_path, {"keyring.json": keyring_json(A), "token-ttl": b"0"})
    with pytest.raises(KeyringError, match=r"token-ttl: token-ttl is \"0\""):
        load_dir(tmp_path)


def test_reload_follows_swaps_and_keeps_the_last_good_keyring(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path, {"keyring.json": keyring_json(A), "token-ttl": b"300"})
    errors: list[Exception] = []
    seen: list[str] = []
    w = KeyringWatcher(tmp_path, on_error=errors.append)
    w.on_change(lambda r: seen.append(r.fingerprint))
    assert w.keyring.ids == ("a",)
    assert not w.reload()  # nothing new

    vol.update({"keyring.json": keyring_json(A, B), "token-ttl": b"300"})
    assert w.reload()
    assert list(w.keyring.ids) == ["a", "b"]
    assert seen == [w.keyring.fingerprint]

    good = w.keyring
    vol.update({"keyring.json": keyring_json(B, ("dup", b"x" * 32), ("dup", b"y" * 32))})
    with pytest.raises(KeyringError, match=r'keys\[2\] \(id "dup"\): id already used by keys\[1\]'):
        w.reload()
    assert w.keyring is good
    assert w.last_error is not None and "keys[2]" in str(w.last_error)
    # The same bad file again: still the error, reported once.
    with pytest.raises(KeyringError):
        w.reload()
    assert len(errors) == 1
    assert w.stats.errors == 1

    vol.update({"keyring.json": keyring_json(B, A), "token-ttl": b"60"})
    assert w.reload() is True
    assert w.last_error is None
    assert w.keyring.ids == ("b", "a") and w.keyring.token_ttl == 60
    # Another spelling of the same keyring is no change.
    vol.update({"keyring.json": b" " + keyring_json(B, A), "token-ttl": b"60\n"})
    assert w.reload() is False
    assert len(seen) == 2


def test_started_watcher_follows_the_directory(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path, {"keyring.json": keyring_json(A)})
    changed = threading.Event()
    with KeyringWatcher(tmp_path, poll_interval=0.02) as w:
        w.on_change(lambda r: changed.set())
        vol.update({"keyring.json": keyring_json(C, A), "token-ttl": b"90"})
        assert changed.wait(10)
        assert w.keyring.ids == ("c", "a")
        assert w.keyring.token_ttl == 90


def test_invalid_at_start_raises(tmp_path: Path) -> None:
    SecretVolume(tmp_path, {"keyring.json": b'{"keys":[]}'})
    with pytest.raises(KeyringError, match=r'"keys" is empty'):
        KeyringWatcher(tmp_path)
    with pytest.raises(FileNotFoundError):
        KeyringWatcher(tmp_path / "missing")


def test_plain_file_replaced_by_rename(tmp_path: Path) -> None:
    (tmp_path / "keyring.json").write_bytes(keyring_json(A))
    w = KeyringWatcher(tmp_path)
    (tmp_path / "new").write_bytes(keyring_json(B))
    (tmp_path / "new").rename(tmp_path / "keyring.json")
    assert w.reload() is True
    assert w.keyring.ids == ("b",)


def test_never_a_torn_read(tmp_path: Path) -> None:
    # Two snapshots whose keyring and token-ttl differ: a read mixing them would give (A, 120) or
    # (B, 60). Swap between them as fast as possible while reading.
    snapshots = [
        {"keyring.json": keyring_json(A), "token-ttl": b"60"},
        {"keyring.json": keyring_json(B), "token-ttl": b"120"},
    ]
    allowed = {(parse_keyring(s["keyring.json"]).fingerprint, int(s["token-ttl"])) for s in snapshots}
    vol = SecretVolume(tmp_path, snapshots[0])
    stop = threading.Event()

    def swap() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            vol.update(snapshots[i % 2])
            time.sleep(0.0005)

    t = threading.Thread(target=swap)
    t.start()
    got: set[tuple[str, int | None]] = set()
    try:
        reads = 0
        while reads < 1000:
            try:
                ring = load_dir(tmp_path)
            except FileNotFoundError:
                continue  # three swaps raced three reads: a miss, never a mix
            reads += 1
            got.add((ring.fingerprint, ring.token_ttl))
    finally:
        stop.set()
        t.join()
    assert got <= allowed
