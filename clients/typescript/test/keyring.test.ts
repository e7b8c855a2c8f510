// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// parseKeyring and parseTokenTTL against Go's keyring.Parse and keyring.ParseTokenTTL on the same
// files: Go's answers are made by the Go library itself (test/goreplica, `go run`), for valid
// keyrings (the fingerprint and ids) and for invalid ones (the error, word for word).

import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { Keyring, parseKeyring, parseTokenTTL } from '../src/index.js';
import { goRun } from './gorun.js';

const b64 = (n: number, fill?: number): string => (fill === undefined ? randomBytes(n) : Buffer.alloc(n, fill)).toString('base64');
const k = (id: string, secret = b64(32)): string => `{"id":${JSON.stringify(id)},"secret":"${secret}"}`;
const doc = (...keys: string[]): string => `{"keys":[${keys.join(',')}]}`;

// Documents, valid and invalid, each a case that names what it probes.
const cases: Record<string, string | Buffer> = {
  one: doc(k('a')),
  two: doc(k('k2'), k('k1')),
  eight: doc(...['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((id) => k(id))),
  nine: doc(...['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((id) => k(id))),
  long_secret: doc(k('a', b64(64))),
  whitespace: ` \n\t{ "keys" : [ { "secret" : "${b64(32, 1)}" , "id" : "x-_9" } ] }\r\n`,
  escaped_names: `{"\\u006beys":[{"\\u0069d":"\\u0061","secret":"${b64(32, 2)}"}]}`,
  id32: doc(k('a'.repeat(32))),
  id33: doc(k('a'.repeat(33))),
  id_empty: doc(k('')),
  id_bad_byte: doc(k('a.b')),
  id_unicode: doc(k('é')),
  dup_id: doc(k('a'), k('b'), k('a')),
  short_secret: doc(k('a', b64(31))),
  secret_no_padding: doc(k('a', b64(32).replace(/=+$/, ''))),
  secret_urlsafe: doc(k('a', Buffer.alloc(33, 0xfb).toString('base64url'))),
  secret_linebreak: doc(k('a', b64(48).slice(0, 20) + '\\n' + b64(48).slice(20))),
  secret_nonzero_pad_bits: doc(k('a', b64(32, 0).slice(0, -2) + 'B=')),
  secret_empty: doc(k('a', '')),
  secret_number: `{"keys":[{"id":"a","secret":12}]}`,
  secret_null: `{"keys":[{"id":"a","secret":null}]}`,
  id_object: `{"keys":[{"id":{"x":[1,2]},"secret":"${b64(32)}"}]}`,
  id_list: `{"keys":[{"id":[],"secret":"${b64(32)}"}]}`,
  id_bool: `{"keys":[{"id":true,"secret":"${b64(32)}"}]}`,
  missing_id: `{"keys":[{"secret":"${b64(32)}"}]}`,
  missing_secret: `{"keys":[{"id":"a"}]}`,
  unknown_field: `{"keys":[{"id":"a","secret":"${b64(32)}","note":"x"}]}`,
  unknown_field_secretlike: `{"keys":[{"id":"a","secret":"${b64(32)}","${b64(32)}":"x"}]}`,
  dup_field: `{"keys":[{"id":"a","id":"b","secret":"${b64(32)}"}]}`,
  dup_secret_field: `{"keys":[{"id":"a","secret":"${b64(32)}","secret":"${b64(32)}"}]}`,
  case_field: `{"keys":[{"ID":"a","secret":"${b64(32)}"}]}`,
  unknown_top: `{"keys":[${k('a')}],"extra":1}`,
  unknown_top_first: `{"version":1,"keys":[${k('a')}]}`,
  dup_keys: `{"keys":[${k('a')}],"keys":[${k('b')}]}`,
  missing_keys: '{}',
  keys_empty: '{"keys":[]}',
  keys_null: '{"keys":null}',
  keys_object: '{"keys":{}}',
  keys_string: '{"keys":"a"}',
  entry_string: '{"keys":["a"]}',
  entry_null: '{"keys":[null]}',
  entry_list: '{"keys":[[]]}',
  top_list: `[${k('a')}]`,
  top_string: '"keys"',
  top_number: '12',
  top_null: 'null',
  empty: '',
  spaces: '   \n',
  trailing_data: doc(k('a')) + ' {}',
  trailing_garbage: doc(k('a')) + 'x',
  trailing_comma_list: `{"keys":[${k('a')},]}`,
  trailing_comma_object: `{"keys":[{"id":"a","secret":"${b64(32)}",}]}`,
  missing_colon: `{"keys" [${k('a')}]}`,
  missing_comma: `{"keys":[{"id":"a" "secret":"${b64(32)}"}]}`,
  truncated: doc(k('a')).slice(0, 30),
  truncated_in_string: '{"keys":[{"id":"a","secret":"AAAA',
  control_char_in_secret: `{"keys":[{"id":"a","secret":"AA\u0001A"}]}`,
  bad_escape: `{"keys":[{"id":"a\\x","secret":"${b64(32)}"}]}`,
  bad_unicode_escape: `{"keys":[{"id":"\\u00zz","secret":"${b64(32)}"}]}`,
  lone_surrogate_id: `{"keys":[{"id":"\\ud800","secret":"${b64(32)}"}]}`,
  bad_number: `{"keys":[{"id":-x,"secret":"${b64(32)}"}]}`,
  leading_zero: `{"keys":[{"id":01,"secret":"${b64(32)}"}]}`,
  bad_literal: `{"keys":[{"id":tru,"secret":"${b64(32)}"}]}`,
  single_quotes: `{'keys':[]}`,
  bom: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(doc(k('a')))]),
  invalid_utf8_name: Buffer.concat([Buffer.from('{"keys":[{"i\xff'.replace('\xff', ''), 'latin1'), Buffer.from([0xff]), Buffer.from(`d":"a","secret":"${b64(32)}"}]}`)]),
  invalid_utf8_top_name: Buffer.concat([Buffer.from('{"'), Buffer.from([0xc3, 0x28]), Buffer.from(`":1}`)]),
  nul_after: Buffer.concat([Buffer.from(doc(k('a'))), Buffer.from([0])]),
  deep_skip: `{"keys":[{"id":"a","secret":"${b64(32)}","x":[[[{"a":[1,{"b":null}]}]]]}]}`,
  big_number_field: `{"keys":[{"id":1e999,"secret":"${b64(32)}"}]}`,
  oversized: `{"keys":[${k('a')}],"pad":"${'x'.repeat(1 << 20)}"}`,
};

const ttlCases: Record<string, string | Buffer> = {
  one: '1',
  newline: '300\n',
  max: '900',
  over: '901',
  zero: '0',
  leading_zero: '0300',
  plus: '+300',
  minus: '-1',
  two_newlines: '300\n\n',
  crlf: '300\r\n',
  space: ' 300',
  empty: '',
  word: 'five minutes',
  huge: '99999999999999999999999',
  unicode: '３００',
  invalid_utf8: Buffer.from([0x33, 0xff, 0x30]),
};

describe('parseKeyring matches Go keyring.Parse', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mrtr-keyring-'));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('on every case, word for word', async () => {
    const files = Object.entries(cases).map(([name, text]) => {
      const f = path.join(dir, name + '.json');
      writeFileSync(f, text);
      return f;
    });
    const lines = await goRun('parse', ...files);
    assert.equal(lines.length, files.length);
    for (const line of lines) {
      const g = JSON.parse(line) as { file: string; fingerprint?: string; ids?: string[]; error?: string };
      const text = cases[g.file.replace(/\.json$/, '')] as string | Buffer;
      let got: { fingerprint?: string; ids?: string[]; error?: string };
      try {
        const r = parseKeyring(typeof text === 'string' ? Buffer.from(text) : text);
        got = { fingerprint: r.fingerprint, ids: r.ids };
      } catch (e) {
        got = { error: (e as Error).message };
      }
      const { file, ...want } = g;
      assert.deepEqual(got, want, file);
    }
  });

  it('keeps no key bytes in its errors', () => {
    const secret = b64(32);
    for (const text of [`{"keys":[{"id":"${secret}","secret":"x"}]}`, `{"keys":[{"${secret}":"a"}]}`, `{"${secret}":1}`]) {
      assert.throws(() => parseKeyring(text), (e: Error) => !e.message.includes(secret.slice(0, 8)));
    }
  });

  it('exposes the keys as ids and bytes, and fingerprints them as Go', () => {
    const s = Buffer.alloc(32, 9);
    const r = parseKeyring(doc(k('b', s.toString('base64')), k('a')));
    assert.deepEqual(r.ids, ['b', 'a']);
    assert.deepEqual(Buffer.from(r.primary.secret), s);
    assert.ok(r.keys[0]?.secret instanceof Uint8Array);
    assert.equal(r.fingerprint, new Keyring(r.keys).fingerprint);
    assert.match(r.fingerprint, /^[0-9a-f]{16}$/);
    assert.ok(!String(r).includes(s.toString('base64')));
  });
});

describe('parseTokenTTL matches Go keyring.ParseTokenTTL', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mrtr-ttl-'));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('on every case, word for word', async () => {
    const files = Object.entries(ttlCases).map(([name, text]) => {
      const f = path.join(dir, name);
      writeFileSync(f, text);
      return f;
    });
    const lines = await goRun('ttl', ...files);
    for (const line of lines) {
      const g = JSON.parse(line) as { file: string; seconds?: number; error?: string };
      const text = ttlCases[g.file] as string | Buffer;
      let got: { seconds?: number; error?: string };
      try {
        got = { seconds: parseTokenTTL(text) };
      } catch (e) {
        got = { error: (e as Error).message };
      }
      const { file, ...want } = g;
      assert.deepEqual(got, want, file);
    }
  });
});
