// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The acknowledgement reporter against a fake API server over TLS (its CA made by test/goreplica):
// the request is pkg/ack's, refused and failed attempts are retried, an attempt whose answer is
// lost (none within the timeout) is sent again, the token is read again for every attempt, and the
// latest fingerprint wins.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { createServer as createTLSServer, type Server as TLSServer, type TLSSocket } from 'node:tls';
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

  /**
   * A TLS listener that reads a request and then runs answer on its socket; what each connection
   * received is in got. dir holds its certificate (goreplica cert).
   */
  async function tlsListener(certDir: string, answer: (sock: TLSSocket) => void): Promise<{ url: string; got: string[]; close: () => Promise<void> }> {
    const got: string[] = [];
    const socks = new Set<TLSSocket>();
    const srv: TLSServer = createTLSServer(
      { key: readFileSync(path.join(certDir, 'server.key')), cert: readFileSync(path.join(certDir, 'server.crt')) },
      (sock) => {
        socks.add(sock);
        let text = '';
        let answered = false;
        sock.on('data', (b: Buffer) => {
          text += b.toString();
          if (!answered && text.includes('\r\n\r\n')) {
            answered = true;
            got.push(text);
            answer(sock);
          }
        });
        sock.on('error', () => undefined);
        sock.on('close', () => socks.delete(sock));
      },
    );
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    return {
      url: `https://127.0.0.1:${(srv.address() as AddressInfo).port}`,
      got,
      close: async () => {
        for (const c of socks) {
          c.destroy();
        }
        await new Promise((r) => srv.close(r));
      },
    };
  }

  /** Writes text one byte at a time, one every 20 ms, until the socket closes: never idle 300 ms. */
  function trickle(sock: TLSSocket, text: string): void {
    let i = 0;
    const t = setInterval(() => {
      if (sock.destroyed) {
        clearInterval(t);
        return;
      }
      sock.write(text[i % text.length] ?? ' ');
      i++;
    }, 20);
    sock.on('close', () => {
      clearInterval(t);
    });
  }

  const firstError = (apiServer: string, timeoutMs = 300): Promise<{ err: Error; r: AckReporter; stop: () => Promise<void> }> =>
    new Promise((resolve) => {
      const ac = new AbortController();
      const running: { run?: Promise<void> } = {};
      const r = new AckReporter({
        secret: 'weather-keyring',
        podName: 'weather-0',
        namespace: 'shop',
        apiServer,
        serviceAccountDir: dir,
        minBackoffMs: 5,
        maxBackoffMs: 20,
        timeoutMs,
        onError: (err) => {
          resolve({
            err,
            r,
            stop: async () => {
              ac.abort();
              await running.run;
            },
          });
        },
      });
      running.run = r.run(ac.signal);
      r.report('0123456789abcdef');
    });

  it('ignores NODE_TLS_REJECT_UNAUTHORIZED=0: no token to a server its CA did not sign', { timeout: 20_000 }, async () => {
    const foreign = mkdtempSync(path.join(tmpdir(), 'mrtr-foreign-'));
    await goRun('cert', foreign); // another CA, and a certificate for 127.0.0.1 it signed
    const l = await tlsListener(foreign, (sock) => {
      sock.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
    });
    const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const { err, r, stop } = await firstError(l.url);
      await stop();
      assert.match(err.message, /certificate/);
      assert.equal(r.acknowledged(), '');
      assert.deepEqual(l.got, [], 'the listener received a request, and with it the token');
    } finally {
      if (before === undefined) {
        delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      } else {
        process.env.NODE_TLS_REJECT_UNAUTHORIZED = before;
      }
      await l.close();
      rmSync(foreign, { recursive: true, force: true });
    }
  });

  it('bounds the whole request by one deadline: a trickled status line is cut', { timeout: 20_000 }, async () => {
    const l = await tlsListener(dir, (sock) => {
      trickle(sock, 'HTTP/1.1 200 OK');
    });
    try {
      const { err, r, stop } = await firstError(l.url);
      await stop();
      assert.match(err.message, /^ack: patch pod shop\/weather-0: no answer within 300 ms/);
      assert.equal(r.acknowledged(), '');
    } finally {
      await l.close();
    }
  });

  it('reads a bounded part of an accepted answer: a trickled body does not hold the reporter', { timeout: 20_000 }, async () => {
    // The status says the patch was applied; the body then trickles forever (Go: accepted, the
    // drain cut by the deadline).
    const l = await tlsListener(dir, (sock) => {
      sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n');
      trickle(sock, '{"kind":"Pod"}');
    });
    const ac = new AbortController();
    const r = new AckReporter({
      secret: 'weather-keyring',
      podName: 'weather-0',
      namespace: 'shop',
      apiServer: l.url,
      serviceAccountDir: dir,
      timeoutMs: 300,
    });
    const run = r.run(ac.signal);
    try {
      r.report('fedcba9876543210');
      await new Promise<void>((resolve) => {
        const check = (): void => {
          if (r.acknowledged() === 'fedcba9876543210') {
            resolve();
          } else {
            setTimeout(check, 10);
          }
        };
        check();
      });
      assert.equal(l.got.length, 1);
    } finally {
      ac.abort();
      await run;
      await l.close();
    }
  });
});
