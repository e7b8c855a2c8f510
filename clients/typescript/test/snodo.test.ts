// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The interop test of the Go library (pkg/token/snodo_vectors_test.go), run on this codec: vectors
// produced by the real Snodo.MRTR.State under Elixir, read in place from pkg/token/testdata/snodo,
// with this package's own testdata (cases in the same layout whose tokens the Go library made,
// such as deep nesting), or the one file MRTR_SNODO_VECTORS names. Each seal vector must seal byte-exact and open again,
// each open or crafted vector open (with exactly the data) or be refused, each seal-error vector
// be refused at configuration or at seal, each params-decode vector be bound or refused as Snodo
// reads it.

import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  ConfigError,
  InputError,
  InvalidRequestStateError,
  Keyring,
  SignedCodec,
  type Binding,
} from '../src/index.js';
import { canonical, quote, Reader } from '../src/canonical.js';
import { packageRoot, repoRoot } from './paths.js';

interface Case {
  id: string;
  mode: string;
  secret_hex?: string;
  keys?: { id: string; secret_hex: string }[];
  principal_json?: string | null;
  method: string;
  params_json: string;
  ttl?: number | null;
  clock: number;
  data_json?: string | null;
  data_json_generator?: string;
  token?: string;
  expected: {
    effective_ttl?: number | null;
    binding?: string;
    signing_key_id?: string | null;
    payload_json?: string;
    token?: string;
    ok?: boolean;
    data_json?: string | null;
    raises?: boolean;
  };
}

interface Vectors {
  schema: string;
  constants?: { max_token_bytes?: number };
  json_encoding_samples?: {
    numbers?: { input: string; type: string; encoded: string }[];
    strings?: { input_hex: string; encoded_hex: string }[];
  };
  seal_vectors?: Case[];
  open_vectors?: Case[];
  crafted_vectors?: Case[];
  seal_error_vectors?: Case[];
  params_decode_vectors?: { id: string; params_json: string; params_hex?: string; expected: { ok: boolean } }[];
}

function vectorFiles(): string[] {
  const env = process.env.MRTR_SNODO_VECTORS;
  if (env !== undefined && env !== '') {
    // A relative path is taken from the working directory, else from the repository's root, else
    // from pkg/token (where the Go interop test resolves it).
    const found = [path.resolve(env), path.resolve(repoRoot, env), path.resolve(repoRoot, 'pkg', 'token', env)].find((p) =>
      existsSync(p),
    );
    return [found ?? env];
  }
  const dir = path.join(repoRoot, 'pkg', 'token', 'testdata', 'snodo');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => path.join(dir, f));
  assert.ok(files.length > 0, `no Snodo vectors in ${dir} (set MRTR_SNODO_VECTORS to choose a file)`);
  const own = path.join(packageRoot, 'testdata');
  return [...files, ...readdirSync(own).filter((f) => f.endsWith('.json')).map((f) => path.join(own, f))];
}

// Text from the vector file is a JS string; Go reads it into a string, replacing lone surrogates
// with U+FFFD, and binds its UTF-8 bytes: so do we.
const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

function codec(c: Case): SignedCodec {
  const opts = { now: () => c.clock * 1000, ...(c.ttl != null ? { ttlSeconds: c.ttl } : {}) };
  switch (c.mode) {
    case 'secret':
      return SignedCodec.withSecret(Buffer.from(c.secret_hex ?? '', 'hex'), opts);
    case 'keys':
      return new SignedCodec(
        new Keyring((c.keys ?? []).map((k) => ({ id: k.id, secret: Buffer.from(k.secret_hex, 'hex') }))),
        opts,
      );
    default:
      throw new Error(`unknown mode ${c.mode}`);
  }
}

function binding(c: Case): Binding {
  return { method: c.method, params: utf8(c.params_json), principal: c.principal_json != null ? utf8(c.principal_json) : '' };
}

function data(c: Case): Buffer {
  if (c.data_json != null) {
    return utf8(c.data_json);
  }
  const m = /^JSON string of (\d+) '(.+)' characters?$/.exec(c.data_json_generator ?? '');
  assert.ok(m, `data_json_generator ${String(c.data_json_generator)} is not a form this test knows`);
  return utf8(quote((m[2] as string).repeat(Number(m[1]))));
}

