# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""Shared paths of the tests."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
# The repository's root: the shared consumer vectors (testdata/consumers/) are read in place.
REPO = TESTS.parents[2]
SHARED_VECTORS = REPO / "testdata" / "consumers"
