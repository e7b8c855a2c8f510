// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// keyring.json and token-ttl, read exactly as the Go library's keyring.Parse and ParseTokenTTL
// read them: the same documents accepted, the same refused, with the same messages. Go walks the
// token stream of encoding/json's Decoder; GoTokens below reproduces that stream (and the byte
// offsets of its syntax errors) so that every refusal reads as Go's.

import { createHash, timingSafeEqual } from 'node:crypto';

/** Limits shared with the operator and the Go library. */
export const MAX_KEYS = 8;
export const MIN_SECRET_BYTES = 32;
export const MAX_ID_LENGTH = 32;
export const MAX_DOCUMENT_BYTES = 1 << 20;
/** The longest token-ttl, in seconds: MRTR's and the MRTRKeyring's ceiling. */
export const MAX_TOKEN_TTL_SECONDS = 900;
/** The Secret's data keys, and the file names of its mounted volume. */
export const KEYRING_FILE = 'keyring.json';
export const TOKEN_TTL_FILE = 'token-ttl';

/** One key of a keyring: a public id and the secret bytes. */
export interface Key {
  readonly id: string;
  readonly secret: Uint8Array;
}

/** A validated keyring: keys in order (keys[0] seals), its fingerprint and declared token lifetime. */
export class Keyring {
  readonly keys: readonly Key[];
  readonly fingerprint: string;
  /** The longest token lifetime in seconds the Secret declares (token-ttl); 0 when it declares none. */
  readonly maxTokenTTL: number;

  /** Validates keys as Go's keyring.New does and keeps copies of them. */
  constructor(keys: readonly Key[], maxTokenTTL = 0) {
    if (keys.length === 0) {
      throw new Error(`keyring: no keys: a keyring needs 1 to ${MAX_KEYS} keys`);
    }
    if (keys.length > MAX_KEYS) {
      throw new Error(`keyring: ${keys.length} keys: at most ${MAX_KEYS} are allowed`);
    }
    if (!Number.isInteger(maxTokenTTL) || maxTokenTTL < 0 || maxTokenTTL > MAX_TOKEN_TTL_SECONDS) {
      throw new Error(`keyring: maxTokenTTL ${maxTokenTTL}: want whole seconds from 0 (none) to ${MAX_TOKEN_TTL_SECONDS}`);
    }
    const seen = new Map<string, number>();
    const own: Key[] = [];
    keys.forEach((k, i) => {
      const idErr = validateID(k.id);
      if (idErr !== undefined) {
        throw new Error(`keyring: key ${i}: ${idErr}`);
      }
      const j = seen.get(k.id);
      if (j !== undefined) {
        throw new Error(`keyring: key ${i} (id ${JSON.stringify(k.id)}): id already used by key ${j}`);
      }
      seen.set(k.id, i);
      if (k.secret.length < MIN_SECRET_BYTES) {
        throw new Error(
          `keyring: key ${i} (id ${JSON.stringify(k.id)}): secret is ${k.secret.length} bytes, at least ${MIN_SECRET_BYTES} are required`,
        );
      }
      own.push(Object.freeze({ id: k.id, secret: Uint8Array.from(k.secret) }));
    });
    this.keys = Object.freeze(own);
    this.fingerprint = fingerprint(own);
    this.maxTokenTTL = maxTokenTTL;
    Object.freeze(this);
  }

  /** The key that seals: the first one. */
  get primary(): Key {
    return this.keys[0] as Key;
  }

  /** The key ids, in order. */
  get ids(): string[] {
    return this.keys.map((k) => k.id);
  }

  /** The key with this id, if any. */
  lookup(id: string): Key | undefined {
    return this.keys.find((k) => k.id === id);
  }

  /** A copy of this keyring declaring seconds (0: none) as the longest token lifetime. */
  withMaxTokenTTL(seconds: number): Keyring {
    return new Keyring(this.keys, seconds);
  }

  /** Whether both hold the same keys in the same order (bytes compared in constant time). */
  equals(o: Keyring): boolean {
    if (this.keys.length !== o.keys.length || this.maxTokenTTL !== o.maxTokenTTL) {
      return false;
    }
    let eq = true;
    this.keys.forEach((k, i) => {
      const m = o.keys[i] as Key;
      eq = k.id === m.id && k.secret.length === m.secret.length && timingSafeEqual(k.secret, m.secret) && eq;
    });
    return eq;
  }

  /** Ids and the fingerprint, never key bytes. */
  toString(): string {
    return `Keyring{ids: [${this.ids.join(' ')}], fingerprint: ${this.fingerprint}}`;
  }

