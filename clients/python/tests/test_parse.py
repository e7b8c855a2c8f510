# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""parse_keyring and parse_token_ttl give the Go library's answer: same keyrings, same fingerprints,
same error text, on Go's own verdicts (fixtures/go_parse.json)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mrtr_keyring import Key, KeyringError, fingerprint, parse_keyring, parse_token_ttl
from mrtr_keyring._keyring import MAX_DOCUMENT_BYTES

from .conftest import FIXTURES

CASES: list[dict[str, Any]] = json.loads((FIXTURES / "go_parse.json").read_text())["cases"]
KEYRING_CASES = [c for c in CASES if c.get("kind") != "token-ttl"]
TTL_CASES = [c for c in CASES if c.get("kind") == "token-ttl"]


def test_fixture_covers_both_verdicts() -> None:
    assert sum(1 for c in KEYRING_CASES if "fingerprint" in c) >= 10
    assert sum(1 for c in KEYRING_CASES if "error" in c) >= 80
    assert len(TTL_CASES) >= 15


@pytest.mark.parametrize("case", KEYRING_CASES, ids=[c["name"] for c in KEYRING_CASES])
def test_parse_matches_go(case: dict[str, Any]) -> None:
    data = base64.b64decode(case["input_b64"])
    if "error" in case:
        with pytest.raises(KeyringError) as info:
            parse_keyring(data)
        assert str(info.value) == case["error"]
        return
    ring = parse_keyring(data)
    assert ring.fingerprint == case["fingerprint"]
    assert list(ring.ids) == case["ids"]
    assert [base64.b64encode(k.secret).decode() for k in ring.keys] == case["secrets_b64"]
    assert ring.token_ttl is None


@pytest.mark.parametrize("case", TTL_CASES, ids=[c["name"] for c in TTL_CASES])
def test_token_ttl_matches_go(case: dict[str, Any]) -> None:
    data = base64.b64decode(case["input_b64"])
    if "error" in case:
        with pytest.raises(KeyringError) as info:
            parse_token_ttl(data)
        assert str(info.value) == case["error"]
    else:
        assert parse_token_ttl(data) == case["ttl_seconds"]


def test_too_big() -> None:
    entry = '{"id":"a","secret":"' + base64.b64encode(b"a" * 32).decode() + '"}'
    doc = ('{"keys":[' + entry + "]}").encode() + b" " * MAX_DOCUMENT_BYTES
    with pytest.raises(
        KeyringError, match=rf"^keyring.json: document is {len(doc)} bytes: at most 1048576 are allowed$"
    ):
        parse_keyring(doc)
    # One byte under the limit parses: the limit is on the document, not on the keys.
    assert parse_keyring(doc[:MAX_DOCUMENT_BYTES]).ids == ("a",)


def test_error_is_value_error_naming_the_entry() -> None:
    good = base64.b64encode(b"g" * 32).decode()
    doc = json.dumps({"keys": [{"id": "a", "secret": good}, {"id": "b", "secret": good[:-4]}]}).encode()
    with pytest.raises(ValueError, match=r'keys\[1\] \(id "b"\)') as info:
        parse_keyring(doc)
    assert isinstance(info.value, KeyringError)
    assert info.value.index == 1
    assert good[:-4] not in str(info.value)


def test_fingerprint_bytes() -> None:
    # The exact bytes hashed: the tag, then per key a 4-byte big-endian length and the id, a 4-byte
    # length and the secret; the first 8 bytes of SHA-256 in lowercase hex.
    import hashlib

    keys = (Key("k1", b"\x01" * 32), Key("old", b"\x02" * 40))
    h = hashlib.sha256(b"mrtr-keyring-fingerprint-v1\x00")
    h.update(b"\x00\x00\x00\x02k1" + b"\x00\x00\x00\x20" + b"\x01" * 32)
    h.update(b"\x00\x00\x00\x03old" + b"\x00\x00\x00\x28" + b"\x02" * 40)
    assert fingerprint(keys) == h.hexdigest()[:16]


def test_key_never_shows_its_secret() -> None:
    secret = b"s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t"
    ring = parse_keyring(json.dumps({"keys": [{"id": "a", "secret": base64.b64encode(secret).decode()}]}).encode())
    for text in (repr(ring), str(ring), repr(ring.keys), repr(ring.keys[0])):
        assert "s3cr3t" not in text
        assert base64.b64encode(secret).decode() not in text
    assert "<redacted 34 bytes>" in repr(ring.keys[0])


def test_keys_compare_by_value() -> None:
    assert Key("a", b"x" * 32) == Key("a", b"x" * 32)
    assert Key("a", b"x" * 32) != Key("a", b"y" * 32)
    assert Key("a", b"x" * 32) != Key("b", b"x" * 32)
