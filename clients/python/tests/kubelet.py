# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""A Secret volume as the kubelet's atomic writer lays it out and updates it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path


def keyring_json(*keys: tuple[str, bytes]) -> bytes:
    """keyring.json for (id, secret) pairs, as the operator writes it."""
    doc = {"keys": [{"id": i, "secret": base64.b64encode(s).decode()} for i, s in keys]}
    return json.dumps(doc, separators=(",", ":")).encode()


class SecretVolume:
    """<dir>/<file> -> ..data/<file>, ..data -> ..<timestamp>; update() writes a new timestamped
    directory, swaps ..data over to it with one rename, then removes the old one."""

    def __init__(self, directory: Path, files: dict[str, bytes]) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.update(files)

    def update(self, files: dict[str, bytes]) -> None:
        data = self.dir / "..data"
        old = os.readlink(data) if data.is_symlink() else None
        new = tempfile.mkdtemp(prefix="..2026_", dir=self.dir)
        for name, content in files.items():
            Path(new, name).write_bytes(content)
        tmp = self.dir / "..data_tmp"
        os.symlink(os.path.basename(new), tmp)
        os.rename(tmp, data)
        for name in files:
            link = self.dir / name
            if not link.is_symlink():
                os.symlink(os.path.join("..data", name), link)
        for link in self.dir.iterdir():
            if not link.name.startswith("..") and link.name not in files:
                link.unlink()
        if old is not None:
            shutil.rmtree(self.dir / old)
