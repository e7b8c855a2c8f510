# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The consumer contract's shared vectors (testdata/consumers/, made by the Go library) and its
conformance check (test/conformance), read and run in place from the repository.

$MRTR_CONSUMER_VECTORS names another vectors directory. The tests exist only where the files do.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.request_state import AESGCMRequestStateCodec

import mrtr_keyring.mcp as mcp_codec
from mrtr_keyring import KeyringError, KeyringWatcher, Metrics, parse_keyring, parse_token_ttl
from mrtr_keyring.mcp import InvalidRequestState, KeyringCodec

from .conftest import REPO, SHARED_VECTORS
from .metered import Call, make_server, opened, round_trip, run

VECTORS = Path(os.environ.get("MRTR_CONSUMER_VECTORS") or SHARED_VECTORS)


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((VECTORS / name).read_text())
    return doc


def _bytes(v: dict[str, Any]) -> bytes:
    data = base64.b64decode(v.get("data") or "")
    pad = v.get("padTo")
    return data + b" " * (pad - len(data)) if pad else data


if (VECTORS / "keyrings.json").exists():
    KEYRINGS = _load("keyrings.json")

    @pytest.mark.parametrize("v", KEYRINGS["valid"], ids=[v["name"] for v in KEYRINGS["valid"]])
    def test_valid_keyrings(v: dict[str, Any]) -> None:
        ring = parse_keyring(_bytes(v))
        assert ring.fingerprint == v["fingerprint"]
        assert [(k.id, base64.b64encode(k.secret).decode(), k.python_kid) for k in ring.keys] == [
            (k["id"], k["secret"], k["pythonKid"]) for k in v["keys"]
        ]

    @pytest.mark.parametrize("v", KEYRINGS["invalid"], ids=[v["name"] for v in KEYRINGS["invalid"]])
    def test_invalid_keyrings(v: dict[str, Any]) -> None:
        with pytest.raises(KeyringError) as info:
            parse_keyring(_bytes(v))
        # Go's very message, which names keys[entry] when the vector sets one.
        assert str(info.value) == v["error"]
        if v.get("entry") is not None:
            assert f"keys[{v['entry']}]" in str(info.value)


if (VECTORS / "token-ttl.json").exists():
    TTLS = _load("token-ttl.json")

    @pytest.mark.parametrize("v", TTLS["valid"], ids=[v["name"] for v in TTLS["valid"]])
    def test_valid_token_ttl(v: dict[str, Any]) -> None:
        assert parse_token_ttl(_bytes(v)) == v["seconds"]

    @pytest.mark.parametrize("v", TTLS["invalid"], ids=[v["name"] for v in TTLS["invalid"]])
    def test_invalid_token_ttl(v: dict[str, Any]) -> None:
        with pytest.raises(KeyringError) as info:
            parse_token_ttl(_bytes(v))
        assert str(info.value) == v["error"]


def _apply(root: Path, op: dict[str, Any]) -> None:
    path = root / op["path"]
    match op["op"]:
        case "mkdir":
            path.mkdir()
        case "write":
            path.write_bytes(_bytes(op))
        case "symlink":
            os.symlink(op["target"], path)
        case "rename":
            os.rename(path, root / op["to"])
        case "remove":
            path.unlink()
        case "removeAll":
            shutil.rmtree(path)
        case other:
            raise AssertionError(f"unknown op {other}")


if (VECTORS / "swaps.json").exists():
    SWAPS = _load("swaps.json")["sequences"]

    @pytest.mark.parametrize("seq", SWAPS, ids=[s["name"] for s in SWAPS])
    def test_swap_sequences(seq: dict[str, Any], tmp_path: Path) -> None:
        root = tmp_path / "vol"
        root.mkdir()
        for op in seq["setup"]:
            _apply(root, op)

        def same_error(err: Exception, want: str | None) -> None:
            if want is not None and isinstance(err, KeyringError):
                assert str(err).replace(str(root), "$MRTR_KEYRING_DIR") == want

        start = seq["start"]
        if start.get("refused"):
            with pytest.raises((KeyringError, OSError)) as info:
                KeyringWatcher(root)
            same_error(info.value, start.get("error"))
            return
        w = KeyringWatcher(root, on_error=lambda e: None)

        def check(expect: dict[str, Any], where: str) -> None:
            ring = w.keyring
            assert ring.fingerprint == expect["fingerprint"], where
            assert list(ring.ids) == expect["keys"], where
            assert ring.token_ttl == expect["tokenTTLSeconds"], where

        check(start, "start")
        for i, step in enumerate(seq["steps"]):
            _apply(root, step)
            before = w.keyring.fingerprint
            try:
                w.reload()
                rejected = False
            except (KeyringError, OSError) as e:
                rejected = True
                same_error(e, step["expect"].get("error"))
            where = f"step {i} ({step['op']} {step['path']})"
            assert rejected == step["expect"]["rejected"], where
            check(step["expect"], where)
            assert (w.keyring.fingerprint != before) == step["expect"]["acknowledge"], where