// maxMembers is the largest number of members of any object of the JSON text, at any depth: Erlang
// writes maps of more than 32 members in hash order, which no other implementation reproduces. The
// vectors' data repeats no name and only the shape matters, so JSON.parse serves. A walk without
// recursion: the data may nest thousands deep.
function maxMembers(text: string): number {
  let most = 0;
  const todo: unknown[] = [JSON.parse(text)];
  for (let x = todo.pop(); x !== undefined; x = todo.pop()) {
    if (typeof x === 'object' && x !== null) {
      const vs = Object.values(x);
      if (!Array.isArray(x)) {
        most = Math.max(most, vs.length);
      }
      for (const v of vs) {
        todo.push(v);
      }
    }
  }
  return most;
}

for (const file of vectorFiles()) {
  const v = JSON.parse(readFileSync(file, 'utf8')) as Vectors;
  describe(`snodo vectors ${path.basename(file)}`, () => {
    it('has the schema and the limits of this codec', () => {
      assert.ok(v.schema.startsWith('snodo-mrtr-state-vectors/1'), `schema ${v.schema.slice(0, 60)}`);
      const n = (v.seal_vectors?.length ?? 0) + (v.open_vectors?.length ?? 0) + (v.crafted_vectors?.length ?? 0) +
        (v.seal_error_vectors?.length ?? 0);
      assert.ok(n > 0, 'no cases');
      const max = v.constants?.max_token_bytes;
      assert.ok(max === undefined || max === 16384, `max_token_bytes ${String(max)}`);
    });

    const samples = v.json_encoding_samples;
    if (samples !== undefined) {
      it('encodes the JSON samples as Elixir does', () => {
        for (const n of samples.numbers ?? []) {
          assert.equal(/[.eE]/.test(n.input) ? 'float' : 'integer', n.type, n.input);
          assert.equal(canonical(n.input), n.encoded, `number ${n.input}`);
        }
        for (const s of samples.strings ?? []) {
          const input = Buffer.from(s.input_hex, 'hex').toString('utf8');
          assert.equal(utf8(quote(input)).toString('hex'), s.encoded_hex, `string ${s.input_hex}`);
          assert.equal(new Reader(Buffer.from(s.encoded_hex, 'hex').toString('utf8')).string(), input);
        }
      });
    }

    for (const c of v.seal_vectors ?? []) {
      it(`seal/${c.id}`, () => {
        const s = codec(c);
        if (c.expected.effective_ttl != null) {
          assert.equal(s.ttlSeconds, c.expected.effective_ttl);
        }
        const b = binding(c);
        const d = data(c);
        const tok = s.seal(b, d);
        if (tok !== c.expected.token) {
          assert.ok(maxMembers(d.toString('utf8')) > 32, `token\n got ${tok}\nwant ${String(c.expected.token)}`);
          const [got, want] = [tok, c.expected.token ?? ''].map((t) => t.split('.'));
          assert.equal(got?.slice(0, -2).join('.'), want?.slice(0, -2).join('.'));
        }
        assert.equal(s.open(b, tok), canonical(d));
      });
    }

    for (const c of [...(v.open_vectors ?? []), ...(v.crafted_vectors ?? [])]) {
      it(`open/${c.id}`, () => {
        const s = codec(c);
        assert.notEqual(c.expected.ok, undefined, 'no expected.ok');
        if (c.expected.ok !== true) {
          assert.throws(() => s.open(binding(c), c.token ?? ''), InvalidRequestStateError);
          return;
        }
        const got = s.open(binding(c), c.token ?? '');
        assert.equal(got, canonical(utf8(c.expected.data_json ?? '')));
      });
    }

    for (const c of v.seal_error_vectors ?? []) {
      it(`seal-error/${c.id}`, () => {
        assert.equal(c.expected.raises, true);
        let s: SignedCodec;
        try {
          s = codec(c);
        } catch {
          return; // refused as configuration, by the keyring or the codec
        }
        assert.throws(() => s.seal(binding(c), data(c)), ConfigError);
      });
    }

    for (const c of v.params_decode_vectors ?? []) {
      it(`params-decode/${c.id}`, () => {
        const params = c.params_hex !== undefined && c.params_hex !== '' ? Buffer.from(c.params_hex, 'hex') : utf8(c.params_json);
        const s = SignedCodec.withSecret(Buffer.alloc(32, 7));
        const b = { method: 'tools/call', params, principal: 'null' };
        if (c.expected.ok) {
          s.seal(b, '{}');
        } else {
          assert.throws(() => s.seal(b, '{}'), InputError);
        }
      });
    }
  });
}
