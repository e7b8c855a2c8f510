// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// Canonical JSON as Snodo (Elixir) binds and signs it, the rules of the Go library's
// pkg/token/internal/canonical, which this file follows rule for rule:
//   - reading: strict JSON (strings of valid UTF-8 without raw control characters, \u escapes that
//     form code points, surrogates only as a high-low pair), whitespace space, tab, CR and LF; a
//     literal with '.', 'e' or 'E' is a float, any other an exact integer of any size ("-0" is 0);
//     "0e…" and "-0e…" are +0.0; a float beyond the float64 range is an error, one too small is 0.
//   - an object repeating a name is an error, except under firstWins (what Snodo returns when it
//     opens a token), which keeps the first occurrence.
//   - writing: no whitespace, members sorted by the UTF-8 bytes of their names, integers as their
//     digits, floats in Erlang's shortest layout (formatFloat), strings escaping only '"', '\\' and
//     control characters.
// The text is read as a JS string: UTF-8 order of names is code point order, which compareNames
// computes from UTF-16 code units.

/** Why a text is not acceptable JSON, with the offset (in UTF-16 code units) where it was found. */
export class JSONSyntaxError extends Error {
  constructor(
    readonly offset: number,
    msg: string,
  ) {
    super(`json: ${msg} at offset ${offset}`);
    this.name = 'JSONSyntaxError';
  }
}

/** The deepest nesting of trusted text (state, payloads): Go's canonical.MaxDepth. */
export const MAX_DEPTH = 10000;
/** The deepest nesting of a request's params: Go's canonical.MaxParamsDepth. */
export const MAX_PARAMS_DEPTH = 1000;
/** The most digits of an integer in a request's params (Snodo.JSONValue.decode's limit). */
export const MAX_PARAMS_INTEGER_DIGITS = 64;

interface Rules {
  maxDepth: number;
  firstWins: boolean;
  maxIntDigits: number; // 0: no limit
}

const STRICT: Rules = { maxDepth: MAX_DEPTH, firstWins: false, maxIntDigits: 0 };
const FIRST_WINS: Rules = { maxDepth: MAX_DEPTH, firstWins: true, maxIntDigits: 0 };
const PARAMS: Rules = { maxDepth: MAX_PARAMS_DEPTH, firstWins: false, maxIntDigits: MAX_PARAMS_INTEGER_DIGITS };

const utf8Fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The JSON text of src: a string as it is (it must be well formed), bytes decoded as strict UTF-8. */
export function textOf(src: string | Uint8Array): string {
  if (typeof src === 'string') {
    if (!src.isWellFormed()) {
      throw new JSONSyntaxError(0, 'invalid UTF-8 in text (a lone surrogate)');
    }
    return src;
  }
  try {
    return utf8Fatal.decode(src);
  } catch {
    throw new JSONSyntaxError(0, 'invalid UTF-8 in text');
  }
}

/** The canonical form of the single JSON value of src; a repeated member name is an error. */
export function canonical(src: string | Uint8Array): string {
  return new Reader(textOf(src), STRICT).whole(false, undefined);
}

/** canonical, keeping the first of repeated member names (Snodo's open). */
export function canonicalFirstWins(src: string | Uint8Array): string {
  return new Reader(textOf(src), FIRST_WINS).whole(false, undefined);
}

/**
 * The canonical form of a request's params object, leaving out its top-level members named in omit
 * (still checked), with the params' limits on depth and integer digits.
 */
export function canonicalParams(src: string | Uint8Array, omit: readonly string[]): string {
  return new Reader(textOf(src), PARAMS).whole(true, omit);
}

// eslint-disable-next-line no-control-regex -- the control characters are what it finds
const SPECIAL = /["\\\u0000-\u001f]/;

/** s as a canonical JSON string. s must be well formed (a JS string without lone surrogates). */
export function quote(s: string): string {
  if (!SPECIAL.test(s)) {
    return '"' + s + '"';
  }
  let out = '"';
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) {
      continue;
    }
    out += s.slice(run, i);
    switch (c) {
      case 0x22:
        out += '\\"';
        break;
      case 0x5c:
        out += '\\\\';
        break;
      case 0x08:
        out += '\\b';
        break;
      case 0x09:
        out += '\\t';
        break;
      case 0x0a:
        out += '\\n';
        break;
      case 0x0c:
        out += '\\f';
        break;
      case 0x0d:
        out += '\\r';
        break;
      default:
        out += '\\u00' + HEX.charAt(c >> 4) + HEX.charAt(c & 0xf);
    }
    run = i + 1;
  }
  return out + s.slice(run) + '"';
}

