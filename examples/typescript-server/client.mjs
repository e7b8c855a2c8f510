// @ts-check
// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// MRTR traffic from the official TypeScript SDK's own client: workers call get_weather (round 1
// elicits a login, the client's elicitation handler answers, the SDK retries with the sealed state)
// against one MCP endpoint until SIGTERM or SIGINT, then print one JSON line of counts, the e2e
// harness's Counts: completed, rejected (-32602, the state did not open), failed, crossReplica
// (sealed by one replica, opened by another).
//
//   node client.mjs --url http://127.0.0.1:8080/mcp --workers 4

import { parseArgs } from 'node:util';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const { values: flags } = parseArgs({ options: { url: { type: 'string' }, workers: { type: 'string', default: '4' } } });
if (flags.url === undefined) {
  throw new Error('--url is required: the MCP endpoint');
}
const url = new URL(flags.url);
const counts = { completed: 0, rejected: 0, failed: 0, crossReplica: 0 };
/** @type {string[]} */
const errors = [];
let stopping = false;
/** @param {string} e */
const note = (e) => {
  errors.push(e.slice(0, 300));
  errors.splice(0, Math.max(0, errors.length - 20));
};

/** @param {number} n */
async function worker(n) {
  for (let i = 0; !stopping; ) {
    const client = new Client(
      { name: 'mrtr-e2e-load-typescript', version: '0.1.0' },
      { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    client.setRequestHandler('elicitation/create', () => ({ action: /** @type {const} */ ('accept'), content: { name: 'octocat' } }));
    try {
      await client.connect(new StreamableHTTPClientTransport(url));
      while (!stopping) {
        i++;
        try {
          const r = await client.callTool({ name: 'get_weather', arguments: { location: `city-${n}-${i}` } });
          if (r.isError === true) {
            counts.failed++;
            note(`worker ${n}: tool error ${JSON.stringify(r.content)}`);
            continue;
          }
          counts.completed++;
          const sc = /** @type {{ sealedBy?: string, openedBy?: string } | undefined} */ (r.structuredContent);
          if (sc !== undefined && sc.sealedBy !== sc.openedBy) {
            counts.crossReplica++;
          }
        } catch (e) {
          const msg = String(e);
          if (msg.includes('Invalid or expired requestState')) {
            counts.rejected++;
          } else if (!stopping) {
            counts.failed++;
          }
          note(`worker ${n}: ${msg}`);
        }
      }
    } catch (e) {
      if (!stopping) {
        counts.failed++;
        note(`worker ${n}: session: ${String(e)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await client.close().catch(() => undefined);
    }
  }
}

const workers = Array.from({ length: Number(flags.workers) }, (_, n) => worker(n));
for (const sig of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
  process.on(sig, () => {
    stopping = true;
    void Promise.allSettled(workers).then(() => {
      console.log(JSON.stringify({ ...counts, errors }));
      process.exit(0);
    });
  });
}
