// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The TypeScript replica of the tests: the real @modelcontextprotocol/server, a McpServer per
// request (createMcpHandler, the 2026-07-28 HTTP entry), whose get_weather tool asks for a login
// (an elicitation) and seals its state with the keyring codec through RequestState: the same tool,
// with the same state, as the Go replica (test/goreplica).

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';

import {
  McpServer,
  acceptedContent,
  createMcpHandler,
  fromJsonSchema,
  inputRequired,
  type ServerContext,
} from '@modelcontextprotocol/server';

import { RequestState, SignedCodec, anonymous, recordParams, type KeyringSource } from '../src/index.js';

export interface WeatherState {
  location: string;
  sealedBy: string;
  sealKey: string;
}

export interface Replica {
  url: string;
  rejected: number;
  completed: number;
  close(): Promise<void>;
}

const loginSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const;

/** Starts a replica named name on 127.0.0.1 that seals with src's keyring. */
export async function startReplica(name: string, src: KeyringSource, ttlSeconds = 300): Promise<Replica> {
  const codec = new SignedCodec(src, { ttlSeconds });
  const stats = { rejected: 0, completed: 0 };
  const rs = new RequestState<WeatherState>(codec, {
    principal: anonymous,
    onReject: () => {
      stats.rejected++;
    },
  });
  const handler = recordParams(
    createMcpHandler(() => {
      const server = new McpServer({ name: 'mrtr-interop', version: '0.1.0' }, { requestState: { verify: rs.verify } });
      server.registerTool(
        'get_weather',
        { inputSchema: fromJsonSchema<{ location: string }>({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }) },
        (args: { location: string }, ctx: ServerContext) => {
          const st = ctx.mcpReq.requestState<WeatherState>();
          if (st === undefined) {
            return inputRequired({
              inputRequests: {
                github_login: inputRequired.elicit({ message: 'Your GitHub username?', requestedSchema: fromJsonSchema(loginSchema) }),
              },
              requestState: rs.mint(ctx, { location: args.location, sealedBy: name, sealKey: src.keyring()?.primary.id ?? '' }),
            });
          }
          const login = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, 'github_login');
          stats.completed++;
          return {
            content: [{ type: 'text' as const, text: `Sunny in ${st.location} for ${login?.name ?? ''}` }],
            structuredContent: { location: st.location, login: login?.name ?? '', sealedBy: st.sealedBy, sealKey: st.sealKey, openedBy: name },
          };
        },
      );
      return server;
    }),
  );
  const http = createServer((req, res) => {
    void serveFetch(handler.fetch.bind(handler), req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get rejected() {
      return stats.rejected;
    },
    get completed() {
      return stats.completed;
    },
    close: () => closeServer(http),
  };
}

/** Serves a Web-standard fetch handler on a node:http request. */
export async function serveFetch(
  fetch: (r: Request) => Promise<Response>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === 'string') {
        headers.set(k, v);
      } else if (Array.isArray(v)) {
        for (const x of v) {
          headers.append(k, x);
        }
      }
    }
    const method = req.method ?? 'GET';
    const hasBody = method !== 'GET' && method !== 'HEAD';
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
      method,
      headers,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: 'half' } : {}),
    });
    const response = await fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    if (response.body === null) {
      res.end();
      return;
    }
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      res.write(chunk);
    }
    res.end();
  } catch (e) {
    res.writeHead(500);
    res.end(String(e));
  }
}

export function closeServer(s: Server): Promise<void> {
  s.closeAllConnections();
  return new Promise((resolve) => s.close(() => {
    resolve();
  }));
}
