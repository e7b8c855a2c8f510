# Copyright 2026 The mrtr-operator Authors. Licensed under the Apache License, Version 2.0.
#
# Writes pythonkid.json: for each test secret, the kid that the real python-sdk (mcp, from PyPI)
# puts into the tokens it seals, read back out of a token it sealed. TestPythonKid checks
# Key.PythonKid against this file. Regenerate with:
#
#   python3 -m venv /tmp/venv && /tmp/venv/bin/pip install mcp==2.3.0
#   /tmp/venv/bin/python pkg/keyring/testdata/pythonkid.py > pkg/keyring/testdata/pythonkid.json
import base64
import hashlib
import json
from importlib.metadata import version

from mcp.server.request_state import AESGCMRequestStateCodec


def secret(i: int, n: int) -> bytes:
    out = b""
    block = 0
    while len(out) < n:
        out += hashlib.sha256(f"pythonkid-{i}-{block}".encode()).digest()
        block += 1
    return out[:n]


cases = []
for i, n in enumerate([32, 32, 33, 48, 64, 100, 1024]):
    s = secret(i, n)
    if i == 1:
        s = bytes(32)  # all zero bytes
    token = AESGCMRequestStateCodec([s]).seal(b"{}")
    assert token.startswith("v1.")
    body = token[3:]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    cases.append({"secret": base64.b64encode(s).decode(), "pythonKid": raw[:4].hex(), "token": token})

print(json.dumps({"mcp": version("mcp"), "cases": cases}, indent=2))
