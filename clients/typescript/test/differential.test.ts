// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The codec against Go's token.Signed on generated inputs (test/goreplica seal): params, principals
// and states of random shape, member order, whitespace, escapes, Unicode and number spellings
// (integers of any size, "-0", floats in every layout, beyond and below the float64 range), some
// with repeated names or over-long integers. Every case must give the same token, byte for byte, or
// be refused by both for the same kind of reason.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { ConfigError, InputError, Keyring, SignedCodec } from '../src/index.js';
import { goRunInput } from './gorun.js';
import { packageRoot } from './paths.js';

// A small deterministic PRNG (mulberry32), so that a failure can be replayed.
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  constructor(private readonly r: () => number) {}
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }
  ws(): string {
    return this.int(4) === 0 ? this.pick([' ', '\n', '\t ', '\r\n  ']) : '';
  }
  digits(n: number): string {
    let s = String(1 + this.int(9));
    for (let i = 1; i < n; i++) {
      s += String(this.int(10));
    }
    return s;
  }
  number(): string {
    switch (this.int(12)) {
      case 0:
        return this.pick(['0', '-0', '1', '-1', '9007199254740993', '-9223372036854775809']);
      case 1:
        return (this.int(2) === 0 ? '-' : '') + this.digits(1 + this.int(70)); // beyond 64 digits sometimes
      case 2:
        return this.pick(['1.0', '-0.0', '0.0', '1E3', '1e+3', '1e-7', '0e5', '-0e5', '2.50', '100.0', '1e21', '1e22', '5e-324', '2.2250738585072014e-308']);
      case 3:
        return this.pick(['1e400', '-1e400', '1e-400', '-1e-400', '1.7976931348623157e308', '1.7976931348623159e308']);
      case 4:
        return `${this.digits(1 + this.int(17))}.${this.digits(1 + this.int(5))}`;
      case 5:
        return `0.${'0'.repeat(this.int(8))}${this.digits(1 + this.int(6))}`;
      case 6:
        return `${this.digits(1 + this.int(3))}${this.pick(['e', 'E'])}${this.pick(['', '+', '-'])}${this.int(320)}`;
      case 7:
        return `${this.int(2) === 0 ? '-' : ''}${this.digits(1)}.${this.digits(1 + this.int(16))}e${this.pick(['', '-'])}${this.int(30)}`;
      case 8:
        return String(this.r() * 10 ** (this.int(40) - 20));
      case 9:
        return `${this.digits(16 + this.int(6))}.0`;
      default:
        return String(this.int(100000) - 50000);
    }
  }
  string(): string {
    const parts = ['a', 'Z', ' ', 'é', '😀', '\u2028', '/', '<>&', 'k', 'K', '\u212a', 'ß', '\u007f'];
    const escapes = ['\\"', '\\\\', '\\/', '\\n', '\\t', '\\b', '\\f', '\\r', '\\u0001', '\\u001f', '\\u00e9', '\\ud83d\\ude00', '\\u2028', '\\u0041'];
    let s = '"';
    for (let i = this.int(8); i > 0; i--) {
      s += this.int(3) === 0 ? this.pick(escapes) : this.pick(parts);
    }
    if (this.int(60) === 0) {
      s += this.pick(['\\ud800', '\\udc00x']); // lone surrogates: refused
    }
    return s + '"';
  }
  name(): string {
    return this.int(3) === 0 ? this.string() : `"${this.pick(['a', 'b', 'A', 'aa', 'ab', 'é', 'z', 'k', '_meta', 'x1', 'x10', 'x2', '😀', '\uffff'])}"`;
  }
  value(depth: number): string {
    const k = depth > 3 ? this.int(4) : this.int(7);
    switch (k) {
      case 0:
        return this.number();
      case 1:
        return this.string();
      case 2:
        return this.pick(['true', 'false', 'null']);
      case 3:
        return this.number();
      case 4: {
        const items: string[] = [];
        for (let i = this.int(4); i > 0; i--) {
          items.push(this.ws() + this.value(depth + 1) + this.ws());
        }
        return `[${items.join(',')}]`;
      }
      default:
        return this.object(depth);
    }
  }
  object(depth: number, members: string[] = []): string {
    const ms = [...members];
    const names = new Set<string>();
    for (let i = this.int(5); i > 0; i--) {
      let n = this.name();
      if (names.has(n) && this.int(20) !== 0) {
        n = `"u${String(this.int(1e6))}"`; // repeated names only now and then
      }
      names.add(n);
      ms.push(`${this.ws()}${n}${this.ws()}:${this.ws()}${this.value(depth + 1)}${this.ws()}`);
    }
    for (let i = ms.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [ms[i], ms[j]] = [ms[j] as string, ms[i] as string];
    }
    return `{${ms.join(',')}}`;
  }
  params(): string {
    const ms = [`"name":"get_weather"`, `"arguments":${this.object(1)}`];
    for (const extra of ['"_meta":', '"requestState":', '"inputResponses":', '"task":']) {
      if (this.int(3) === 0) {
        ms.push(extra + this.value(2));
      }
    }
    return this.ws() + this.object(0, ms) + this.ws();
  }
}

