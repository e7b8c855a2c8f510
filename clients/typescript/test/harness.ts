// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// What the end-to-end tests share: a Secret volume written the way the kubelet's atomic writer
// writes it, a round-robin balancer, and the SDK's own client running MRTR flows.

import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync, existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { closeServer, serveFetch } from './tsreplica.js';

/** A key of a test keyring: an id and 32 random bytes. */
export function newKey(id: string): { id: string; secret: string } {
  return { id, secret: randomBytes(32).toString('base64') };
}

export function keyringJSON(keys: { id: string; secret: string }[]): string {
  return JSON.stringify({ keys });
}

/**
 * A mounted Secret volume, updated as the kubelet's atomic writer does: the files go into a new
 * timestamped directory, ..data is swapped to it in one rename, the old directory is removed.
 */
export class SecretVolume {
  readonly dir: string;
  private n = 0;
  private current: string | undefined;

  constructor(dir?: string) {
    this.dir = dir ?? mkdtempSync(path.join(tmpdir(), 'mrtr-volume-'));
  }

  write(files: Record<string, string | Buffer>): void {
    const ts = `..2026_12_03_00_00_00.${String(++this.n).padStart(9, '0')}`;
    const snap = path.join(this.dir, ts);
    mkdirSync(snap);
    for (const [name, content] of Object.entries(files)) {
      writeFileSync(path.join(snap, name), content);
    }
    const tmp = path.join(this.dir, '..data_tmp');
    rmSync(tmp, { force: true });
    symlinkSync(ts, tmp);
    renameSync(tmp, path.join(this.dir, '..data'));
    for (const name of Object.keys(files)) {
      const link = path.join(this.dir, name);
      if (!existsSync(link)) {
        symlinkSync(path.join('..data', name), link);
      }
    }
    if (this.current !== undefined) {
      rmSync(path.join(this.dir, this.current), { recursive: true, force: true });
    }
    this.current = ts;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A balancer in front of upstreams that spreads requests so that the two rounds of consecutive
 * flows land on different pairs of upstreams, wherever the flows start: request i goes to
 * min(i mod (n+1), n-1), for two upstreams 0, 1, 1, 0, 1, 1, ..., whose period of 3 against a
 * flow's 2 requests gives the flows (0,1), (1,0) and (1,1) in turn.
 */
export async function startBalancer(upstreams: string[]): Promise<{ url: string; served: number[]; close(): Promise<void> }> {
  let i = 0;
  const served = upstreams.map(() => 0);
  const server: Server = createServer((req, res) => {
    void serveFetch(async (r: Request) => {
      const k = Math.min(i % (upstreams.length + 1), upstreams.length - 1);
      i++;
      served[k] = (served[k] ?? 0) + 1;
      const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : await r.arrayBuffer();
      const headers = new Headers(r.headers);
      headers.delete('host');
      headers.delete('content-length');
      const up = await fetch(upstreams[k] as string, { method: r.method, headers, ...(body !== undefined ? { body } : {}) });
      const out = new Headers(up.headers);
      out.delete('content-encoding');
      out.delete('content-length');
      out.delete('transfer-encoding');
      return new Response(up.body, { status: up.status, headers: out });
    }, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp`, served, close: () => closeServer(server) };
}

export interface FlowResult {
  location: string;
  login: string;
  sealedBy: string;
  sealKey: string;
  openedBy: string;
}

/** A client of the SDK that answers the login elicitation, connected to url. */
export async function connectClient(url: string): Promise<Client> {
  const client = new Client(
    { name: 'mrtr-test-client', version: '0.1.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  client.setRequestHandler('elicitation/create', () => ({ action: 'accept' as const, content: { name: 'octocat' } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** One MRTR flow of get_weather: round 1 asks for the login, the client answers, round 2 opens the state. */
export async function flow(client: Client, location: string): Promise<FlowResult> {
  const r = await client.callTool({ name: 'get_weather', arguments: { location } });
  if (r.isError === true) {
    throw new Error(`get_weather failed: ${JSON.stringify(r.content)}`);
  }
  return r.structuredContent as FlowResult;
}
