// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// Snodo's signed request state (Snodo.MRTR.State, Elixir), byte for byte what the Go library's
// token.Signed seals and opens, so TypeScript, Go and Elixir replicas sharing a keyring open each
// other's state. The state is signed, not encrypted: a client can read it. All base64 is base64url
// without padding.
//
//   binding = canonical([method, params without top-level "_meta", "requestState", "inputResponses", principal])
//   scope   = b64(HMAC-SHA256(secret, "snodo-mrtr-scope-v1:" + binding))
//   payload = canonical([version, issued, expires, scope, state])     version 1 (mrtr1) or 2 (mrtr2)
//   mrtr1   = "mrtr1." + b64(payload) + "." + b64(HMAC(secret, "snodo-mrtr-token-v1:" + b64(payload)))
//   mrtr2   = "mrtr2." + kid + "." + b64(payload) + "." + b64(HMAC(secret, "snodo-mrtr-token-v2:" + kid + "." + b64(payload)))
//
// With a keyring the first key seals and its id is the kid (mrtr2); with one secret there is no id
// (mrtr1). Open verifies the MAC first (with the key the kid names, or any key for mrtr1), then the
// payload and times, and only then canonicalizes the request's params: a forged token costs two
// HMACs and no canonicalization.

import { createHmac, timingSafeEqual } from 'node:crypto';

import { JSONSyntaxError, Reader, canonical, canonicalFirstWins, canonicalParams, quote } from './canonical.js';
import { Keyring, MAX_TOKEN_TTL_SECONDS, MIN_SECRET_BYTES, isValidID } from './keyring.js';
import type { MetricsRecorder, OpenResult } from './metrics.js';

/** Snodo's limits. */
export const DEFAULT_SIGNED_TTL_SECONDS = 300;
export const MAX_SIGNED_TOKEN_BYTES = 16384;

const MAC_LEN = 43; // base64url without padding of a SHA-256 MAC
const TAG_SCOPE = 'snodo-mrtr-scope-v1:';
const TAG_V1 = 'snodo-mrtr-token-v1:';
const TAG_V2 = 'snodo-mrtr-token-v2:';
const UNSALIENT_PARAMS = ['_meta', 'requestState', 'inputResponses'] as const;

/** JSON text, as a string or as UTF-8 bytes. */
export type JSONText = string | Uint8Array;

/** What a token is bound to: a token opens only with an equal binding. */
export interface Binding {
  /** The JSON-RPC method, e.g. "tools/call". */
  method: string;
  /**
   * The request's params object as received (JSON text), or undefined for a request without params
   * (bound as {}). Its top-level "_meta", "requestState" and "inputResponses" are not bound;
   * everything else is, as JSON values (member order and whitespace do not matter, types do).
   */
  params?: JSONText | undefined;
  /** The authenticated caller as JSON text, or ANONYMOUS ("null") for a request that has none. */
  principal: JSONText;
}

/** The principal of a request that deliberately has none. */
export const ANONYMOUS = 'null';

/** The one error every failed open throws: oversize, malformed, tampered, unknown key, another request, expired. */
export class InvalidRequestStateError extends Error {
  constructor() {
    super('invalid or expired request state');
    this.name = 'InvalidRequestStateError';
  }
}

/** A mistake of the server or its configuration, never a property of an untrusted token. */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`token: ${field}: ${reason}`);
    this.name = 'ConfigError';
  }
}

/**
 * Request params that cannot be bound (a repeated name, a lone surrogate escape, a number out of
 * range, an integer of more than 64 digits, nesting deeper than 1000): the client's mistake. Answer
 * it as invalid params with a fixed message; reason quotes the client's input and is for logs.
 */
export class InputError extends Error {
  constructor(readonly reason: string) {
    super(`token: Binding.Params: ${reason}`);
    this.name = 'InputError';
  }
}

/** Where a codec reads its keys on every call: a watcher, or a fixed keyring. */
export interface KeyringSource {
  keyring(): Keyring | undefined;
}

export interface SignedOptions {
  /** Lifetime of sealed tokens in whole seconds, 1 to 900; default 300. On open it also caps tokens sealed longer. */
  ttlSeconds?: number;
  /** The clock in milliseconds since 1970, for tests; default Date.now. Only whole seconds are used. */
  now?: () => number;
  /** Counts every seal and every open by its result (docs/consumers.md, "Metrics"). */
  metrics?: MetricsRecorder;
}

/** The format's name in the metrics' format label, as kubectl mrtr inspect names it. */
export const SIGNED_FORMAT = 'Signed';

interface SigningKey {
  id: string; // "" for the secret of withSecret
  secret: Buffer;
}

interface KeySet {
  ring: Keyring | undefined;
  keys: SigningKey[];
}

