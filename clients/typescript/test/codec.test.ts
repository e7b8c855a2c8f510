// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// What the codec promises beyond the vectors: a keyring that changes between calls (a token sealed
// with a key opens while the key is in the keyring, under any position, and not after it left),
// the declared token-ttl that no seal may outlive, and the binding (member order and _meta do not
// matter, types and the principal do).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

import { ConfigError, InvalidRequestStateError, Keyring, SignedCodec, type KeyringSource } from '../src/index.js';

const k1 = { id: 'k1', secret: randomBytes(32) };
const k2 = { id: 'k2', secret: randomBytes(32) };
const b = { method: 'tools/call', params: '{"name":"t","arguments":{"a":1,"b":[true,null]}}', principal: '"user-1"' };

describe('SignedCodec', () => {
  it('follows the keyring of its source from one call to the next', () => {
    let ring = new Keyring([k1]);
    const src: KeyringSource = { keyring: () => ring };
    const c = new SignedCodec(src);
    const t1 = c.seal(b, '{"s":1}');
    assert.match(t1, /^mrtr2\.k1\./);
    ring = new Keyring([k1, k2]);
    assert.equal(c.open(b, t1), '{"s":1}');
    assert.match(c.seal(b, '{}'), /^mrtr2\.k1\./, 'keys[0] seals');
    ring = new Keyring([k2, k1]);
    const t2 = c.seal(b, '{"s":2}');
    assert.match(t2, /^mrtr2\.k2\./);
    assert.equal(c.open(b, t1), '{"s":1}', 'the old key still opens');
    ring = new Keyring([k2]);
    assert.equal(c.open(b, t2), '{"s":2}');
    assert.throws(() => c.open(b, t1), InvalidRequestStateError, 'a removed key opens nothing');
  });

  it('never seals a token that outlives the declared token-ttl', () => {
    const c = new SignedCodec(new Keyring([k1], 120), { ttlSeconds: 300 });
    assert.throws(() => c.seal(b, '{}'), (e: Error) => e instanceof ConfigError && /longer than the 120s the keyring declares/.test(e.message));
    assert.ok(new SignedCodec(new Keyring([k1], 300), { ttlSeconds: 300 }).seal(b, '{}').startsWith('mrtr2.'));
    assert.throws(() => new SignedCodec(new Keyring([k1]), { ttlSeconds: 901 }), ConfigError);
  });

  it('expires tokens, and caps them at its own ttl', () => {
    let now = 1_800_000_000_000;
    const c = new SignedCodec(new Keyring([k1]), { ttlSeconds: 60, now: () => now });
    const t = c.seal(b, '{}');
    now += 59_000;
    assert.equal(c.open(b, t), '{}');
    now += 1_000;
    assert.throws(() => c.open(b, t), InvalidRequestStateError);
    const long = new SignedCodec(new Keyring([k1]), { ttlSeconds: 120, now: () => 1_800_000_000_000 }).seal(b, '{}');
    now = 1_800_000_000_000;
    assert.throws(() => c.open(b, long), InvalidRequestStateError, 'a 120 s token under a 60 s codec');
  });

  it('binds the params as values, but not their _meta, and binds types and the principal', () => {
    const c = new SignedCodec(new Keyring([k1]));
    const t = c.seal(b, '{}');
    const same = { ...b, params: ' {"arguments":{"b":[true,null],"a":1},"name":"t","_meta":{"progressToken":3},"requestState":"x"} ' };
    assert.equal(c.open(same, t), '{}');
    for (const other of [
      { ...b, params: '{"name":"t","arguments":{"a":1.0,"b":[true,null]}}' },
      { ...b, params: '{"name":"t","arguments":{"a":1,"b":[true,null],"c":0}}' },
      { ...b, params: '{"name":"t","arguments":{"A":1,"b":[true,null]}}' },
      { ...b, method: 'prompts/get' },
      { ...b, principal: '"user-2"' },
      { ...b, principal: 'null' },
    ]) {
      assert.throws(() => c.open(other, t), InvalidRequestStateError, JSON.stringify(other));
    }
  });

  it('refuses tampered and foreign tokens', () => {
    const c = new SignedCodec(new Keyring([k1]));
    const t = c.seal(b, '{"role":"user"}');
    const [prefix, kid, enc, mac] = t.split('.') as [string, string, string, string];
    const forged = Buffer.from(Buffer.from(enc, 'base64url').toString().replace('user', 'root')).toString('base64url');
    for (const bad of [
      `${prefix}.${kid}.${forged}.${mac}`,
      `${prefix}.k2.${enc}.${mac}`,
      `${prefix}.${kid}.${enc}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`, // the MAC is compared as text
      `mrtr1.${enc}.${mac}`,
      t + '.x',
      '',
      'v1.eyJ9.abc',
    ]) {
      assert.throws(() => c.open(b, bad), InvalidRequestStateError, bad);
    }
    assert.throws(() => new SignedCodec(new Keyring([{ id: 'k1', secret: randomBytes(32) }])).open(b, t), InvalidRequestStateError);
  });

  it('names the server\'s mistakes as ConfigErrors', () => {
    const c = new SignedCodec(new Keyring([k1]));
    assert.throws(() => c.seal({ ...b, method: '' }, '{}'), { message: 'token: Binding.Method: is empty' });
    assert.throws(() => c.seal({ ...b, principal: '' }, '{}'), /token: Binding.Principal: is empty/);
    assert.throws(() => c.seal({ ...b, params: '[1]' }, '{}'), /token: Binding.Params: is not a JSON object/);
    assert.throws(() => c.seal(b, '{"a":1,"a":2}'), (e: Error) => e instanceof ConfigError && e.message.startsWith('token: state:'));
  });
});
