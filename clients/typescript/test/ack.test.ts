// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The acknowledgement reporter against a fake API server over TLS (its CA made by test/goreplica):
// the request is pkg/ack's, refused and failed attempts are retried, an attempt whose answer is
// lost (none within the timeout) is sent again, the token is read again for every attempt, and the
// latest fingerprint wins.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { AckReporter, KeyringWatcher, annotationKey, parseKeyring } from '../src/index.js';
import { goRun } from './gorun.js';
import { SecretVolume, keyringJSON, newKey } from './harness.js';

interface Seen {
  method: string;
  url: string;
  auth: string;
  contentType: string;
  body: string;
}

type Answer = (res: ServerResponse) => void;

describe('AckReporter', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mrtr-sa-'));
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  const answers: Answer[] = [];
  let onRequest: ((s: Seen) => void) | undefined;
  const ok: Answer = (res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"kind":"Pod"}');
  };

  before(async () => {
    await goRun('cert', dir);
    writeFileSync(path.join(dir, 'token'), 'token-one\n');
    server = createServer(
      { key: readFileSync(path.join(dir, 'server.key')), cert: readFileSync(path.join(dir, 'server.crt')) },
      (req: IncomingMessage, res: ServerResponse) => {
        let body = '';
        req.on('data', (b: Buffer) => (body += b.toString()));
        req.on('end', () => {
          const s = {
            method: req.method ?? '',
            url: req.url ?? '',
            auth: req.headers.authorization ?? '',
            contentType: req.headers['content-type'] ?? '',
            body,
          };
          seen.push(s);
          (answers.shift() ?? ok)(res);
          onRequest?.(s);
        });
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const reporter = (onError: (e: Error) => void): AckReporter =>
    new AckReporter({
      secret: 'weather-keyring',
      podName: 'weather-0',
      namespace: 'shop',
      apiServer: base,
      serviceAccountDir: dir,
      minBackoffMs: 5,
      maxBackoffMs: 20,
      timeoutMs: 300,
      onError,
    });

  it('sends pkg/ack\'s request, retries refusals, failures and lost answers, and rereads the token', async () => {
    seen.length = 0;
    const errors: Error[] = [];
    let lost: ServerResponse | undefined;
    answers.push(
      (res) => {
        res.writeHead(403, 'Forbidden', { 'Content-Type': 'application/json' });
        res.end('{"kind":"Status","message":"pods \\"weather-0\\" is forbidden: token-one is not allowed"}');
      },
      (res) => {
        res.writeHead(500, 'Internal Server Error');
        res.end('<html>upstream broke</html>');
      },
      (res) => {
        lost = res; // no answer: the reporter's timeout ends the attempt, and it sends again
      },
    );
    const r = reporter((e) => errors.push(e));
    const ac = new AbortController();
    const done = new Promise<void>((resolve) => {
      onRequest = () => {
        if (seen.length === 3) {
          writeFileSync(path.join(dir, 'token'), 'token-two\n'); // the kubelet rotated it
        }
        if (seen.length === 4) {
          resolve();
        }
      };
    });
    const run = r.run(ac.signal);
    r.report('0123456789abcdef');
    await done;
    // The 4th request was answered 200: wait until the reporter has taken it.
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (r.acknowledged() === '0123456789abcdef') {
          resolve();
        } else {
          setImmediate(check);
        }
      };
      check();
    });
    ac.abort();
    await run;
    lost?.destroy();

    for (const s of seen) {
      assert.equal(s.method, 'PATCH');
      assert.equal(s.url, '/api/v1/namespaces/shop/pods/weather-0?fieldManager=mrtr-ack');
      assert.equal(s.contentType, 'application/merge-patch+json');
      assert.deepEqual(JSON.parse(s.body), { metadata: { annotations: { 'loaded.mrtr.dev/weather-keyring': '0123456789abcdef' } } });
    }
    assert.deepEqual(seen.map((s) => s.auth), ['Bearer token-one', 'Bearer token-one', 'Bearer token-one', 'Bearer token-two']);
    assert.equal(errors.length, 3);
    assert.match(errors[0]?.message ?? '', /^ack: patch pod shop\/weather-0: 403 Forbidden: "pods \\"weather-0\\" is forbidden: \[token\] is not allowed" \(is the ClusterRole mrtr-keyring-consumer bound/);
    assert.match(errors[1]?.message ?? '', /500 Internal Server Error: "<html>upstream broke<\/html>"/);
    assert.match(errors[2]?.message ?? '', /no answer within 300 ms/);
    for (const e of errors) {
      assert.ok(!e.message.includes('token-one'), 'the token never in an error');
    }
  });

  it('follows a watcher: every keyring it loads is acknowledged, the latest winning', async () => {
    seen.length = 0;
    const v = new SecretVolume();
    const k1 = [newKey('a')];
    const k2 = [newKey('b'), newKey('a')];
    v.write({ 'keyring.json': keyringJSON(k1) });
    const w = await KeyringWatcher.open(v.dir, { debounceMs: 10 });
    const r = reporter(() => undefined);
    const ac = new AbortController();
    const fp1 = parseKeyring(keyringJSON(k1)).fingerprint;
    const fp2 = parseKeyring(keyringJSON(k2)).fingerprint;
    const first = new Promise<void>((resolve) => {
      onRequest = (s) => {
        if (s.body.includes(fp1)) {
          resolve();
        }
      };
    });
    const run = r.run(ac.signal);
    r.follow(w);
    await first;
    const second = new Promise<void>((resolve) => {
      onRequest = (s) => {
        if (s.body.includes(fp2)) {
          resolve();
        }
      };
    });
    v.write({ 'keyring.json': keyringJSON(k2) });
    await second;
    ac.abort();
    await run;
    w.close();
    v.remove();
    assert.deepEqual(seen.map((s) => (JSON.parse(s.body) as { metadata: { annotations: Record<string, string> } }).metadata.annotations['loaded.mrtr.dev/weather-keyring']), [fp1, fp2]);
  });

  it('names what is missing in its configuration', () => {
    assert.throws(() => new AckReporter({ secret: '', podName: 'p', namespace: 'n', apiServer: base, serviceAccountDir: dir }), /ack: no secret/);
    assert.throws(() => new AckReporter({ secret: 'Bad_Name', podName: 'p', namespace: 'n', apiServer: base, serviceAccountDir: dir }), /is not a Secret name/);
    assert.throws(() => new AckReporter({ secret: 's', podName: 'p', namespace: 'n', apiServer: 'http://127.0.0.1:1', serviceAccountDir: dir }), /not an https:\/\/ URL/);
    assert.throws(() => new AckReporter({ secret: 's', podName: 'p', namespace: 'n', apiServer: base, serviceAccountDir: path.join(dir, 'nope') }), /ack: API server CA/);
  });

  it('derives the annotation key as pkg/ack does', () => {
    assert.equal(annotationKey('weather-keyring'), 'loaded.mrtr.dev/weather-keyring');
    const long = 'a'.repeat(70);
    const k = annotationKey(long);
    assert.equal(k.length, 'loaded.mrtr.dev/'.length + 63);
    assert.match(k, /^loaded\.mrtr\.dev\/a{46}-[0-9a-f]{16}$/);
  });
});
