# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Writes v1.token, a request-state token of the python-sdk (PyPI mcp 2.3.0,
# mcp.server.request_state), for the inspect tests: they read it as the SDK's
# format, never as a Sealed token of key id "v1". The tests never run this.
#
#   python3 -m venv /tmp/py && /tmp/py/bin/pip install mcp==2.3.0
#   /tmp/py/bin/python gen.py
import hashlib

from mcp.server.request_state import AESGCMRequestStateCodec, _derive_key, _KID_INFO

SECRET = b"python-sdk-test-key-not-a-secret"  # 32 bytes, used by nothing else
codec = AESGCMRequestStateCodec([SECRET])
with open("v1.token", "w") as f:
    f.write(codec.seal(b'{"marker":"STATE-MARKER-7f3a"}') + "\n")
with open("v1.kid", "w") as f:
    f.write(hashlib.sha256(_KID_INFO + _derive_key(SECRET)).digest()[:4].hex() + "\n")