function mac(key: SigningKey, ...parts: string[]): string {
  const h = createHmac('sha256', key.secret);
  for (const p of parts) {
    h.update(p, 'latin1'); // every part is ASCII but the binding, which scope() passes as UTF-8
  }
  return h.digest('base64url');
}

function scopeOf(key: SigningKey, binding: string): string {
  return createHmac('sha256', key.secret).update(TAG_SCOPE, 'latin1').update(binding, 'utf8').digest('base64url');
}

function equalText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The codec of Snodo's signed tokens over a keyring that may change between calls: it seals mrtr2
 * tokens with the keyring's first key, opens mrtr2 tokens with the key their kid names and mrtr1
 * tokens with any key. Seal and open are synchronous.
 */
export class SignedCodec {
  private readonly src: KeyringSource | undefined;
  private fixed: KeySet | undefined;
  private cache: KeySet | undefined;
  readonly ttlSeconds: number;
  private readonly now: () => number;
  private readonly metrics: MetricsRecorder | undefined;

  /** A codec reading its keyring from src (a watcher) on every call, or a fixed keyring. */
  constructor(src: KeyringSource | Keyring, opts: SignedOptions = {}) {
    const ttl = opts.ttlSeconds ?? DEFAULT_SIGNED_TTL_SECONDS;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TOKEN_TTL_SECONDS) {
      throw new ConfigError('ttlSeconds', `is ${ttl}: it must be whole seconds from 1 to ${MAX_TOKEN_TTL_SECONDS}`);
    }
    this.ttlSeconds = ttl;
    this.now = opts.now ?? Date.now;
    this.metrics = opts.metrics;
    if (src instanceof Keyring) {
      const ring = src;
      this.src = { keyring: () => ring };
    } else {
      this.src = src;
    }
    if (this.src.keyring() === undefined) {
      throw new ConfigError('src', 'has no keyring');
    }
  }

  /**
   * A codec with one secret and no key id (Snodo's :secret option): it seals mrtr1 tokens, opens
   * mrtr1 tokens, and opens mrtr2 tokens of any well-formed kid that the secret verifies.
   */
  static withSecret(secret: Uint8Array, opts: SignedOptions = {}): SignedCodec {
    if (secret.length < MIN_SECRET_BYTES) {
      throw new ConfigError('secret', `is ${secret.length} bytes: at least ${MIN_SECRET_BYTES} are required`);
    }
    const placeholder = new Keyring([{ id: 'secret', secret }]);
    const c = new SignedCodec(placeholder, opts);
    c.fixed = { ring: undefined, keys: [{ id: '', secret: Buffer.from(secret) }] };
    return c;
  }

  toString(): string {
    return `SignedCodec{mode: ${this.fixed !== undefined ? 'secret' : 'keyring'}, ttl: ${this.ttlSeconds}s}`;
  }

  private keyset(): KeySet | undefined {
    if (this.fixed !== undefined) {
      return this.fixed;
    }
    const r = this.src?.keyring();
    if (r === undefined) {
      return undefined;
    }
    const c = this.cache;
    if (c?.ring !== undefined && (c.ring === r || (c.ring.fingerprint === r.fingerprint && c.ring.maxTokenTTL === r.maxTokenTTL))) {
      return c;
    }
    this.cache = { ring: r, keys: r.keys.map((k) => ({ id: k.id, secret: Buffer.from(k.secret) })) };
    return this.cache;
  }

  private unixNow(): number {
    const t = Math.floor(this.now() / 1000);
    if (!Number.isSafeInteger(t) || t < 0) {
      throw new ConfigError('now', 'returned a time before 1970 or beyond what a token can carry');
    }
    return t;
  }

  /**
   * Returns a token carrying state (JSON text) bound to b. Params that cannot be bound are an
   * InputError, the client's mistake; every other error is a ConfigError.
   */
  seal(b: Binding, state: JSONText): string {
    const now = this.unixNow();
    const ks = this.keyset();
    if (ks === undefined) {
      throw new ConfigError('src', 'has no keyring');
    }
    const max = ks.ring?.maxTokenTTL ?? 0;
    if (max > 0 && this.ttlSeconds > max) {
      throw new ConfigError(
        'ttlSeconds',
        `is ${this.ttlSeconds}s, longer than the ${max}s the keyring declares (its token-ttl, the MRTRKeyring's tokenTTL): ` +
          'tokens would outlive the rotation\'s wait; lower it, or raise spec.tokenTTL',
      );
    }
    const key = ks.keys[0] as SigningKey;
    const principal = canonicalPrincipal(b);
    const binding = bindingOf(b, principal);
    const scope = scopeOf(key, binding);
    let data: string;
    try {
      data = canonical(state);
    } catch (e) {
      throw new ConfigError('state', e instanceof Error ? e.message : String(e));
    }
    const v2 = key.id !== '';
    const payload = `[${v2 ? 2 : 1},${now},${now + this.ttlSeconds},"${scope}",${data}]`;
    const enc = Buffer.from(payload, 'utf8').toString('base64url');
    const prefix = v2 ? `mrtr2.${key.id}.` : 'mrtr1.';
    const size = prefix.length + enc.length + 1 + MAC_LEN;
    if (size > MAX_SIGNED_TOKEN_BYTES) {
      throw new ConfigError('state', `the token would be ${size} bytes, over the ${MAX_SIGNED_TOKEN_BYTES}-byte limit`);
    }
    const m = v2 ? mac(key, TAG_V2, key.id, '.', enc) : mac(key, TAG_V1, enc);
    this.metrics?.tokenSealed(SIGNED_FORMAT);
    return prefix + enc + '.' + m;
  }

  /**
   * Returns the state of a token sealed for an equal binding, as canonical JSON text (the first of
   * repeated names kept, as Snodo returns it). Every failure of the token is an
   * InvalidRequestStateError, and so are params that cannot be bound. A binding without method or
   * principal is a ConfigError.
   */
  open(b: Binding, token: string): string {
    const now = this.unixNow();
    const principal = canonicalPrincipal(b);
    // The size first, as Go's openBound: an oversized token is too_large whether or not a
    // keyring is loaded, never an unknown_key that would sound the rotation alarm.
    if (overBytes(token, MAX_SIGNED_TOKEN_BYTES)) {
      throw this.reject('too_large');
    }
    const ks = this.keyset();
    if (ks === undefined) {
      throw this.reject('unknown_key');
    }
    if (!/^[\x21-\x7e]*$/.test(token)) {
      throw this.reject('malformed');
    }
    const p = split(token);
    if (p === undefined) {
      throw this.reject('malformed');
    }
    // Every candidate key is tried, so the time taken does not tell which one matched.
    let signer: SigningKey | undefined;
    let tried = 0;
    for (const k of ks.keys) {
      if (p.version === 2 && k.id !== '' && k.id !== p.kid) {
        continue;
      }
      tried++;
      const want = p.version === 2 ? mac(k, TAG_V2, p.signed) : mac(k, TAG_V1, p.signed);
      if (equalText(want, p.mac) && signer === undefined) {
        signer = k;
      }
    }
    if (signer === undefined) {
      throw this.reject(tried === 0 ? 'unknown_key' : 'bad_mac');
    }
    const payload = decodeB64(p.enc);
    if (payload === undefined) {
      throw this.reject('malformed');
    }
    const r = readPayload(payload, p.version);
    if (r === undefined) {
      throw this.reject('malformed');
    }
    const { issued, expires } = r;
    const n = BigInt(now);
    if (issued < 0n || expires <= issued) {
      throw this.reject('malformed');
    }
    if (issued > n || expires <= n || expires - issued > BigInt(this.ttlSeconds)) {
      throw this.reject('expired');
    }
    // Only now, with the token authentic and current, is the request's binding worth its cost.
    let binding: string;
    try {
      binding = bindingOf(b, principal);
    } catch (e) {
      if (e instanceof InputError) {
        throw this.reject('binding_mismatch');
      }
      throw e;
    }
    if (!equalText(scopeOf(signer, binding), r.scope)) {
      throw this.reject('binding_mismatch');
    }
    let state: string;
    try {
      state = canonicalFirstWins(r.data);
    } catch {
      throw this.reject('malformed');
    }
    this.metrics?.tokenOpened(SIGNED_FORMAT, 'ok');
    return state;
  }

  /** Counts a rejected open under its result and returns the error to throw. */
  private reject(result: OpenResult): InvalidRequestStateError {
    this.metrics?.tokenOpened(SIGNED_FORMAT, result);
    return new InvalidRequestStateError();
  }
}

