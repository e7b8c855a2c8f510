# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""parse_keyring against the Go library itself: thousands of mutated documents (bytes flipped,
inserted, deleted, swapped for JSON's special characters), each parsed by keyring.Parse through
fixtures/goverdicts (go run, once) and by parse_keyring: the same verdict, the same error text."""

from __future__ import annotations

import base64
import json
import random
import shutil
import subprocess
from typing import Any

from mrtr_keyring import KeyringError, parse_keyring

from .conftest import FIXTURES, REPO

N = 20000
SPECIAL = b'{}[]:,"\\ \t\n\r0123456789-+.eEtrufalsn\x00\x1f\x7f\xc3\xa9\xed\xa0\x80\xff/=uU'


def _seeds() -> list[bytes]:
    cases = json.loads((FIXTURES / "go_parse.json").read_text())["cases"]
    return [base64.b64decode(c["input_b64"]) for c in cases if c.get("kind") != "token-ttl"]


def _mutate(rng: random.Random, doc: bytes) -> bytes:
    b = bytearray(doc)
    for _ in range(rng.randint(1, 3)):
        what = rng.randrange(5)
        i = rng.randrange(len(b) + 1)
        if what == 0 and b:  # replace a byte
            b[min(i, len(b) - 1)] = rng.choice(SPECIAL)
        elif what == 1:  # insert one
            b.insert(i, rng.choice(SPECIAL))
        elif what == 2 and b:  # delete one
            del b[min(i, len(b) - 1)]
        elif what == 3:  # insert an escape
            b[i:i] = rng.choice([b"\\u0061", b"\\ud800", b"\\udc00\\ud800", b"\\ud83d\\ude00", b"\\/", b"\\n"])
        else:  # cut
            del b[i:]
    return bytes(b)


def test_same_verdicts_as_go() -> None:
    rng = random.Random(2026)
    seeds = _seeds()
    inputs = [_mutate(rng, rng.choice(seeds)) for _ in range(N)]
    go = shutil.which("go")
    assert go is not None, "this test runs the Go library: it needs Go on PATH"
    doc = {"cases": [{"name": str(i), "input_b64": base64.b64encode(d).decode()} for i, d in enumerate(inputs)]}
    out = subprocess.run(
        [go, "run", "./clients/python/tests/fixtures/goverdicts"],
        cwd=REPO,
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    verdicts: list[dict[str, Any]] = json.loads(out.stdout)["cases"]
    assert len(verdicts) == N
    accepted = 0
    for data, v in zip(inputs, verdicts, strict=True):
        try:
            ring = parse_keyring(data)
        except KeyringError as e:
            assert "error" in v, (data, str(e))
            assert str(e) == v["error"], data
            continue
        assert "error" not in v, (data, v["error"])
        assert ring.fingerprint == v["fingerprint"], data
        assert list(ring.ids) == v["ids"], data
        accepted += 1
    # The mutations keep some documents valid, and break most.
    print(f"\n{N} mutated documents, {accepted} valid: the same verdict and error text as Go for each")
    assert 0 < accepted < N
