# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The package installs like a library: its wheel, built as pip builds it, goes into a fresh virtual
environment without an index (the runtime needs nothing but the standard library) and imports,
and its metadata states the SDK as a range, not the version the suite pins."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from .conftest import TESTS

PACKAGE = TESTS.parent


def test_the_wheel_installs_into_a_fresh_environment(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # hatchling comes from the test extra: no build environment to download.
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    subprocess.run([*build, str(PACKAGE)], check=True)
    (wheel,) = wheels.glob("mrtr_keyring-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = next(z.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert all(n.startswith(("mrtr_keyring/", "mrtr_keyring-")) for n in names), names
    assert "mrtr_keyring/py.typed" in names
    requires = [line.removeprefix("Requires-Dist: ") for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    assert "mcp<3,>=2.3; extra == 'mcp'" in requires, requires
    assert not any("==" in r.split(";")[0] for r in requires), f"an exact pin in the published metadata: {requires}"

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", str(wheel)], check=True
    )
    out = subprocess.run(
        [
            str(python),
            "-c",
            "import json, mrtr_keyring as m; print(json.dumps({'file': m.__file__, 'has': sorted(m.__all__)}))",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    got = json.loads(out)
    assert got["file"].startswith(str(venv)), got["file"]  # the installed copy, not the source tree
    for name in ("AckReporter", "KeyringWatcher", "parse_keyring"):
        assert name in got["has"]
