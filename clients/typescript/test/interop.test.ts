// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// A Go replica (the official Go SDK with pkg/token's Signed codec through mcpstate,
// test/goreplica, `go run`) and a TypeScript replica (the official TypeScript SDK with this
// package) behind one balancer, through a whole rotation: the SDK's client sends round 1 to one
// and round 2 to the other, so each opens the other's states. 0 rejected.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { KeyringWatcher, parseKeyring, type Keyring } from '../src/index.js';
import { goServe, type GoReplica } from './gorun.js';
import { SecretVolume, connectClient, flow, keyringJSON, newKey, startBalancer } from './harness.js';
import { startReplica, type Replica } from './tsreplica.js';

function loaded(w: KeyringWatcher, fingerprint: string): Promise<Keyring> {
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

describe('a Go and a TypeScript replica behind one balancer', () => {
  const k1 = newKey('k1');
  const k2 = newKey('k2');
  const phases = [[k1], [k1, k2], [k2, k1], [k2]];
  const goVolume = new SecretVolume();
  const tsVolume = new SecretVolume();
  let goReplica: GoReplica;
  let watcher: KeyringWatcher;
  let tsReplica: Replica;
  let balancer: Awaited<ReturnType<typeof startBalancer>>;

  before(async () => {
    for (const v of [goVolume, tsVolume]) {
      v.write({ 'keyring.json': keyringJSON(phases[0] ?? []), 'token-ttl': '300\n' });
    }
    goReplica = await goServe('-keyring-dir', goVolume.dir, '-replica', 'go');
    watcher = await KeyringWatcher.open(tsVolume.dir, { debounceMs: 20 });
    tsReplica = await startReplica('ts', watcher);
    balancer = await startBalancer([`http://${goReplica.addr}/mcp`, tsReplica.url]);
  });

  after(async () => {
    await balancer.close();
    await tsReplica.close();
    watcher.close();
    await goReplica.close();
    goVolume.remove();
    tsVolume.remove();
  });

  it('opens each other\'s states at every phase of a rotation, 0 rejected', async () => {
    const client = await connectClient(balancer.url);
    const seen = new Set<string>();
    let flows = 0;
    for (const keys of phases) {
      const fp = parseKeyring(keyringJSON(keys)).fingerprint;
      // The Go replica's volume first, then the TypeScript one's: each phase is safe either way.
      goVolume.write({ 'keyring.json': keyringJSON(keys), 'token-ttl': '300\n' });
      await goReplica.loaded(fp);
      for (let n = 0; n < 6; n++) {
        const r = await flow(client, `city-${flows++}`);
        assert.equal(r.login, 'octocat');
        seen.add(`${r.sealedBy}>${r.openedBy}:${r.sealKey}`);
      }
      tsVolume.write({ 'keyring.json': keyringJSON(keys), 'token-ttl': '300\n' });
      await loaded(watcher, fp);
      for (let n = 0; n < 6; n++) {
        const r = await flow(client, `city-${flows++}`);
        assert.equal(r.login, 'octocat');
        seen.add(`${r.sealedBy}>${r.openedBy}:${r.sealKey}`);
      }
    }
    await client.close();
    assert.equal(tsReplica.rejected, 0, `rejected states; Go replica's log:\n${goReplica.stderr()}`);
    assert.doesNotMatch(goReplica.stderr(), /rejected request state/);
    for (const want of ['go>ts:k1', 'ts>go:k1', 'go>ts:k2', 'ts>go:k2']) {
      assert.ok(seen.has(want), `no flow ${want} among ${[...seen].join(' ')}`);
    }
  });
});
