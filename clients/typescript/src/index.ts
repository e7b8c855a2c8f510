// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// @mrtr-dev/keyring: an mrtr-operator keyring for TypeScript MCP servers. Read the mounted Secret
// (parseKeyring, KeyringWatcher), acknowledge each keyring loaded (AckReporter), and seal request
// state with it in Snodo's mrtr2 format (SignedCodec), which Go's token.Signed also reads and writes.

export {
  Keyring,
  type Key,
  parseKeyring,
  parseTokenTTL,
  formatTokenTTL,
  validateID,
  isValidID,
  MAX_KEYS,
  MIN_SECRET_BYTES,
  MAX_ID_LENGTH,
  MAX_DOCUMENT_BYTES,
  MAX_TOKEN_TTL_SECONDS,
  KEYRING_FILE,
  TOKEN_TTL_FILE,
} from './keyring.js';
export {
  SignedCodec,
  type SignedOptions,
  type Binding,
  type JSONText,
  type KeyringSource,
  ANONYMOUS,
  InvalidRequestStateError,
  ConfigError,
  InputError,
  DEFAULT_SIGNED_TTL_SECONDS,
  MAX_SIGNED_TOKEN_BYTES,
  SIGNED_FORMAT,
} from './signed.js';
export {
  RequestState,
  type RequestStateOptions,
  type RequestStateContext,
  type AuthInfoLike,
  type FetchHandler,
  type FetchOptions,
  recordParams,
  anonymous,
  principalFromAuthInfo,
} from './mcp.js';
export {
  KeyringWatcher,
  type WatcherOptions,
  loadKeyringFile,
  DEFAULT_DEBOUNCE_MS,
  DEFAULT_RESYNC_MS,
} from './watch.js';
export { AckReporter, type AckConfig, annotationKey, ANNOTATION_PREFIX, FIELD_MANAGER } from './ack.js';
export {
  Metrics,
  type MetricsRecorder,
  type OpenResult,
  type AckState,
  RESULTS,
  ACK_STATES,
  METRICS_CONTENT_TYPE,
  TOKENS_SEALED_TOTAL,
  TOKENS_OPENED_TOTAL,
  KEYRING_INFO,
  RELOAD_FAILURES_TOTAL,
  ACK_STATE,
} from './metrics.js';