const HEX = '0123456789ABCDEF';

/** Orders two strings by their UTF-8 bytes, that is by code point. */
export function compareNames(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      // Surrogates (astral code points) sort after U+E000..U+FFFF in code point order.
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

interface Member {
  name: string;
  out: string;
  omit: boolean;
}

/** An array being read: its canonical text so far. */
interface ArrayFrame {
  array: true;
  out: string;
}

/** An object being read: its members so far, and the name of the member whose value is next. */
interface ObjectFrame {
  array: false;
  ms: Member[];
  sorted: boolean;
  omit: readonly string[] | undefined;
  name: string;
}

type Frame = ArrayFrame | ObjectFrame;

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

/**
 * Reader reads one JSON text. It also offers the few primitives the codec needs to walk a payload
 * whose layout it knows: consume, integer, string, skipSpace, end.
 */
export class Reader {
  pos = 0;
  private depth = 0;

  constructor(
    readonly src: string,
    private readonly rules: Rules = STRICT,
  ) {}

  whole(object: boolean, omit: readonly string[] | undefined): string {
    this.skipSpace();
    if (object && this.src.charCodeAt(this.pos) !== 0x7b) {
      throw this.error(this.pos, 'not a JSON object');
    }
    const out = this.value(omit);
    this.end();
    return out;
  }

  /**
   * The members of the top-level object as [decoded name, value text as written], in document
   * order; undefined if the text is not one JSON object. The values are skipped, their syntax
   * checked (Go's Decoder.SkipValue) but nothing canonicalized: this reads the body of every
   * request, before anything is authenticated. Repeated names are kept, for the caller to judge;
   * nested objects may repeat names too.
   */
  topLevelMembers(): [string, string][] | undefined {
    const r = new Reader(this.src, STRICT);
    try {
      r.skipSpace();
      if (!r.consume('{')) {
        return undefined;
      }
      const out: [string, string][] = [];
      if (!r.consume('}')) {
        for (;;) {
          const name = r.memberName();
          r.skipSpace();
          const start = r.pos;
          r.skipValue();
          out.push([name, r.src.slice(start, r.pos)]);
          if (r.consume(',')) {
            continue;
          }
          if (r.consume('}')) {
            break;
          }
          return undefined;
        }
      }
      r.end();
      return out;
    } catch {
      return undefined;
    }
  }

  error(at: number, msg: string): JSONSyntaxError {
    return new JSONSyntaxError(at, msg);
  }

  private unexpected(): JSONSyntaxError {
    if (this.pos >= this.src.length) {
      return this.error(this.pos, 'unexpected end of input');
    }
    return this.error(this.pos, `unexpected character ${JSON.stringify(this.src[this.pos])}`);
  }

  skipSpace(): void {
    const s = this.src;
    let i = this.pos;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        i++;
      } else {
        break;
      }
    }
    this.pos = i;
  }

  /** Skips whitespace and then c, reporting whether c was there. */
  consume(c: string): boolean {
    this.skipSpace();
    if (this.src[this.pos] === c) {
      this.pos++;
      return true;
    }
    return false;
  }

  /** Skips whitespace and fails unless the text ends there. */
  end(): void {
    this.skipSpace();
    if (this.pos !== this.src.length) {
      throw this.error(this.pos, 'unexpected data after the JSON value');
    }
  }

  /** Reads an integer literal and returns its text. */
  integer(): string {
    this.skipSpace();
    const start = this.pos;
    const { lit, isFloat } = this.number();
    if (isFloat) {
      throw this.error(start, 'number is a float, not an integer');
    }
    return lit;
  }

  /** Reads a string and returns its decoded value. */
  string(): string {
    this.skipSpace();
    if (this.src.charCodeAt(this.pos) !== 0x22) {
      throw this.unexpected();
    }
    return this.decodeString();
  }

  private enter(): void {
    if (++this.depth > this.rules.maxDepth) {
      throw this.error(this.pos, `nesting deeper than ${this.rules.maxDepth}`);
    }
  }

  /**
   * Reads the next value and returns its canonical form. omit applies if it is an object.
   *
   * Iterative, with the open arrays and objects on a stack of its own: the nesting the rules
   * accept (10,000, Go's canonical.MaxDepth; Snodo has no limit) is far deeper than the call stack
   * of a recursive reader allows.
   */
  private value(omit: readonly string[] | undefined): string {
    const open: Frame[] = [];
    let nextOmit = omit; // only the value asked for is an object with omitted members
    for (;;) {
      // One value starts here: a scalar, or the opening of an array or object.
      this.skipSpace();
      let out: string;
      const c = this.src.charCodeAt(this.pos);
      if (c === 0x5b) {
        this.enter();
        this.pos++;
        if (!this.consume(']')) {
          open.push({ array: true, out: '[' });
          nextOmit = undefined;
          continue;
        }
        this.depth--;
        out = '[]';
      } else if (c === 0x7b) {
        this.enter();
        this.pos++;
        const f: ObjectFrame = { array: false, ms: [], sorted: true, omit: nextOmit, name: '' };
        if (!this.consume('}')) {
          f.name = this.memberName();
          open.push(f);
          nextOmit = undefined;
          continue;
        }
        out = this.closeObject(f);
      } else {
        out = this.scalar();
      }
      // The value is complete: hand it to the array or object it is in, closing each that ends.
      for (;;) {
        const f = open[open.length - 1];
        if (f === undefined) {
          return out;
        }
        if (f.array) {
          f.out += f.out.length > 1 ? ',' + out : out;
          if (this.consume(',')) {
            break;
          }
          if (!this.consume(']')) {
            throw this.unexpected();
          }
          open.pop();
          this.depth--;
          out = f.out + ']';
        } else {
          const prev = f.ms[f.ms.length - 1];
          if (f.sorted && prev !== undefined && compareNames(prev.name, f.name) >= 0) {
            f.sorted = false;
          }
          f.ms.push({ name: f.name, out, omit: f.omit !== undefined && f.omit.includes(f.name) });
          if (this.consume(',')) {
            f.name = this.memberName();
            break;
          }
          if (!this.consume('}')) {
            throw this.unexpected();
          }
          open.pop();
          out = this.closeObject(f);
        }
      }
    }
  }

  /** Reads a member's name and its colon. */
  private memberName(): string {
    this.skipSpace();
    if (this.src.charCodeAt(this.pos) !== 0x22) {
      throw this.unexpected();
    }
    const name = this.decodeString();
    if (!this.consume(':')) {
      throw this.unexpected();
    }
    return name;
  }

  /** The canonical form of a scalar value (not an array or object) at pos. */
  private scalar(): string {
    const s = this.src;
    if (this.pos >= s.length) {
      throw this.unexpected();
    }
    switch (s.charCodeAt(this.pos)) {
      case 0x22:
        return quote(this.decodeString());
      case 0x74:
        return this.literal('true');
      case 0x66:
        return this.literal('false');
      case 0x6e:
        return this.literal('null');
      default: {
        const start = this.pos;
        const { lit, isFloat } = this.number();
        if (!isFloat) {
          this.checkDigits(start, lit);
          return lit === '-0' ? '0' : lit;
        }
        if (isShortDecimal(lit)) {
          return lit;
        }
        const f = parseFloatLiteral(lit);
        if (f === undefined) {
          throw this.error(start, `float ${JSON.stringify(lit.slice(0, 40))} is out of range`);
        }
        return formatFloat(f);
      }
    }
  }

  private checkDigits(start: number, lit: string): void {
    if (this.rules.maxIntDigits > 0) {
      const digits = lit.startsWith('-') ? lit.length - 1 : lit.length;
      if (digits > this.rules.maxIntDigits) {
        throw this.error(start, `integer of ${digits} digits: at most ${this.rules.maxIntDigits} are accepted`);
      }
    }
  }

  /**
   * Reads past the next value, checking its syntax (strings, numbers in range, the depth) but
   * building nothing: its objects may repeat a name. Go's Decoder.SkipValue, iterative.
   */
  skipValue(): void {
    const closers: number[] = []; // the closing character of each open array or object
    for (;;) {
      this.skipSpace();
      const c = this.src.charCodeAt(this.pos);
      if (c === 0x5b || c === 0x7b) {
        this.enter();
        this.pos++;
        const end = c === 0x5b ? ']' : '}';
        if (!this.consume(end)) {
          closers.push(end.charCodeAt(0));
          if (c === 0x7b) {
            this.memberName();
          }
          continue;
        }
        this.depth--;
      } else {
        this.skipScalar();
      }
      for (;;) {
        const end = closers[closers.length - 1];
        if (end === undefined) {
          return;
        }
        if (this.consume(',')) {
          if (end === 0x7d) {
            this.memberName();
          }
          break;
        }
        if (!this.consume(String.fromCharCode(end))) {
          throw this.unexpected();
        }
        closers.pop();
        this.depth--;
      }
    }
  }

  private skipScalar(): void {
    const s = this.src;
    if (this.pos >= s.length) {
      throw this.unexpected();
    }
    switch (s.charCodeAt(this.pos)) {
      case 0x22:
        this.decodeString();
        return;
      case 0x74:
        this.literal('true');
        return;
      case 0x66:
        this.literal('false');
        return;
      case 0x6e:
        this.literal('null');
        return;
      default: {
        const start = this.pos;
        const { lit, isFloat } = this.number();
        if (!isFloat) {
          this.checkDigits(start, lit);
        } else if (parseFloatLiteral(lit) === undefined) {
          throw this.error(start, `float ${JSON.stringify(lit.slice(0, 40))} is out of range`);
        }
      }
    }
  }

  private literal(lit: string): string {
    if (!this.src.startsWith(lit, this.pos)) {
      throw this.error(this.pos, 'invalid literal');
    }
    this.pos += lit.length;
    return lit;
  }

  private number(): { lit: string; isFloat: boolean } {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.src);
    if (m === null) {
      throw this.unexpected();
    }
    this.pos += m[0].length;
    return { lit: m[0], isFloat: m[1] !== undefined || m[2] !== undefined };
  }

  /** The canonical form of the object of f, whose closing brace was just read. */
  private closeObject(f: ObjectFrame): string {
    const ms = f.ms;
    if (!f.sorted) {
      ms.sort((a, b) => compareNames(a.name, b.name)); // stable: the first of equal names first
      for (let k = 1; k < ms.length; k++) {
        const m = ms[k] as Member;
        if (m.name !== (ms[k - 1] as Member).name) {
          continue;
        }
        if (!this.rules.firstWins) {
          throw this.error(this.pos, `object has the name ${JSON.stringify(m.name.slice(0, 64))} twice`);
        }
        m.omit = true;
      }
    }
    this.depth--;
    let out = '{';
    for (const m of ms) {
      if (m.omit) {
        continue;
      }
      if (out.length > 1) {
        out += ',';
      }
      out += quote(m.name) + ':' + m.out;
    }
    return out + '}';
  }

  /** Decodes the string at pos (its opening quote) and moves past it. */
  private decodeString(): string {
    const s = this.src;
    const start = this.pos + 1;
    const close = s.indexOf('"', start);
    if (close < 0) {
      throw this.error(s.length, 'unterminated string');
    }
    const plain = s.slice(start, close);
    if (!SPECIAL.test(plain)) {
      this.pos = close + 1;
      return plain;
    }
    let out = '';
    let run = start;
    let i = start;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        this.pos = i + 1;
        return out + s.slice(run, i);
      }
      if (c < 0x20) {
        throw this.error(i, `control character 0x${c.toString(16).padStart(2, '0')} in string`);
      }
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += s.slice(run, i);
      const e = s[i + 1];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          i += 2;
          break;
        case 'b':
          out += '\b';
          i += 2;
          break;
        case 'f':
          out += '\f';
          i += 2;
          break;
        case 'n':
          out += '\n';
          i += 2;
          break;
        case 'r':
          out += '\r';
          i += 2;
          break;
        case 't':
          out += '\t';
          i += 2;
          break;
        case 'u': {
          const r = hex4(s, i + 2);
          if (r < 0) {
            throw this.error(i, 'invalid \\u escape');
          }
          if (r >= 0xd800 && r <= 0xdbff) {
            const lo = s[i + 6] === '\\' && s[i + 7] === 'u' ? hex4(s, i + 8) : -1;
            if (lo < 0xdc00 || lo > 0xdfff) {
              throw this.error(i, 'high surrogate escape without a low surrogate');
            }
            out += String.fromCharCode(r, lo);
            i += 12;
          } else if (r >= 0xdc00 && r <= 0xdfff) {
            throw this.error(i, 'lone low surrogate escape');
          } else {
            out += String.fromCharCode(r);
            i += 6;
          }
          break;
        }
        case undefined:
          throw this.error(i, 'unterminated escape');
        default:
          throw this.error(i, `invalid escape \\${e}`);
      }
      run = i;
    }
    throw this.error(i, 'unterminated string');
  }
}

