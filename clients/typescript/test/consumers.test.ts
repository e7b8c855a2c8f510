// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The consumer contract's shared vectors (docs/consumers.md), made by the Go library
// (hack/consumervectors) and read in place from testdata/consumers at the repository's root (or
// the folder MRTR_CONSUMER_VECTORS names): keyring files with their fingerprints, invalid ones with
// Go's error, token-ttl files, directory swap sequences replayed on a real directory against
// the watcher, and tokens sealed for one request and opened for another (bindings.json).

import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  ConfigError,
  InvalidRequestStateError,
  Keyring,
  KeyringWatcher,
  Metrics,
  parseKeyring,
  parseTokenTTL,
  RESULTS,
  SIGNED_FORMAT,
  SignedCodec,
} from '../src/index.js';
import { repoRoot } from './paths.js';

const dir = process.env.MRTR_CONSUMER_VECTORS ?? path.join(repoRoot, 'testdata', 'consumers');
const present = existsSync(path.join(dir, 'keyrings.json'));
const skip = present ? false : `no consumer vectors in ${dir}`;

function load(name: 'keyrings.json'): KeyringVectors;
function load(name: 'token-ttl.json'): TTLVectors;
function load(name: 'swaps.json'): SwapVectors;
function load(name: 'bindings.json'): BindingVectors;
function load(name: 'rejections.json'): RejectionVectors;
function load(name: string): unknown {
  return JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as unknown;
}

// An empty file's data is null (Go's nil []byte).
function bytes(c: { data: string | null; padTo?: number }): Buffer {
  const b = Buffer.from(c.data ?? '', 'base64');
  return c.padTo !== undefined ? Buffer.concat([b, Buffer.alloc(c.padTo - b.length, 0x20)]) : b;
}

interface KeyringVectors {
  valid: { name: string; data: string; padTo?: number; fingerprint: string; keys: { id: string; secret: string }[] }[];
  invalid: { name: string; data: string | null; padTo?: number; rule: string; entry?: number; error: string }[];
}

interface TTLVectors {
  valid: { name: string; data: string; seconds: number }[];
  invalid: { name: string; data: string | null; error: string }[];
}

interface Expect {
  fingerprint?: string;
  keys?: string[];
  tokenTTLSeconds: number | null;
  rejected: boolean;
  refused?: boolean;
  error?: string;
  acknowledge: boolean;
}

interface Op {
  op: 'mkdir' | 'write' | 'symlink' | 'rename' | 'remove' | 'removeAll';
  path: string;
  data?: string;
  target?: string;
  to?: string;
  expect?: Expect;
}

interface SwapVectors {
  sequences: { name: string; setup: Op[]; start: Expect; steps: Op[] }[];
}

interface BindingRequest {
  method: string;
  params: unknown;
  principal: unknown;
}

interface BindingVectors {
  keyring: { data: string };
  nowUnix: number;
  ttlSeconds: number;
  state: string;
  cases: {
    name: string;
    seal: BindingRequest;
    open: BindingRequest;
    results: Record<string, string>;
    tokens: Record<string, string>;
  }[];
}

interface RejectionVectors {
  request: BindingRequest;
  otherRequest: BindingRequest;
  cases: {
    name: string;
    format: string;
    keyring: { data: string };
    token: string;
    tokenPadTo?: number;
    openedFor: 'request' | 'otherRequest';
    nowMs: number;
    ttlSeconds?: number;
    result: string;
  }[];
}

// pkg/token/testdata/rs2/token-ttl.json (made by hack/consumervectors in pkg's own testdata): a
// codec's TTL against the token-ttl its keyring declares.
interface SealTTLVectors {
  cases: { name: string; ttl_s: number; token_ttl_s: number | null; seals: boolean }[];
}

function binding(r: BindingRequest): { method: string; params: string; principal: string } {
  return { method: r.method, params: JSON.stringify(r.params), principal: JSON.stringify(r.principal) };
}

function apply(root: string, o: Op): void {
  const p = path.join(root, o.path);
  switch (o.op) {
    case 'mkdir':
      mkdirSync(p);
      break;
    case 'write':
      writeFileSync(p, Buffer.from(o.data ?? '', 'base64'));
      break;
    case 'symlink':
      symlinkSync(o.target ?? '', p);
      break;
    case 'rename':
      renameSync(p, path.join(root, o.to ?? ''));
      break;
    case 'remove':
      unlinkSync(p);
      break;
    case 'removeAll':
      rmSync(p, { recursive: true, force: true });
      break;
  }
}

