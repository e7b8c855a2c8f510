// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// recordParams in front of the real SDK handler (createMcpHandler): it reads a bounded part of
// every POST body, whatever the headers say, and canonicalizes nothing of a request that carries
// no request state (it reads every body before anything is authenticated).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';

import { RequestState, SignedCodec, anonymous, recordParams } from '../src/index.js';
import { Reader } from '../src/canonical.js';

const LIMIT = 4 << 20;

function handler(): { fetch(r: Request): Promise<Response> } {
  const rs = new RequestState(SignedCodec.withSecret(Buffer.alloc(32, 7)), { principal: anonymous });
  return recordParams(
    createMcpHandler(() => {
      const server = new McpServer({ name: 'record', version: '0.1.0' }, { requestState: { verify: rs.verify } });
      server.registerTool('echo', {}, () => ({ content: [{ type: 'text' as const, text: 'ok' }] }));
      return server;
    }),
  );
}

function post(body: BodyInit, headers: Record<string, string> = {}): Request {
  return new Request('http://127.0.0.1/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
    duplex: 'half',
  } as RequestInit);
}

describe('recordParams', () => {
  it('reads at most 4 MiB + 1 bytes of a chunked body without Content-Length, which is refused', async () => {
    // 64 chunks of 64 KiB make the limit, one byte crosses it, and then the body would go on for
    // 256 MiB: a reader that stops as soon as it has more than the limit reads LIMIT + 1 bytes.
    // The Request's own stream reads one chunk ahead of its reader, so the source gives at most one
    // chunk more.
    const chunk = new Uint8Array(64 << 10).fill(0x20);
    let pulled = 0;
    let n = 0;
    const body = new ReadableStream<Uint8Array>(
      {
        pull(c): void {
          const b = n++ === 64 ? new Uint8Array([0x20]) : chunk;
          if (pulled >= 256 << 20) {
            c.close();
            return;
          }
          pulled += b.byteLength;
          c.enqueue(b);
        },
      },
      { highWaterMark: 0 },
    );
    const req = post(body);
    assert.equal(req.headers.get('content-length'), null);
    const res = await handler().fetch(req);
    assert.equal(res.status, 413);
    const msg = (await res.json()) as { error?: { message?: string } };
    assert.match(msg.error?.message ?? '', /Payload Too Large/);
    assert.ok(pulled >= LIMIT + 1 && pulled <= LIMIT + 1 + chunk.byteLength, `${pulled} bytes read`);
  });

  it('canonicalizes nothing of a request without request state', async () => {
    const proto = Reader.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
    const value = proto.value as (...a: unknown[]) => unknown;
    const spy = { calls: 0 };
    proto.value = function (this: unknown, ...a: unknown[]): unknown {
      spy.calls++;
      return value.apply(this, a);
    };
    try {
      const big = JSON.stringify({ rows: Array.from({ length: 2000 }, (_, i) => ({ i, x: 1.5e300, s: 'é\u0001' })) });
      const res = await handler().fetch(
        post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"bulk":${big}}}}`, {
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'echo',
        }),
      );
      assert.equal(res.status, 200, await res.clone().text());
      assert.match(await res.text(), /"ok"/);
      assert.equal(spy.calls, 0);
      // The spy counts: a seal canonicalizes.
      SignedCodec.withSecret(Buffer.alloc(32, 7)).seal({ method: 'tools/call', params: '{}', principal: 'null' }, '{}');
      assert.notEqual(spy.calls, 0, 'the spy saw no canonicalization');
    } finally {
      proto.value = value;
    }
  });
});