function hex4(s: string, i: number): number {
  if (i + 4 > s.length) {
    return -1;
  }
  let r = 0;
  for (let k = i; k < i + 4; k++) {
    const c = s.charCodeAt(k);
    let v: number;
    if (c >= 0x30 && c <= 0x39) {
      v = c - 0x30;
    } else if (c >= 0x61 && c <= 0x66) {
      v = c - 0x61 + 10;
    } else if (c >= 0x41 && c <= 0x46) {
      v = c - 0x41 + 10;
    } else {
      return -1;
    }
    r = (r << 4) | v;
  }
  return r;
}

/** Reads a float literal as Erlang's json module does; undefined if it is beyond the float64 range. */
function parseFloatLiteral(lit: string): number | undefined {
  if (!lit.includes('.') && (lit.startsWith('0') || lit.startsWith('-0'))) {
    return 0; // "0e…" and "-0e…" keep no sign
  }
  const f = Number(lit);
  return Number.isFinite(f) ? f : undefined;
}

/**
 * f in the layout of Erlang's float_to_binary(F, [short]): the shortest digits that read back as f;
 * below 2^53 in magnitude the shorter of the decimal and the scientific form (decimal on a tie),
 * from 2^53 up always scientific; the mantissa always has a '.', the exponent neither '+' nor
 * leading zeros.
 */