describe('the consumer contract\'s vectors', { skip }, () => {
  it('keyrings.json: valid files, their keys and fingerprints', () => {
    for (const c of load('keyrings.json').valid) {
      const r = parseKeyring(bytes(c));
      assert.equal(r.fingerprint, c.fingerprint, c.name);
      assert.deepEqual(
        r.keys.map((k) => ({ id: k.id, secret: Buffer.from(k.secret).toString('base64') })),
        c.keys.map((k) => ({ id: k.id, secret: k.secret })),
        c.name,
      );
    }
  });

  it('keyrings.json: invalid files refused, with Go\'s message', () => {
    for (const c of load('keyrings.json').invalid) {
      assert.throws(() => parseKeyring(bytes(c)), (e: Error) => {
        assert.equal(e.message, c.error, c.name);
        if (c.entry !== undefined) {
          assert.ok(e.message.includes(`keys[${c.entry}]`), c.name);
        }
        return true;
      });
    }
  });

  it('bindings.json: Go\'s Signed tokens sealed byte for byte; each open counts the file\'s result', () => {
    const v = load('bindings.json');
    assert.equal(v.cases.length, 6);
    for (const c of v.cases) {
      const metrics = new Metrics();
      const codec = new SignedCodec(parseKeyring(Buffer.from(v.keyring.data, 'base64')), {
        ttlSeconds: v.ttlSeconds,
        now: () => v.nowUnix * 1000,
        metrics,
      });
      const token = codec.seal(binding(c.seal), v.state);
      assert.equal(token, c.tokens[SIGNED_FORMAT], c.name);
      const want = c.results[SIGNED_FORMAT];
      if (want === 'ok') {
        assert.deepEqual(JSON.parse(codec.open(binding(c.open), token)), JSON.parse(v.state), c.name);
      } else {
        assert.throws(() => codec.open(binding(c.open), token), InvalidRequestStateError, c.name);
      }
      for (const r of RESULTS) {
        assert.equal(metrics.opened(SIGNED_FORMAT, r), r === want ? 1 : 0, `${c.name}: ${r}`);
      }
    }
  });

  it('rejections.json: each Signed open counts the file\'s result, the precedence of two included', () => {
    const v = load('rejections.json');
    const cases = v.cases.filter((c) => c.format === SIGNED_FORMAT);
    assert.ok(cases.length >= 10, `${cases.length} Signed cases`);
    for (const c of cases) {
      const metrics = new Metrics();
      const codec = new SignedCodec(parseKeyring(Buffer.from(c.keyring.data, 'base64')), {
        ttlSeconds: c.ttlSeconds,
        now: () => c.nowMs,
        metrics,
      });
      const token = c.tokenPadTo === undefined ? c.token : c.token.padEnd(c.tokenPadTo, 'A');
      const b = binding(c.openedFor === 'otherRequest' ? v.otherRequest : v.request);
      if (c.result === 'ok') {
        codec.open(b, token);
      } else {
        assert.throws(() => codec.open(b, token), InvalidRequestStateError, c.name);
      }
      for (const r of RESULTS) {
        assert.equal(metrics.opened(SIGNED_FORMAT, r), r === c.result ? 1 : 0, `${c.name}: ${r}`);
      }
    }
  });

  it('pkg/token/testdata/rs2/token-ttl.json: a TTL beyond the keyring\'s token-ttl never seals', () => {
    const v = JSON.parse(readFileSync(path.join(repoRoot, 'pkg', 'token', 'testdata', 'rs2', 'token-ttl.json'), 'utf8')) as SealTTLVectors;
    assert.ok(v.cases.length > 0);
    const now = 1_700_000_000_000;
    const b = { method: 'tools/call', params: '{"name":"t"}', principal: 'null' };
    const keys = parseKeyring(Buffer.from(load('bindings.json').keyring.data, 'base64')).keys;
    for (const c of v.cases) {
      const ring = new Keyring(keys, c.token_ttl_s ?? 0);
      const codec = new SignedCodec(ring, { ttlSeconds: c.ttl_s, now: () => now });
      if (!c.seals) {
        assert.throws(() => codec.seal(b, '{}'), (e: Error) => e instanceof ConfigError && e.message.includes('tokenTTL'), c.name);
        continue;
      }
      const token = codec.seal(b, '{}');
      const payload = JSON.parse(Buffer.from(token.split('.')[2] ?? '', 'base64url').toString('utf8')) as number[];
      assert.equal(payload[2], now / 1000 + c.ttl_s, `${c.name}: the token expires the TTL after the seal`);
      assert.equal(payload[1], now / 1000, c.name);
    }
  });

  it('token-ttl.json', () => {
    const v = load('token-ttl.json');
    for (const c of v.valid) {
      assert.equal(parseTokenTTL(Buffer.from(c.data, 'base64')), c.seconds, c.name);
    }
    for (const c of v.invalid) {
      assert.throws(() => parseTokenTTL(Buffer.from(c.data ?? '', 'base64')), { message: c.error }, c.name);
    }
  });

  for (const seq of present ? load('swaps.json').sequences : []) {
    it(`swaps.json: ${seq.name}`, async () => {
      const root = mkdtempSync(path.join(tmpdir(), 'mrtr-swaps-'));
      const file = path.join(root, 'keyring.json');
      const named = (msg: string | undefined): string | undefined => msg?.split('$MRTR_KEYRING_DIR').join(root);
      try {
        for (const o of seq.setup) {
          apply(root, o);
        }
        if (seq.start.refused === true) {
          await assert.rejects(KeyringWatcher.open(file), { message: named(seq.start.error) });
          return;
        }
        const w = await KeyringWatcher.open(file, { debounceMs: 5 });
        try {
          const check = (e: Expect, before: string, where: string): void => {
            const r = w.keyring();
            assert.equal(r.fingerprint, e.fingerprint, where);
            assert.deepEqual(r.ids, e.keys, where);
            assert.equal(r.maxTokenTTL === 0 ? null : r.maxTokenTTL, e.tokenTTLSeconds, where);
            assert.equal(w.error !== undefined, e.rejected, `${where}: ${String(w.error?.message)}`);
            if (e.rejected) {
              assert.equal(w.error?.message, named(e.error), where);
            }
            assert.equal(r.fingerprint !== before, e.acknowledge, `${where}: acknowledge`);
          };
          check(seq.start, '', 'start');
          for (const [i, o] of seq.steps.entries()) {
            const before = w.keyring().fingerprint;
            apply(root, o);
            await w.reload();
            check(o.expect as Expect, before, `step ${i} (${o.op} ${o.path})`);
          }
        } finally {
          w.close();
        }
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });
  }
});
