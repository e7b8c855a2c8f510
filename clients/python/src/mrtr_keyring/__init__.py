# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""Consume an mrtr-operator keyring from a Python MCP server.

- parse_keyring reads keyring.json exactly as the Go library does; Keyring.fingerprint is what a pod
  acknowledges.
- KeyringWatcher follows the mounted Secret directory through the kubelet's ..data swaps.
- AckReporter acknowledges each keyring the process loads on its own Pod, as pkg/ack does.
- mrtr_keyring.mcp (extra "mcp") seals the SDK's request state with the current keyring.
- Metrics counts what the watcher, the reporter and the codec do, under the contract's metric
  names, and writes them in the Prometheus text format (no dependency).
"""

from ._ack import FIELD_MANAGER, AckReporter, annotation_key
from ._keyring import (
    MAX_DOCUMENT_BYTES,
    MAX_ID_LENGTH,
    MAX_KEYS,
    MAX_TOKEN_TTL_SECONDS,
    MIN_SECRET_BYTES,
    SECRET_DATA_KEY,
    TOKEN_TTL_DATA_KEY,
    Key,
    Keyring,
    KeyringError,
    fingerprint,
    parse_keyring,
    parse_token_ttl,
    validate_id,
)
from ._metrics import CONTENT_TYPE, Metrics
from ._watch import KeyringWatcher, load_dir

__all__ = [
    "CONTENT_TYPE",
    "FIELD_MANAGER",
    "MAX_DOCUMENT_BYTES",
    "MAX_ID_LENGTH",
    "MAX_KEYS",
    "MAX_TOKEN_TTL_SECONDS",
    "MIN_SECRET_BYTES",
    "SECRET_DATA_KEY",
    "TOKEN_TTL_DATA_KEY",
    "AckReporter",
    "Key",
    "Keyring",
    "KeyringError",
    "KeyringWatcher",
    "Metrics",
    "annotation_key",
    "fingerprint",
    "load_dir",
    "parse_keyring",
    "parse_token_ttl",
    "validate_id",
]