interface Case {
  keys: { id: string; secret: string }[];
  ttl: number;
  clock: number;
  method: string;
  params: string;
  principal: string;
  state: string;
}

describe('SignedCodec against Go token.Signed on generated inputs', () => {
  it('seals the same tokens, byte for byte, and refuses the same inputs', async () => {
    const g = new Gen(rng(Number(process.env.MRTR_DIFF_SEED ?? 29)));
    const cases: Case[] = [];
    for (let i = 0; i < 1500; i++) {
      const n = 1 + g.int(3);
      const keys = Array.from({ length: n }, (_, j) => ({
        id: `k${String(j)}-${String(g.int(100))}`,
        secret: Buffer.from(Array.from({ length: 32 + g.int(16) }, () => g.int(256))).toString('base64'),
      }));
      cases.push({
        keys,
        ttl: 1 + g.int(900),
        clock: 1_700_000_000 + g.int(1e8),
        method: g.pick(['tools/call', 'resources/read', 'prompts/get']),
        params: g.int(20) === 0 ? '' : g.params(),
        principal: g.int(4) === 0 ? 'null' : g.value(2),
        state: g.value(0),
      });
    }
    const lines = await goRunInput(cases.map((c) => JSON.stringify(c)).join('\n') + '\n', 'seal');
    assert.equal(lines.length, cases.length);
    let tokens = 0;
    const kinds = { input: 0, config: 0 };
    cases.forEach((c, i) => {
      const want = JSON.parse(lines[i] as string) as { token?: string; kind?: string; error?: string };
      const codec = new SignedCodec(
        new Keyring(c.keys.map((k) => ({ id: k.id, secret: Buffer.from(k.secret, 'base64') }))),
        { ttlSeconds: c.ttl, now: () => c.clock * 1000 },
      );
      const b = { method: c.method, params: c.params === '' ? undefined : c.params, principal: c.principal };
      let got: { token?: string; kind?: string };
      try {
        got = { token: codec.seal(b, c.state) };
      } catch (e) {
        got = { kind: e instanceof InputError ? 'input' : e instanceof ConfigError ? 'config' : `other: ${String(e)}` };
      }
      const ctx = `case ${i}: ${JSON.stringify(c).slice(0, 400)}\nGo: ${String(want.error)}`;
      if (want.token !== undefined) {
        assert.equal(got.token, want.token, ctx);
        assert.equal(codec.open(b, got.token), codec.open(b, want.token));
        tokens++;
      } else {
        assert.equal(got.kind, want.kind, ctx);
        kinds[want.kind as 'input' | 'config']++;
      }
    });
    // The generator must reach every outcome.
    assert.ok(tokens > 800 && kinds.input > 20 && kinds.config > 20, `tokens ${tokens}, refused ${JSON.stringify(kinds)}`);
  });

  // testdata/deep-nesting.json holds tokens the Go library made (snodo.test.ts checks this codec
  // against them): made again here, they must still be Go's, so that the file cannot drift.
  it('agrees with the deep-nesting vectors, which are Go\'s own tokens', async () => {
    interface Vector {
      id: string;
      keys: { id: string; secret_hex: string }[];
      ttl: number;
      clock: number;
      method: string;
      params_json: string;
      principal_json: string;
      data_json: string;
      expected: { token?: string; raises?: boolean };
    }
    const file = path.join(packageRoot, 'testdata', 'deep-nesting.json');
    const v = JSON.parse(readFileSync(file, 'utf8')) as { seal_vectors: Vector[]; seal_error_vectors: Vector[] };
    const all = [...v.seal_vectors, ...v.seal_error_vectors];
    const input = all.map((c) =>
      JSON.stringify({
        keys: c.keys.map((k) => ({ id: k.id, secret: Buffer.from(k.secret_hex, 'hex').toString('base64') })),
        ttl: c.ttl,
        clock: c.clock,
        method: c.method,
        params: c.params_json,
        principal: c.principal_json,
        state: c.data_json,
      }),
    );
    const lines = await goRunInput(input.join('\n') + '\n', 'seal');
    assert.equal(lines.length, all.length);
    all.forEach((c, i) => {
      const got = JSON.parse(lines[i] as string) as { token?: string; kind?: string };
      if (c.expected.raises === true) {
        assert.equal(got.kind, 'config', c.id);
      } else {
        assert.equal(got.token, c.expected.token, c.id);
      }
    });
  });
});