/** Checks the method and the shape of the params, and returns the canonical principal. */
function canonicalPrincipal(b: Binding): string {
  if (b.params !== undefined && !isParamsObject(b.params)) {
    throw new ConfigError(
      'Binding.Params',
      'is not a JSON object: bind the request\'s params object, or nothing for a request without params',
    );
  }
  if (typeof b.method !== 'string' || b.method === '') {
    throw new ConfigError('Binding.Method', 'is empty');
  }
  if (!b.method.isWellFormed()) {
    throw new ConfigError('Binding.Method', 'is not valid UTF-8');
  }
  if (b.principal.length === 0) {
    throw new ConfigError(
      'Binding.Principal',
      'is empty: bind the authenticated caller, or ANONYMOUS for a request that has none',
    );
  }
  try {
    return canonical(b.principal);
  } catch (e) {
    throw new ConfigError('Binding.Principal', e instanceof Error ? e.message : String(e));
  }
}

/** Empty params are no params; otherwise the first byte after whitespace must open an object. */
function isParamsObject(params: JSONText): boolean {
  if (params.length === 0) {
    return true;
  }
  let i = 0;
  const at = (k: number): number | undefined => (typeof params === 'string' ? params.charCodeAt(k) : params[k]);
  for (let c = at(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = at(++i)) {
    // whitespace
  }
  return at(i) === 0x7b;
}

/** canonical([method, salient params, principal]); bad params are an InputError. */
function bindingOf(b: Binding, principal: string): string {
  let params = '{}';
  if (b.params !== undefined && b.params.length > 0) {
    try {
      params = canonicalParams(b.params, UNSALIENT_PARAMS);
    } catch (e) {
      throw new InputError(e instanceof JSONSyntaxError ? e.message : String(e));
    }
  }
  return `[${quote(b.method)},${params},${principal}]`;
}

interface Parts {
  version: 1 | 2;
  kid: string;
  signed: string; // what the MAC covers: the payload (mrtr1), or kid "." payload (mrtr2)
  enc: string;
  mac: string;
}

/** Splits a token, as Snodo does, into two (mrtr1) or three (mrtr2) dot-separated parts after the prefix. */
function split(t: string): Parts | undefined {
  let version: 1 | 2;
  if (t.startsWith('mrtr1.')) {
    version = 1;
  } else if (t.startsWith('mrtr2.')) {
    version = 2;
  } else {
    return undefined;
  }
  let signed = t.slice(6);
  const i = signed.lastIndexOf('.');
  if (i < 0) {
    return undefined;
  }
  const m = signed.slice(i + 1);
  signed = signed.slice(0, i);
  let enc = signed;
  let kid = '';
  if (version === 2) {
    const j = signed.indexOf('.');
    if (j < 0 || !isValidID(signed.slice(0, j))) {
      return undefined;
    }
    kid = signed.slice(0, j);
    enc = signed.slice(j + 1);
  }
  if (enc.includes('.') || m.length !== MAC_LEN) {
    return undefined;
  }
  return { version, kid, signed, enc, mac: m };
}

/**
 * Decodes base64url as Elixir's Base.url_decode64(src, padding: false) does: the URL alphabet,
 * optional but correct padding, unused low bits of the last character ignored, no CR or LF.
 */
function decodeB64(src: string): Buffer | undefined {
  let s = src;
  if (s.length % 4 === 0) {
    if (s.endsWith('=')) {
      s = s.slice(0, -1);
    }
    if (s.length % 4 === 3 && s.endsWith('=')) {
      s = s.slice(0, -1);
    }
  }
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) {
    return undefined;
  }
  return Buffer.from(s, 'base64url');
}