  toJSON(): { ids: string[]; fingerprint: string } {
    return { ids: this.ids, fingerprint: this.fingerprint };
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

/**
 * The fingerprint of Go's Keyring.Fingerprint(): SHA-256 of "mrtr-keyring-fingerprint-v1\0" and,
 * for each key in order, its id and its secret, each prefixed by its length as 4 big-endian bytes;
 * the first 8 bytes of the sum in lowercase hex.
 */
function fingerprint(keys: readonly Key[]): string {
  const h = createHash('sha256');
  h.update('mrtr-keyring-fingerprint-v1\x00');
  const n = Buffer.alloc(4);
  for (const k of keys) {
    const id = Buffer.from(k.id, 'utf8');
    n.writeUInt32BE(id.length);
    h.update(n);
    h.update(id);
    n.writeUInt32BE(k.secret.length);
    h.update(n);
    h.update(k.secret);
  }
  return h.digest('hex').slice(0, 16);
}

const ID = /^[A-Za-z0-9_-]+$/;

/** Go's keyring.ValidateID: the problem with id, undefined if it is valid. Never repeats the id. */
export function validateID(id: string): string | undefined {
  if (id === '') {
    return `id is empty: ids are 1 to ${MAX_ID_LENGTH} characters of A-Za-z0-9_-`;
  }
  const b = Buffer.from(id, 'utf8');
  if (b.length > MAX_ID_LENGTH) {
    return `id is ${b.length} bytes long: at most ${MAX_ID_LENGTH} characters of A-Za-z0-9_- are allowed`;
  }
  for (let i = 0; i < b.length; i++) {
    const c = b[i] as number;
    if (!isIDByte(c)) {
      return `id has a byte outside A-Za-z0-9_- at offset ${i}`;
    }
  }
  return undefined;
}

/** Whether id is a valid key id (validateID without a message). */
export function isValidID(id: string): boolean {
  return id.length > 0 && id.length <= MAX_ID_LENGTH && ID.test(id);
}

function isIDByte(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d;
}

/**
 * Decodes and validates a keyring.json document, {"keys":[{"id":"<id>","secret":"<base64>"},...]},
 * exactly as strictly as Go's keyring.Parse: it refuses unknown fields, repeated fields, null,
 * values of the wrong type, secrets that are not canonical standard base64, data after the object,
 * and any keyring Keyring's constructor refuses. The Error's message is Go's: it names the entry by
 * position and, when valid, by id, and never holds key bytes or any part of a secret.
 */
export function parseKeyring(data: Uint8Array | string): Keyring {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  if (bytes.length > MAX_DOCUMENT_BYTES) {
    throw new Error(`keyring.json: document is ${bytes.length} bytes: at most ${MAX_DOCUMENT_BYTES} are allowed`);
  }
  let keys: Key[];
  try {
    keys = document(new GoTokens(bytes));
  } catch (e) {
    if (e instanceof Problem) {
      throw new Error('keyring.json: ' + e.message, { cause: e });
    }
    throw e;
  }
  return new Keyring(keys);
}

/**
 * Reads a token-ttl file as Go's keyring.ParseTokenTTL: whole seconds from 1 to 900 in ASCII
 * decimal, no sign or leading zeros, one trailing newline allowed. Returns seconds.
 */
export function parseTokenTTL(data: Uint8Array | string): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
  let text = bytes;
  if (text.length > 0 && text[text.length - 1] === 0x0a) {
    text = text.subarray(0, text.length - 1);
  }
  const s = text.toString('latin1');
  if (!/^[1-9][0-9]{0,2}$/.test(s) || Number(s) > MAX_TOKEN_TTL_SECONDS) {
    throw new Error(`${TOKEN_TTL_FILE} is ${goQuote20(bytes)}: want whole seconds from 1 to ${MAX_TOKEN_TTL_SECONDS}`);
  }
  return Number(s);
}

/** The content of a token-ttl file for seconds. */
export function formatTokenTTL(seconds: number): string {
  return String(seconds);
}

// goQuote20 is Go's %.20q of a byte slice: the first 20 runes (invalid bytes count one each),
// quoted with Go's escapes.
function goQuote20(b: Uint8Array): string {
  const runes = decodeRunes(b).slice(0, 20);
  let out = '"';
  for (const r of runes) {
    out += goQuoteRune(r);
  }
  return out + '"';
}

type Rune = { cp: number; bad?: number };

function decodeRunes(b: Uint8Array): Rune[] {
  const out: Rune[] = [];
  for (let i = 0; i < b.length; ) {
    const [cp, n] = decodeRune(b, i);
    out.push(cp < 0 ? { cp: 0xfffd, bad: b[i] } : { cp });
    i += n;
  }
  return out;
}

function goQuoteRune(r: Rune): string {
  if (r.bad !== undefined) {
    return '\\x' + r.bad.toString(16).padStart(2, '0');
  }
  const c = r.cp;
  switch (c) {
    case 0x07:
      return '\\a';
    case 0x08:
      return '\\b';
    case 0x0c:
      return '\\f';
    case 0x0a:
      return '\\n';
    case 0x0d:
      return '\\r';
    case 0x09:
      return '\\t';
    case 0x0b:
      return '\\v';
    case 0x5c:
      return '\\\\';
    case 0x22:
      return '\\"';
  }
  if (c < 0x20 || c === 0x7f) {
    return '\\x' + c.toString(16).padStart(2, '0');
  }
  if (c < 0x7f) {
    return String.fromCharCode(c);
  }
  // Printable runes stay as they are in Go's %q; this covers the common ones.
  if (/[\p{L}\p{M}\p{N}\p{P}\p{S}]/u.test(String.fromCodePoint(c)) || c === 0x20) {
    return String.fromCodePoint(c);
  }
  return c > 0xffff ? '\\U' + c.toString(16).padStart(8, '0') : '\\u' + c.toString(16).padStart(4, '0');
}

/** Go's utf8.DecodeRune: [code point, length], code point -1 for an invalid byte (length 1). */
function decodeRune(b: Uint8Array, i: number): [number, number] {
  const c0 = b[i] as number;
  if (c0 < 0x80) {
    return [c0, 1];
  }
  const cont = (k: number, lo = 0x80, hi = 0xbf): number => {
    const c = b[i + k];
    return c !== undefined && c >= lo && c <= hi ? c & 0x3f : -1;
  };
  if (c0 >= 0xc2 && c0 <= 0xdf) {
    const c1 = cont(1);
    return c1 < 0 ? [-1, 1] : [((c0 & 0x1f) << 6) | c1, 2];
  }
  if (c0 >= 0xe0 && c0 <= 0xef) {
    const c1 = cont(1, c0 === 0xe0 ? 0xa0 : 0x80, c0 === 0xed ? 0x9f : 0xbf);
    const c2 = c1 < 0 ? -1 : cont(2);
    return c2 < 0 ? [-1, 1] : [((c0 & 0x0f) << 12) | (c1 << 6) | c2, 3];
  }
  if (c0 >= 0xf0 && c0 <= 0xf4) {
    const c1 = cont(1, c0 === 0xf0 ? 0x90 : 0x80, c0 === 0xf4 ? 0x8f : 0xbf);
    const c2 = c1 < 0 ? -1 : cont(2);
    const c3 = c2 < 0 ? -1 : cont(3);
    return c3 < 0 ? [-1, 1] : [((c0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3, 4];
  }
  return [-1, 1];
}

// ---- The token stream of Go's encoding/json Decoder (with UseNumber) ----

/** A problem with the document, reported as "keyring.json: " + message. */
class Problem extends Error {}

const DELIM = Symbol('delim');
type Delim = { [DELIM]: '{' | '}' | '[' | ']' };
type Token = Delim | string | boolean | null | { number: string };
const delims: Record<string, Delim> = {
  '{': { [DELIM]: '{' },
  '}': { [DELIM]: '}' },
  '[': { [DELIM]: '[' },
  ']': { [DELIM]: ']' },
};

class GoSyntaxError extends Error {
  constructor(readonly offset: number) {
    super(`invalid JSON at byte offset ${offset}`);
  }
}
class GoEOF extends Error {}

enum St {
  TopValue,
  ArrayStart,
  ArrayValue,
  ArrayComma,
  ObjectStart,
  ObjectKey,
  ObjectColon,
  ObjectValue,
  ObjectComma,
}

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

/**
 * GoTokens replays encoding/json's Decoder.Token: delimiters from its state machine, each scalar
 * through its scanner, whose byte count (kept across values, as Go's is) gives the offset of a
 * syntax error inside a value; an error at a delimiter has the delimiter's offset.
 */
class GoTokens {
  private pos = 0;
  private state = St.TopValue;
  private readonly stack: St[] = [];
  private scanned = 0; // encoding/json's scanner.bytes

  constructor(private readonly b: Uint8Array) {}

  /** Throws GoSyntaxError or GoEOF; returns the next token. */
  token(): Token {
    for (;;) {
      const c = this.peek();
      switch (c) {
        case 0x5b:
        case 0x7b:
          if (!this.valueAllowed()) {
            throw new GoSyntaxError(this.pos);
          }
          this.pos++;
          this.stack.push(this.state);
          this.state = c === 0x5b ? St.ArrayStart : St.ObjectStart;
          return delims[c === 0x5b ? '[' : '{'] as Delim;
        case 0x5d:
          if (this.state !== St.ArrayStart && this.state !== St.ArrayComma) {
            throw new GoSyntaxError(this.pos);
          }
          this.pos++;
          this.state = this.stack.pop() as St;
          this.valueEnd();
          return delims[']'] as Delim;
        case 0x7d:
          if (this.state !== St.ObjectStart && this.state !== St.ObjectComma) {
            throw new GoSyntaxError(this.pos);
          }
          this.pos++;
          this.state = this.stack.pop() as St;
          this.valueEnd();
          return delims['}'] as Delim;
        case 0x3a:
          if (this.state !== St.ObjectColon) {
            throw new GoSyntaxError(this.pos);
          }
          this.pos++;
          this.state = St.ObjectValue;
          continue;
        case 0x2c:
          if (this.state === St.ArrayComma) {
            this.pos++;
            this.state = St.ArrayValue;
            continue;
          }
          if (this.state === St.ObjectComma) {
            this.pos++;
            this.state = St.ObjectKey;
            continue;
          }
          throw new GoSyntaxError(this.pos);
        default:
          if (c === 0x22 && (this.state === St.ObjectStart || this.state === St.ObjectKey)) {
            const s = this.scalar();
            this.state = St.ObjectColon;
            return s;
          }
          if (!this.valueAllowed()) {
            throw new GoSyntaxError(this.pos);
          }
          {
            const v = this.scalar();
            this.valueEnd();
            return v;
          }
      }
    }
  }

  /** Decoder.More: whether another element follows in the current array or object. */
  more(): boolean {
    try {
      const c = this.peek();
      return c !== 0x5d && c !== 0x7d;
    } catch {
      return false;
    }
  }

  /** Whether only whitespace is left. */
  atEOF(): boolean {
    try {
      this.peek();
      return false;
    } catch {
      return true;
    }
  }

  private peek(): number {
    while (this.pos < this.b.length && isSpace(this.b[this.pos])) {
      this.pos++;
    }
    if (this.pos >= this.b.length) {
      throw new GoEOF();
    }
    return this.b[this.pos] as number;
  }

  private valueAllowed(): boolean {
    return (
      this.state === St.TopValue ||
      this.state === St.ArrayStart ||
      this.state === St.ArrayValue ||
      this.state === St.ObjectValue
    );
  }

  private valueEnd(): void {
    if (this.state === St.ArrayStart || this.state === St.ArrayValue) {
      this.state = St.ArrayComma;
    } else if (this.state === St.ObjectValue) {
      this.state = St.ObjectComma;
    }
  }

  /** Scans and decodes the scalar at pos (never a delimiter, which token handles). */
  private scalar(): Token {
    const start = this.pos;
    const fail = (at: number): never => {
      throw new GoSyntaxError(this.scanned + (at - start + 1));
    };
    const b = this.b;
    const c = b[start] as number;
    let end: number;
    let tok: Token;
    if (c === 0x22) {
      [end, tok] = this.goString(start, fail);
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
      const lit = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
      for (let k = 1; k < lit.length; k++) {
        if (start + k >= b.length) {
          throw new GoEOF();
        }
        if (b[start + k] !== lit.charCodeAt(k)) {
          fail(start + k);
        }
      }
      end = start + lit.length;
      tok = c === 0x74 ? true : c === 0x66 ? false : null;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      end = this.goNumber(start, fail);
      tok = { number: Buffer.from(b.subarray(start, end)).toString('latin1') };
    } else {
      return fail(start);
    }
    this.scanned += end - start;
    this.pos = end;
    return tok;
  }

  private goNumber(start: number, fail: (at: number) => never): number {
    const b = this.b;
    const digit = (i: number): boolean => {
      const c = b[i];
      return c !== undefined && c >= 0x30 && c <= 0x39;
    };
    const need = (i: number): void => {
      if (i >= b.length) {
        throw new GoEOF();
      }
      if (!digit(i)) {
        fail(i);
      }
    };
    let i = start;
    if (b[i] === 0x2d) {
      i++;
      need(i);
    }
    if (b[i] === 0x30) {
      i++;
    } else {
      while (digit(i)) {
        i++;
      }
    }
    if (b[i] === 0x2e) {
      i++;
      need(i);
      while (digit(i)) {
        i++;
      }
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      if (b[i] === 0x2b || b[i] === 0x2d) {
        i++;
      }
      need(i);
      while (digit(i)) {
        i++;
      }
    }
    return i;
  }

  /** Scans a string as Go's scanner does and decodes it as Go's unquote does. */
  private goString(start: number, fail: (at: number) => never): [number, string] {
    const b = this.b;
    let i = start + 1;
    let out = '';
    const isHex = (c: number | undefined): boolean =>
      c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46));
    const hexAt = (k: number): number => parseInt(Buffer.from(b.subarray(k, k + 4)).toString('latin1'), 16);
    for (;;) {
      if (i >= b.length) {
        throw new GoEOF();
      }
      const c = b[i] as number;
      if (c === 0x22) {
        return [i + 1, out];
      }
      if (c < 0x20) {
        fail(i);
      }
      if (c === 0x5c) {
        if (i + 1 >= b.length) {
          throw new GoEOF();
        }
        const e = b[i + 1] as number;
        const simple: Record<number, string> = {
          0x22: '"',
          0x5c: '\\',
          0x2f: '/',
          0x62: '\b',
          0x66: '\f',
          0x6e: '\n',
          0x72: '\r',
          0x74: '\t',
        };
        const s = simple[e];
        if (s !== undefined) {
          out += s;
          i += 2;
          continue;
        }
        if (e !== 0x75) {
          fail(i + 1);
        }
        for (let k = 2; k < 6; k++) {
          if (i + k >= b.length) {
            throw new GoEOF();
          }
          if (!isHex(b[i + k])) {
            fail(i + k);
          }
        }
        const r = hexAt(i + 2);
        i += 6;
        if (r >= 0xd800 && r < 0xe000) {
          // utf16.DecodeRune of this and a following \u escape, else U+FFFD.
          if (r < 0xdc00 && b[i] === 0x5c && b[i + 1] === 0x75 && [2, 3, 4, 5].every((k) => isHex(b[i + k]))) {
            const lo = hexAt(i + 2);
            if (lo >= 0xdc00 && lo < 0xe000) {
              out += String.fromCharCode(r, lo);
              i += 6;
              continue;
            }
          }
          out += '\ufffd';
          continue;
        }
        out += String.fromCharCode(r);
        continue;
      }
      if (c < 0x80) {
        out += String.fromCharCode(c);
        i++;
        continue;
      }
      const [cp, n] = decodeRune(b, i);
      out += cp < 0 ? '\ufffd' : String.fromCodePoint(cp);
      i += n;
    }
  }
}

function isDelim(t: Token, d: '{' | '}' | '[' | ']'): boolean {
  return typeof t === 'object' && t !== null && DELIM in t && t[DELIM] === d;
}

function kind(t: Token): string {
  if (t === null) {
    return 'null';
  }
  switch (typeof t) {
    case 'boolean':
      return 'a boolean';
    case 'string':
      return 'a string';
    default:
      if (DELIM in t) {
        return t[DELIM] === '[' ? 'a list' : 'an object';
      }
      return 'a number';
  }
}

function syntax(e: unknown, where: string): Error {
  const w = where === '' ? '' : ' ' + where;
  if (e instanceof GoSyntaxError) {
    return new Problem(`invalid JSON at byte offset ${e.offset}${w}`);
  }
  if (e instanceof GoEOF) {
    return new Problem(`unexpected end of JSON input${w}`);
  }
  return e instanceof Error ? e : new Problem(String(e));
}

function next(d: GoTokens, where: string): Token {
  try {
    return d.token();
  } catch (e) {
    throw syntax(e, where);
  }
}

function utf8Len(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function showName(name: string): string {
  return validateID(name) === undefined ? JSON.stringify(name) : `(a ${utf8Len(name)}-byte name, not shown)`;
}

function document(d: GoTokens): Key[] {
  let tok: Token;
  try {
    tok = d.token();
  } catch (e) {
    if (e instanceof GoEOF) {
      throw new Problem('document is empty: want {"keys":[...]}');
    }
    throw syntax(e, '');
  }
  if (!isDelim(tok, '{')) {
    throw new Problem(`document is ${kind(tok)}: want an object {"keys":[...]}`);
  }
  let keys: Key[] = [];
  let seen = false;
  while (d.more()) {
    const name = next(d, '') as string;
    if (name !== 'keys') {
      throw new Problem(`unknown field ${showName(name)} at top level: only "keys" is allowed`);
    }
    if (seen) {
      throw new Problem('duplicate field "keys" at top level');
    }
    seen = true;
    keys = keyList(d);
  }
  next(d, ''); // the closing brace
  if (!seen) {
    throw new Problem('missing field "keys"');
  }
  if (!d.atEOF()) {
    throw new Problem('unexpected data after the keyring object');
  }
  return keys;
}

function keyList(d: GoTokens): Key[] {
  const tok = next(d, 'in "keys"');
  if (!isDelim(tok, '[')) {
    throw new Problem(`"keys" is ${kind(tok)}: want a list of 1 to ${MAX_KEYS} keys`);
  }
  const keys: Key[] = [];
  const ids = new Map<string, number>();
  for (let i = 0; d.more(); i++) {
    if (i === MAX_KEYS) {
      throw new Problem(`"keys" has more than ${MAX_KEYS} entries`);
    }
    keys.push(entry(d, i, ids));
  }
  next(d, 'in "keys"'); // the closing bracket
  if (keys.length === 0) {
    throw new Problem(`"keys" is empty: a keyring needs 1 to ${MAX_KEYS} keys`);
  }
  return keys;
}

const STD_B64 = /^[A-Za-z0-9+/]*={0,2}$/;

function entry(d: GoTokens, i: number, ids: Map<string, number>): Key {
  const where = `in keys[${i}]`;
  const tok = next(d, where);
  if (!isDelim(tok, '{')) {
    throw new Problem(`keys[${i}] is ${kind(tok)}: want an object {"id":...,"secret":...}`);
  }
  let id = '';
  let secret = '';
  let haveID = false;
  let haveSecret = false;
  let problem: string | undefined;
  const note = (p: string): void => {
    problem ??= p;
  };
  const seen = new Set<string>();
  while (d.more()) {
    const name = next(d, where) as string;
    if (seen.has(name)) {
      note(`duplicate field ${showName(name)}`);
    }
    seen.add(name);
    const v = value(d, where);
    if (name !== 'id' && name !== 'secret') {
      note(`unknown field ${showName(name)}: only "id" and "secret" are allowed`);
    } else if (typeof v !== 'string') {
      note(`${JSON.stringify(name)} is ${kind(v)}: want a string`);
    } else if (name === 'id' && !haveID) {
      id = v;
      haveID = true;
    } else if (name === 'secret' && !haveSecret) {
      secret = v;
      haveSecret = true;
    }
  }
  next(d, where); // the closing brace

  const idErr = validateID(id);
  const label = haveID && idErr === undefined ? `keys[${i}] (id ${JSON.stringify(id)})` : `keys[${i}]`;
  const fail = (p: string): never => {
    throw new Problem(`${label}: ${p}`);
  };
  if (problem !== undefined) {
    fail(problem);
  } else if (!haveID) {
    fail('missing field "id"');
  } else if (!haveSecret) {
    fail('missing field "secret"');
  } else if (idErr !== undefined) {
    fail(idErr);
  }
  const j = ids.get(id);
  if (j !== undefined) {
    fail(`id already used by keys[${j}]`);
  }
  ids.set(id, i);
  // Canonical standard base64 only: one key, one spelling (Go re-encodes and compares).
  const bytes = STD_B64.test(secret) && secret.length % 4 === 0 ? Buffer.from(secret, 'base64') : undefined;
  if (bytes?.toString('base64') !== secret) {
    fail('secret is not standard base64 (RFC 4648 alphabet, with padding, no line breaks)');
  }
  const b = bytes as Buffer;
  if (b.length < MIN_SECRET_BYTES) {
    fail(`secret is ${b.length} bytes: at least ${MIN_SECRET_BYTES} are required`);
  }
  return { id, secret: new Uint8Array(b) };
}

/** A value: a scalar as it is, an object or a list skipped and returned as its opening delimiter. */
function value(d: GoTokens, where: string): Token {
  const tok = next(d, where);
  if (isDelim(tok, '{') || isDelim(tok, '[')) {
    for (let depth = 1; depth > 0; ) {
      const t = next(d, where);
      if (isDelim(t, '{') || isDelim(t, '[')) {
        depth++;
      } else if (isDelim(t, '}') || isDelim(t, ']')) {
        depth--;
      }
    }
  }
  return tok;
}