if (VECTORS / "rejections.json").exists():
    REJECTIONS = [c for c in _load("rejections.json")["cases"] if c["format"] == "python-sdk"]

    def test_rejections_cover_python_sdk() -> None:
        results = {c["result"] for c in REJECTIONS}
        assert {"ok", "expired", "unknown_key", "bad_mac", "malformed"} <= results

    @pytest.mark.parametrize("case", REJECTIONS, ids=[c["name"] for c in REJECTIONS])
    def test_rejections(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
        """Each python-sdk case of rejections.json, unsealed by the codec under the case's keyring
        at its clock, counts the case's result once: the kid decides unknown_key against bad_mac,
        the layout malformed, the claims envelope's times expired. The codec refuses what the SDK's
        codec refuses (the layout, the kid, the tag); an authentic token it returns, counting what
        the SDK's boundary will find of its envelope."""
        m = Metrics()
        codec = KeyringCodec(parse_keyring(_bytes(case["keyring"])), metrics=m)
        now = float(case["nowMs"]) / 1000

        class Clock:
            @staticmethod
            def time() -> float:
                return now

        monkeypatch.setattr(mcp_codec, "time", Clock)
        if case["check"] not in ("format", "key id", "auth tag"):
            codec.unseal(case["token"])
        else:
            with pytest.raises(InvalidRequestState):
                codec.unseal(case["token"])
        assert opened(m) == {case["result"]: 1}

    REFUSED = [c for c in REJECTIONS if c["check"] in ("format", "key id", "auth tag")]

    @pytest.mark.parametrize("case", REFUSED, ids=[c["name"] for c in REFUSED])
    def test_rejections_do_not_read_the_sdks_error_text(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
        """The result of a token the SDK's codec refuses comes from the token's layout and kid,
        never from the SDK's words: a patch that rewords its errors changes no count."""
        real = AESGCMRequestStateCodec.unseal

        def reworded(self: AESGCMRequestStateCodec, token: str) -> bytes:
            try:
                return real(self, token)
            except InvalidRequestState:
                raise InvalidRequestState("reworded by another patch") from None

        monkeypatch.setattr(AESGCMRequestStateCodec, "unseal", reworded)
        m = Metrics()
        codec = KeyringCodec(parse_keyring(_bytes(case["keyring"])), metrics=m)
        with pytest.raises(InvalidRequestState):
            codec.unseal(case["token"])
        assert opened(m) == {case["result"]: 1}


if (VECTORS / "bindings.json").exists():
    BINDINGS = _load("bindings.json")

    def _call(request: dict[str, Any]) -> Call:
        # The SDK's binding of a tools/call: the tool, its arguments, and bind_principal's answer
        # (None for an anonymous caller, the principal's JSON text otherwise).
        p = request["principal"]
        return Call(
            tool=request["params"]["name"],
            arguments=request["params"]["arguments"],
            principal=None if p is None else json.dumps(p, separators=(",", ":")),
        )

    @pytest.mark.parametrize("case", BINDINGS["cases"], ids=[c["name"] for c in BINDINGS["cases"]])
    def test_bindings(case: dict[str, Any]) -> None:
        # Through the SDK's own boundary (an in-process MCPServer and its Client, metered with
        # meter_boundary), sealed and opened now rather than at the file's clock: python-sdk's tokens
        # carry a fresh nonce, so only the result is shared.
        assert case["seal"]["method"] == case["open"]["method"] == "tools/call"
        ring = parse_keyring(_bytes(BINDINGS["keyring"]))
        m = Metrics()

        async def go() -> bool:
            async with Client(make_server(ring, m, audience=BINDINGS["server"])) as c:
                return await round_trip(c, _call(case["seal"]), _call(case["open"]))

        want = case["results"]["python-sdk"]
        assert run(go()) == (want == "ok")
        assert opened(m) == {want: 1}


CONFORMANCE = REPO / "test" / "conformance" / "main.go"
CONSUMER = REPO / "test" / "conformance" / "consumers" / "python" / "consumer.py"
if CONFORMANCE.exists() and CONSUMER.exists():

    @pytest.mark.parametrize("flags", [[], ["-lost-answer", "-metrics"]], ids=["default", "lost-answer-metrics"])
    def test_conformance_check(flags: list[str]) -> None:
        """The Go conformance check passes with this package's consumer (test/conformance/consumers/python)."""
        go = shutil.which("go")
        assert go is not None, "the conformance check needs Go on PATH"
        out = subprocess.run(
            [go, "run", "./test/conformance", *flags, "--", sys.executable, str(CONSUMER)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert " 0 failed" in out.stdout
        if "-metrics" in flags:
            assert "PASS reports-metrics" in out.stdout, out.stdout
