// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// MRTR round trips through the real SDK, server and client, across a whole rotation: two
// TypeScript replicas behind one balancer, each with its own mounted Secret volume, which the
// kubelet updates at different moments (here: one replica, then the other, at every phase). The
// rotation's phases keep every state openable on every replica: 0 rejected.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { KeyringWatcher, parseKeyring, type Keyring } from '../src/index.js';
import { SecretVolume, connectClient, flow, keyringJSON, newKey, startBalancer } from './harness.js';
import { startReplica, type Replica } from './tsreplica.js';

/** Resolves once w has put in service a keyring of this fingerprint. */
function changed(w: KeyringWatcher, fingerprint: string): Promise<Keyring> {
  return new Promise((resolve) => {
    const check = (r: Keyring): void => {
      if (r.fingerprint === fingerprint) {
        off();
        resolve(r);
      }
    };
    const off = w.onChange(check);
    check(w.keyring());
  });
}

describe('an MRTR rotation through the SDK', () => {
  const k1 = newKey('k1');
  const k2 = newKey('k2');
  const phases = [[k1], [k1, k2], [k2, k1], [k2]];
  const volumes = [new SecretVolume(), new SecretVolume()];
  const watchers: KeyringWatcher[] = [];
  const replicas: Replica[] = [];
  let balancer: Awaited<ReturnType<typeof startBalancer>>;

  before(async () => {
    for (const [i, v] of volumes.entries()) {
      v.write({ 'keyring.json': keyringJSON(phases[0] ?? []), 'token-ttl': '300\n' });
      const w = await KeyringWatcher.open(v.dir, { debounceMs: 20 });
      watchers.push(w);
      replicas.push(await startReplica(`ts-${i}`, w));
    }
    balancer = await startBalancer(replicas.map((r) => r.url));
  });

  after(async () => {
    await balancer.close();
    for (const r of replicas) {
      await r.close();
    }
    for (const w of watchers) {
      w.close();
    }
    for (const v of volumes) {
      v.remove();
    }
  });

  it('completes every flow at every phase, 0 rejected', async () => {
    const client = await connectClient(balancer.url);
    const seen = new Set<string>();
    let flows = 0;
    for (const keys of phases) {
      for (const [i, v] of volumes.entries()) {
        v.write({ 'keyring.json': keyringJSON(keys), 'token-ttl': '300\n' });
        const r = await changed(watchers[i] as KeyringWatcher, parseKeyring(keyringJSON(keys)).fingerprint);
        assert.deepEqual(r.ids, keys.map((k) => k.id));
        for (let n = 0; n < 6; n++) {
          const res = await flow(client, `city-${flows++}`);
          assert.equal(res.login, 'octocat');
          seen.add(`${res.sealedBy}>${res.openedBy}:${res.sealKey}`);
        }
      }
    }
    await client.close();
    assert.equal(replicas.reduce((n, r) => n + r.rejected, 0), 0, 'rejected states');
    assert.equal(replicas.reduce((n, r) => n + r.completed, 0), flows);
    // Both replicas sealed states the other opened, with both keys.
    for (const want of ['ts-0>ts-1:k1', 'ts-1>ts-0:k1', 'ts-0>ts-1:k2', 'ts-1>ts-0:k2']) {
      assert.ok(seen.has(want), `no flow ${want} among ${[...seen].join(' ')}`);
    }
  });
});