export function formatFloat(f: number): string {
  if (!Number.isFinite(f)) {
    throw new RangeError('formatFloat of a non-finite number');
  }
  const sign = f < 0 || Object.is(f, -0) ? '-' : '';
  const a = Math.abs(f);
  // toExponential() gives the shortest digits that read back as a (ECMA-262 Number::toString).
  const e = a.toExponential();
  const ei = e.indexOf('e');
  const d = e.slice(0, ei).replace('.', '');
  const exp = Number(e.slice(ei + 1));
  const n = d.length;
  if (a < 2 ** 53 && decimalLayout(n, exp)) {
    if (exp < 0) {
      return sign + '0.' + '0'.repeat(-exp - 1) + d;
    }
    if (n <= exp + 1) {
      return sign + d + '0'.repeat(exp + 1 - n) + '.0';
    }
    return sign + d.slice(0, exp + 1) + '.' + d.slice(exp + 1);
  }
  return sign + (d[0] ?? '0') + '.' + (n > 1 ? d.slice(1) : '0') + 'e' + String(exp);
}

function decimalLayout(n: number, exp: number): boolean {
  const sciLen = 2 + Math.max(n - 1, 1) + 1 + String(exp).length;
  const decLen = exp >= 0 ? exp + 1 + 1 + Math.max(n - exp - 1, 1) : 2 + (-exp - 1) + n;
  return decLen <= sciLen;
}

/**
 * Whether the float literal lit is its own canonical form: a plain decimal [-]I.F (F not ending in
 * '0') of at most 15 significant digits in the decimal layout (no two such decimals read as the
 * same float64, so its digits are the shortest).
 */
function isShortDecimal(lit: string): boolean {
  const s = lit.startsWith('-') ? lit.slice(1) : lit;
  const dot = s.indexOf('.');
  if (dot < 0 || s.endsWith('0')) {
    return false;
  }
  const frac = s.slice(dot + 1);
  if (/[eE]/.test(frac)) {
    return false;
  }
  let n: number;
  let exp: number;
  if (s[0] === '0') {
    let z = 0;
    while (frac[z] === '0') {
      z++;
    }
    n = frac.length - z;
    exp = -z - 1;
  } else {
    n = dot + frac.length;
    exp = dot - 1;
  }
  return n <= 15 && exp >= -300 && decimalLayout(n, exp);
}
