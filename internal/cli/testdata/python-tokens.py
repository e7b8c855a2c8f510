# Copyright 2026 The mrtr-operator Authors. Licensed under the Apache License, Version 2.0.
#
# Writes python-tokens.json: a token sealed by the real python-sdk (mcp from PyPI) with each of the
# test keys of inspect_test.go (key-a, key-b: testSecret), for TestInspectPythonToken. Regenerate:
#
#   /tmp/venv/bin/python internal/cli/testdata/python-tokens.py > internal/cli/testdata/python-tokens.json
import hashlib
import json
from importlib.metadata import version

from mcp.server.request_state import AESGCMRequestStateCodec


def test_secret(key_id: str, fill: int) -> bytes:
    """testSecret of inspect_test.go."""
    return hashlib.sha256(bytes([fill]) + b"key:" + key_id[0].encode() + key_id[-1].encode()).digest() + key_id.encode()


tokens = {}
for key_id, fill in (("key-a", 1), ("key-b", 2)):
    tokens[key_id] = AESGCMRequestStateCodec([test_secret(key_id, fill)]).seal(b'{"marker":"STATE-MARKER-7f3a"}')
print(json.dumps({"mcp": version("mcp"), "tokens": tokens}, indent=2))
