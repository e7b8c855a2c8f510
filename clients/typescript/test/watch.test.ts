// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The watcher of a mounted Secret volume, driven the way the kubelet drives one (SecretVolume: a
// new timestamped directory, one rename of ..data, the old directory removed): it follows the
// swap, never pairs one snapshot's keyring with another's token-ttl, keeps its last good keyring
// when a bad one arrives and says what is wrong, and takes the next good one.

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { KeyringWatcher, loadKeyringFile, parseKeyring, type Keyring } from '../src/index.js';
import { SecretVolume, keyringJSON, newKey } from './harness.js';

function next<T>(subscribe: (fn: (v: T) => void) => () => void, pred: (v: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve) => {
    const off = subscribe((v) => {
      if (pred(v)) {
        off();
        resolve(v);
      }
    });
  });
}

describe('KeyringWatcher', () => {
  const volumes: SecretVolume[] = [];
  const watchers: KeyringWatcher[] = [];
  const volume = (): SecretVolume => {
    const v = new SecretVolume();
    volumes.push(v);
    return v;
  };
  after(() => {
    watchers.forEach((w) => {
      w.close();
    });
    volumes.forEach((v) => {
      v.remove();
    });
  });

  it('follows the kubelet\'s ..data swap, with the token-ttl of the same snapshot', async () => {
    const v = volume();
    const a = [newKey('a')];
    const b = [newKey('b'), newKey('a')];
    v.write({ 'keyring.json': keyringJSON(a), 'token-ttl': '300\n' });
    const w = await KeyringWatcher.open(v.dir, { debounceMs: 10 });
    watchers.push(w);
    assert.deepEqual(w.keyring().ids, ['a']);
    assert.equal(w.keyring().maxTokenTTL, 300);
    const changed = next<Keyring>((fn) => w.onChange(fn));
    v.write({ 'keyring.json': keyringJSON(b), 'token-ttl': '120' });
    const r = await changed;
    assert.deepEqual(r.ids, ['b', 'a']);
    assert.equal(r.maxTokenTTL, 120);
    assert.equal(r.fingerprint, parseKeyring(keyringJSON(b)).fingerprint);
    assert.equal(w.keyring(), r);
  });

  it('keeps its last good keyring when a bad one arrives, says what is wrong, and takes the next good one', async () => {
    const v = volume();
    const good = [newKey('good')];
    v.write({ 'keyring.json': keyringJSON(good) });
    const errors: Error[] = [];
    let onError: ((e: Error) => void) | undefined;
    const w = await KeyringWatcher.open(v.dir, {
      debounceMs: 10,
      onError: (e) => {
        errors.push(e);
        onError?.(e);
      },
    });
    watchers.push(w);
    const before = w.keyring();

    const reported = new Promise<Error>((resolve) => (onError = resolve));
    v.write({ 'keyring.json': `{"keys":[{"id":"x","secret":"${Buffer.alloc(16).toString('base64')}"}]}` });
    const e = await reported;
    assert.match(e.message, /keyring\.json: keys\[0\] \(id "x"\): secret is 16 bytes: at least 32 are required/);
    assert.equal(w.keyring(), before, 'the last good keyring stays in service');
    assert.equal(w.error, e);

    const ttlReported = new Promise<Error>((resolve) => (onError = resolve));
    v.write({ 'keyring.json': keyringJSON([newKey('other')]), 'token-ttl': '901' });
    assert.match((await ttlReported).message, /token-ttl: token-ttl is "901": want whole seconds from 1 to 900/);
    assert.equal(w.keyring(), before);

    const next2 = [newKey('next')];
    const changed = next<Keyring>((fn) => w.onChange(fn));
    v.write({ 'keyring.json': keyringJSON(next2) });
    assert.deepEqual((await changed).ids, ['next']);
    assert.equal(w.error, undefined);
    assert.equal(errors.length, 2, 'each bad file reported once');
    for (const err of errors) {
      assert.ok(!err.message.includes(good[0]?.secret ?? '?'), 'no key bytes in errors');
    }
  });

  it('refuses to open on an invalid keyring', async () => {
    const v = volume();
    v.write({ 'keyring.json': '{"keys":[]}' });
    await assert.rejects(KeyringWatcher.open(v.dir), /keyring\.json: "keys" is empty/);
  });

  it('follows a plain file rewritten in place', async () => {
    const v = volume();
    const file = path.join(v.dir, 'keyring.json');
    writeFileSync(file, keyringJSON([newKey('p1')]));
    const w = await KeyringWatcher.open(file, { debounceMs: 10 });
    watchers.push(w);
    const changed = next<Keyring>((fn) => w.onChange(fn));
    writeFileSync(file, keyringJSON([newKey('p2')]));
    assert.deepEqual((await changed).ids, ['p2']);
  });

  it('never reads one snapshot\'s keyring with another\'s token-ttl (no torn reads)', async () => {
    const v = volume();
    // Two snapshots whose files tell each other apart: keyring A goes with 100, keyring B with 200.
    const A = keyringJSON([newKey('A')]);
    const B = keyringJSON([newKey('B')]);
    const pairs = new Map([
      [parseKeyring(A).fingerprint, 100],
      [parseKeyring(B).fingerprint, 200],
    ]);
    v.write({ 'keyring.json': A, 'token-ttl': '100' });
    const race = { swapping: true, reads: 0, attempts: 0 };
    const writer = (async () => {
      // One swap while each read is under way, after 0 to 7 turns of the event loop so that it falls
      // between any two of the read's file operations, until enough reads have raced a swap.
      for (let i = 0; i < 2000 && race.reads < 200; i++) {
        const seen = race.attempts;
        while (race.attempts === seen) {
          await new Promise((r) => setImmediate(r));
        }
        for (let t = i % 8; t > 0; t--) {
          await new Promise((r) => setImmediate(r));
        }
        v.write(i % 2 === 0 ? { 'keyring.json': B, 'token-ttl': '200' } : { 'keyring.json': A, 'token-ttl': '100' });
      }
      race.swapping = false;
    })();
    while (race.swapping) {
      let r: Keyring;
      race.attempts++;
      try {
        r = await loadKeyringFile(path.join(v.dir, 'keyring.json'));
      } catch (e) {
        // A read whose every retry found its snapshot gone is no torn read.
        assert.match((e as Error).message, /no such file or directory|changed while it was read/);
        continue;
      }
      assert.equal(r.maxTokenTTL, pairs.get(r.fingerprint), `torn read: ${r.ids.join()} with token-ttl ${r.maxTokenTTL}`);
      race.reads++;
    }
    await writer;
    assert.ok(race.reads >= 200, `only ${race.reads} reads raced the swaps`);
  });
});