const utf8Fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Reads a verified payload [version, issued, expires, scope, state]; the state as written. */
function readPayload(
  payload: Uint8Array,
  version: 1 | 2,
): { issued: bigint; expires: bigint; scope: string; data: string } | undefined {
  let text: string;
  try {
    text = utf8Fatal.decode(payload);
  } catch {
    return undefined;
  }
  const d = new Reader(text);
  try {
    if (!d.consume('[')) {
      return undefined;
    }
    if (d.integer() !== String(version) || !d.consume(',')) {
      return undefined;
    }
    const issued = int64(d.integer());
    if (issued === undefined || !d.consume(',')) {
      return undefined;
    }
    const expires = int64(d.integer());
    if (expires === undefined || !d.consume(',')) {
      return undefined;
    }
    const scope = d.string();
    if (!d.consume(',')) {
      return undefined;
    }
    d.skipSpace();
    // The MAC verified, so a key holder wrote the rest: one JSON value before the closing bracket,
    // which open checks when it makes its canonical form.
    const data = text.slice(d.pos).replace(/[ \t\r\n]+$/, '');
    if (data.length < 2 || !data.endsWith(']')) {
      return undefined;
    }
    return { issued, expires, scope, data: data.slice(0, -1) };
  } catch {
    return undefined;
  }
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

function int64(lit: string): bigint | undefined {
  const n = BigInt(lit);
  return n > INT64_MAX || n < INT64_MIN ? undefined : n;
}

/**
 * Whether token is longer than max bytes in UTF-8, as Go's len counts it: its UTF-16 length
 * undercounts a token of non-ASCII characters, which Go refuses as too_large before it reads it
 * (and this would count malformed). Each UTF-16 unit is at most 3 bytes, so the byte length is
 * computed only for a token that could be over.
 */
function overBytes(token: string, max: number): boolean {
  return token.length > max || (token.length * 3 > max && Buffer.byteLength(token, 'utf8') > max);
}
