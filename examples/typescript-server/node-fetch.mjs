// @ts-check
// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The SDK's HTTP handler (createMcpHandler) speaks the Web-standard fetch API; node:http does not.
// serveFetch bridges the two for the example server and for the TypeScript conformance server
// (test/mcpconformance/typescript), so that both answer MCP requests the same way.

import { Readable } from 'node:stream';

/**
 * Answers a node:http request with handler, streaming the response body chunk by chunk, so that an
 * SSE stream reaches the client as the SDK writes it instead of when it ends.
 * @param {(request: Request) => Promise<Response>} handler
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 */
export async function serveFetch(handler, req, res) {
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) {
        headers.append(k, x);
      }
    }
    const method = req.method ?? 'GET';
    const body = method === 'GET' || method === 'HEAD' ? {} : { body: /** @type {ReadableStream} */ (Readable.toWeb(req)), duplex: 'half' };
    const response = await handler(new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, { method, headers, ...body }));
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    if (response.body !== null) {
      for await (const chunk of /** @type {AsyncIterable<Uint8Array>} */ (/** @type {unknown} */ (response.body))) {
        res.write(chunk);
      }
    }
    res.end();
  } catch (e) {
    if (!res.headersSent) {
      res.writeHead(500);
    }
    res.end(String(e));
  }
}
