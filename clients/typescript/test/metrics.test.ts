// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The consumer metrics of the contract: the codec counts each seal and each open by its result, the
// watcher the keyring in service and its failed reloads, and the exposition has Go's names and labels.

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { ANONYMOUS, KeyringWatcher, Metrics, SignedCodec, parseKeyring } from '../src/index.js';
import { SecretVolume, keyringJSON, newKey } from './harness.js';

const b = { method: 'tools/call', params: '{"name":"a"}', principal: ANONYMOUS };
const other = { method: 'tools/call', params: '{"name":"b"}', principal: ANONYMOUS };

describe('Metrics', () => {
  const volumes: SecretVolume[] = [];
  after(() => {
    volumes.forEach((v) => {
      v.remove();
    });
  });

  it('counts every seal and every open of the codec by its result', () => {
    const m = new Metrics();
    let now = 1_800_000_000_000;
    const codec = new SignedCodec(parseKeyring(keyringJSON([newKey('k1')])), { metrics: m, now: () => now });
    const foreign = new SignedCodec(parseKeyring(keyringJSON([newKey('k9')])), { now: () => now });
    const tok = codec.seal(b, '{"step":1}');
    codec.open(b, tok);
    const flipped = tok.slice(0, -1) + (tok.endsWith('A') ? 'B' : 'A');
    for (const [t, binding] of [
      [foreign.seal(b, '{}'), b],
      [flipped, b],
      ['not a token', b],
      ['a'.repeat(20_000), b],
      [tok, other],
    ] as const) {
      assert.throws(() => codec.open(binding, t));
    }
    now += 3_600_000;
    assert.throws(() => codec.open(b, tok));
    assert.equal(m.sealed('Signed'), 1);
    const got = Object.fromEntries(
      (['ok', 'expired', 'unknown_key', 'bad_mac', 'binding_mismatch', 'malformed', 'too_large'] as const).map((r) => [r, m.opened('Signed', r)]),
    );
    assert.deepEqual(got, { ok: 1, expired: 1, unknown_key: 1, bad_mac: 1, binding_mismatch: 1, malformed: 1, too_large: 1 });
    // Bytes, as Go counts them: 9,000 characters of 2 bytes each are over the 16 KiB limit.
    assert.throws(() => codec.open(b, 'é'.repeat(9_000)));
    assert.equal(m.opened('Signed', 'too_large'), 2);
    assert.equal(m.opened('Signed', 'malformed'), 1);
    const text = m.exposition();
    assert.match(text, /^mrtr_consumer_tokens_opened_total\{format="Signed",result="unknown_key"\} 1$/m);
    assert.match(text, /^mrtr_consumer_tokens_sealed_total\{format="Signed"\} 1$/m);
  });

  it('follows the watcher: the keyring in service and the failed reloads', async () => {
    const v = new SecretVolume();
    volumes.push(v);
    const a = [newKey('a')];
    v.write({ 'keyring.json': keyringJSON(a) });
    const m = new Metrics();
    const w = await KeyringWatcher.open(v.dir, { metrics: m, onError: () => undefined, persistent: false });
    try {
      assert.equal(m.fingerprint, parseKeyring(keyringJSON(a)).fingerprint);
      v.write({ 'keyring.json': '{"keys":[]}' });
      await w.reload().catch(() => undefined);
      assert.equal(m.reloadFailures, 1);
      assert.equal(m.fingerprint, parseKeyring(keyringJSON(a)).fingerprint);
      const next = [newKey('b'), ...a];
      v.write({ 'keyring.json': keyringJSON(next) });
      await w.reload();
      assert.equal(m.fingerprint, parseKeyring(keyringJSON(next)).fingerprint);
      assert.match(m.exposition(), new RegExp(`^mrtr_consumer_keyring_info\\{fingerprint="${m.fingerprint}"\\} 1$`, 'm'));
      assert.match(m.exposition(), /^mrtr_consumer_reload_failures_total 1$/m);
    } finally {
      w.close();
    }
  });

  it('counts a snapshot that stays unreadable for one reason once, not at every poll', async () => {
    // As one that stays invalid (Go, Python and Rust count alike); another reason counts again, and
    // so does the same one after a readable snapshot.
    const dir = mkdtempSync(path.join(tmpdir(), 'mrtr-unreadable-'));
    const file = path.join(dir, 'keyring.json');
    writeFileSync(file, keyringJSON([newKey('a')]));
    const m = new Metrics();
    const seen: Error[] = [];
    const w = await KeyringWatcher.open(dir, { metrics: m, onError: (e) => seen.push(e), persistent: false });
    const unreadable = (how: 'dir' | 'loop'): void => {
      rmSync(file, { recursive: true, force: true });
      if (how === 'dir') {
        mkdirSync(file); // reading it fails: it is a directory
      } else {
        symlinkSync('keyring.json', file); // reading it fails: a link to itself
      }
    };
    try {
      unreadable('dir');
      for (let i = 0; i < 3; i++) {
        await w.reload().catch(() => undefined);
      }
      assert.deepEqual([m.reloadFailures, seen.length], [1, 1]);
      assert.notEqual(w.error, undefined);
      unreadable('loop');
      await w.reload().catch(() => undefined);
      assert.deepEqual([m.reloadFailures, seen.length], [2, 2]);
      rmSync(file);
      writeFileSync(file, keyringJSON([newKey('a')]));
      await w.reload();
      assert.equal(w.error, undefined);
      unreadable('dir');
      await w.reload().catch(() => undefined);
      assert.deepEqual([m.reloadFailures, seen.length], [3, 3]);
    } finally {
      w.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes the acknowledgement state as one series at 1', () => {
    const m = new Metrics();
    assert.doesNotMatch(m.exposition(), /mrtr_consumer_ack_state\{/);
    m.ackStateChanged('pending');
    m.ackStateChanged('acknowledged');
    assert.match(m.exposition(), /^mrtr_consumer_ack_state\{state="acknowledged"\} 1$/m);
    assert.match(m.exposition(), /^mrtr_consumer_ack_state\{state="pending"\} 0$/m);
  });
});
