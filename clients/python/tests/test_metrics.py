# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The consumer metrics of the contract: names, labels, and what moves them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

from mrtr_keyring import AckReporter, KeyringError, KeyringWatcher, Metrics, parse_keyring
from mrtr_keyring.mcp import KeyringCodec

from .fakeapi import FakeAPIServer
from .kubelet import SecretVolume, keyring_json

A = ("a", bytes(range(32)))
B = ("b", bytes(range(1, 33)))
FOREIGN = ("z", bytes(range(7, 39)))


def claims(exp: float) -> bytes:
    return json.dumps({"v": 1, "iat": 0, "exp": exp, "s": ""}).encode()


def test_codec_counts_seals_and_opens_by_result() -> None:
    m = Metrics()
    codec = KeyringCodec(parse_keyring(keyring_json(A)), metrics=m)
    tok = codec.seal(claims(4e9))
    codec.unseal(tok)
    stale = codec.seal(claims(1.0))
    codec.unseal(stale)  # the codec opens it; the SDK's boundary refuses it as expired
    foreign = AESGCMRequestStateCodec([FOREIGN[1]]).seal(claims(4e9))
    tampered = tok[:-2] + ("AA" if tok[-2:] != "AA" else "BB")
    for bad in (foreign, tampered, "v1.%%%", "garbage"):
        with pytest.raises(InvalidRequestState):
            codec.unseal(bad)
    assert m.sealed("python-sdk") == 2
    got = {r: m.opened("python-sdk", r) for r in ("ok", "expired", "unknown_key", "bad_mac", "malformed")}
    assert got == {"ok": 1, "expired": 1, "unknown_key": 1, "bad_mac": 1, "malformed": 2}
    text = m.exposition()
    assert 'mrtr_consumer_tokens_opened_total{format="python-sdk",result="unknown_key"} 1\n' in text
    assert 'mrtr_consumer_tokens_opened_total{format="python-sdk",result="too_large"} 0\n' in text
    assert 'mrtr_consumer_tokens_sealed_total{format="python-sdk"} 2\n' in text


def test_watcher_reports_keyring_and_failed_reloads(tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "vol", {"keyring.json": keyring_json(A)})
    m = Metrics()
    w = KeyringWatcher(tmp_path / "vol", metrics=m)
    first = parse_keyring(keyring_json(A))
    assert m.fingerprint == first.fingerprint
    vol.update({"keyring.json": b'{"keys":[]}'})
    for _ in range(2):  # the same invalid snapshot counts once
        with pytest.raises(KeyringError):
            w.reload()
    assert m.reload_failures == 1
    assert m.fingerprint == first.fingerprint
    vol.update({"keyring.json": keyring_json(B, A)})
    assert w.reload()
    assert m.fingerprint == parse_keyring(keyring_json(B, A)).fingerprint
    assert f'mrtr_consumer_keyring_info{{fingerprint="{m.fingerprint}"}} 1\n' in m.exposition()
    assert "mrtr_consumer_reload_failures_total 1\n" in m.exposition()


def test_watcher_counts_an_unreadable_snapshot_once(tmp_path: Path) -> None:
    """A snapshot that stays unreadable for one reason is one failure, not one per poll, as one that
    stays invalid is (Go, TypeScript and Rust count alike); another reason counts again, and so does
    the same one after a readable snapshot."""
    d = tmp_path / "vol"
    d.mkdir()
    f = d / "keyring.json"
    f.write_bytes(keyring_json(A))
    m = Metrics()
    seen: list[Exception] = []
    w = KeyringWatcher(d, metrics=m, on_error=seen.append, sleep=lambda _: None)

    def unreadable(make: str) -> None:
        if f.is_symlink() or f.is_file():
            f.unlink()
        elif f.is_dir():
            f.rmdir()
        if make == "dir":
            f.mkdir()  # reading it fails: it is a directory
        else:
            f.symlink_to(f.name)  # reading it fails: a link to itself

    unreadable("dir")
    for _ in range(3):
        with pytest.raises(OSError):
            w.reload()
    assert (m.reload_failures, len(seen)) == (1, 1)
    assert w.last_error is not None
    unreadable("loop")
    with pytest.raises(OSError):
        w.reload()
    assert (m.reload_failures, len(seen)) == (2, 2)
    f.unlink()
    f.write_bytes(keyring_json(A))
    assert not w.reload()
    assert w.last_error is None
    unreadable("dir")
    with pytest.raises(OSError):
        w.reload()
    assert (m.reload_failures, len(seen)) == (3, 3)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeAPIServer]:
    server = FakeAPIServer(tmp_path)
    yield server
    server.close()


def test_reporter_reports_its_state(api: FakeAPIServer, tmp_path: Path) -> None:
    plan = [(500, b"")]
    api.plan = lambda pod: plan.pop(0) if plan else (200, b"{}")
    states: list[str] = []

    class Log(Metrics):
        def ack_state_changed(self, state: str) -> None:
            super().ack_state_changed(state)
            states.append(state)

    m = Log()
    sa = api.service_account(tmp_path / "sa")
    with AckReporter(
        "weather-keyring",
        pod_name="weather-0",
        api_server=api.url,
        service_account_dir=sa,
        on_error=lambda e: None,
        min_backoff=0.01,
        max_backoff=0.05,
        metrics=m,
    ) as r:
        r.report("fp1")
        assert api.wait(lambda: r.acknowledged == "fp1")
        assert api.wait(lambda: states == ["pending", "retrying", "acknowledged"])
    assert 'mrtr_consumer_ack_state{state="acknowledged"} 1\n' in m.exposition()
    assert 'mrtr_consumer_ack_state{state="retrying"} 0\n' in m.exposition()


def test_metrics_refuse_unknown_labels() -> None:
    m = Metrics()
    with pytest.raises(ValueError, match="result 'nope'"):
        m.token_opened("python-sdk", "nope")
    with pytest.raises(ValueError, match="state 'nope'"):
        m.ack_state_changed("nope")
