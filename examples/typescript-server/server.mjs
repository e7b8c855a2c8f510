// @ts-check
// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The example MCP server on the official TypeScript SDK (@modelcontextprotocol/server on npm), a
// consumer of an mrtr-operator keyring through @mrtr-dev/keyring (clients/typescript).
//
// It is examples/mcp-server in TypeScript: the same get_weather tool (round 1 asks for a GitHub
// login with an elicitation and returns sealed request state; the retry, on any replica, opens it
// and answers), the same GET /debug/keyring, GET /metrics (the contract's consumer metrics) and GET /healthz and the same flags, so that the e2e
// harness runs, observes and balances it like the Go server. Its request state is Snodo's mrtr2
// format, sealed with the keyring in service, which Go's token.Signed reads and writes too: a Go
// replica and a TypeScript replica open each other's state. The watcher follows the mounted Secret
// and the reporter acknowledges each keyring on the pod, so that the operator rotates the keys
// without a restart. Type-checked by `npm run check` (tsc --strict over this file's JSDoc).

import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';

import { McpServer, acceptedContent, createMcpHandler, fromJsonSchema, inputRequired } from '@modelcontextprotocol/server';
import { AckReporter, KeyringWatcher, METRICS_CONTENT_TYPE, Metrics, RequestState, SignedCodec, anonymous, recordParams } from '@mrtr-dev/keyring';

import { serveFetch } from './node-fetch.mjs';

/** @typedef {{ location: string, sealedBy: string, sealKey: string }} WeatherState */

/**
 * Seconds of a Go duration of hours, minutes and seconds ("5s", "1m30s"), as the Go server's
 * --token-ttl takes it.
 * @param {string} text
 * @returns {number}
 */
function goDuration(text) {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?$/.exec(text);
  if (text === '' || m === null) {
    throw new Error(`--token-ttl ${JSON.stringify(text)} is not a duration such as 5s or 1m30s`);
  }
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

const { values: flags } = parseArgs({
  options: {
    listen: { type: 'string', default: ':8080' },
    'keyring-dir': { type: 'string' },
    'keyring-secret': { type: 'string', default: process.env.MRTR_KEYRING_SECRET ?? '' },
    'serviceaccount-dir': { type: 'string' },
    server: { type: 'string', default: 'mrtr-example' },
    'token-ttl': { type: 'string', default: '5m' },
  },
});
const dir = flags['keyring-dir'];
if (dir === undefined || dir === '') {
  throw new Error('--keyring-dir is required: the folder the keyring Secret is mounted at');
}
const replica = process.env.POD_NAME ?? hostname();
/** @param {string} msg */
const warn = (msg) => console.error(`${new Date().toISOString()} WARN ${msg}`);

const metrics = new Metrics();
const watcher = await KeyringWatcher.open(dir, { onError: (e) => warn(`keyring not reloaded: ${e.message}`), metrics });
watcher.onChange((r) => console.error(`${new Date().toISOString()} INFO keyring in service: ${r.fingerprint} [${r.ids.join(' ')}]`));
/** @type {AckReporter | undefined} */
let reporter;
if (flags['keyring-secret'] !== '') {
  reporter = new AckReporter({
    secret: flags['keyring-secret'] ?? '',
    ...(flags['serviceaccount-dir'] !== undefined ? { serviceAccountDir: flags['serviceaccount-dir'] } : {}),
    onError: (e) => warn(`acknowledgement: ${e.message}`),
    metrics,
  });
  reporter.follow(watcher);
  void reporter.run();
}

const stats = { completed: 0, rejected: 0 };
const codec = new SignedCodec(watcher, { ttlSeconds: goDuration(flags['token-ttl'] ?? '5m'), metrics });
/** @type {RequestState<WeatherState>} */
const requestState = new RequestState(codec, {
  principal: anonymous,
  onReject: (e) => {
    stats.rejected++;
    warn(`rejected request state: ${e.message}`);
  },
});
const loginSchema = /** @type {const} */ ({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });
const weatherSchema = /** @type {const} */ ({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] });

// A server per request: the 2026-07-28 HTTP entry, stateless, so that any replica answers any round.
const mcp = recordParams(
  createMcpHandler(() => {
    const server = new McpServer({ name: 'mrtr-example', version: '0.1.0' }, { requestState: { verify: requestState.verify } });
    server.registerTool(
      'get_weather',
      {
        description: 'Weather for a location. Asks for your GitHub login first (an elicitation), then answers.',
        inputSchema: fromJsonSchema(weatherSchema),
      },
      (args, ctx) => {
        // The SDK validated args against the input schema.
        const { location } = /** @type {{ location: string }} */ (args);
        const st = ctx.mcpReq.requestState();
        if (st === undefined) {
          const sealKey = watcher.keyring().primary.id;
          return inputRequired({
            inputRequests: {
              github_login: inputRequired.elicit({ message: 'Your GitHub username?', requestedSchema: fromJsonSchema(loginSchema) }),
            },
            requestState: requestState.mint(ctx, { location, sealedBy: replica, sealKey }),
          });
        }
        const state = /** @type {WeatherState} */ (st);
        const login = acceptedContent(ctx.mcpReq.inputResponses, 'github_login')?.name ?? '';
        stats.completed++;
        return {
          content: [{ type: /** @type {const} */ ('text'), text: `Sunny in ${state.location} for ${String(login)}` }],
          structuredContent: { location: state.location, login, sealedBy: state.sealedBy, sealKey: state.sealKey, openedBy: replica },
        };
      },
    );
    return server;
  }),
);

const http = createServer((/** @type {import('node:http').IncomingMessage} */ req, /** @type {import('node:http').ServerResponse} */ res) => {
  const url = req.url ?? '/';
  if (req.method === 'GET' && url === '/healthz') {
    res.end('ok\n');
    return;
  }
  if (req.method === 'GET' && url === '/metrics') {
    res.setHeader('Content-Type', METRICS_CONTENT_TYPE);
    res.end(metrics.exposition());
    return;
  }
  if (req.method === 'GET' && url === '/debug/keyring') {
    const r = watcher.keyring();
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({
      replica, fingerprint: r.fingerprint, keyIds: r.ids, sealKey: r.primary.id,
      acknowledged: reporter?.acknowledged() ?? '', completed: stats.completed, rejected: stats.rejected,
    }));
    return;
  }
  if (url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  void serveFetch((request) => mcp.fetch(request), req, res);
});

const i = (flags.listen ?? ':8080').lastIndexOf(':');
const host = (flags.listen ?? '').slice(0, i) || '0.0.0.0';
http.listen(Number((flags.listen ?? '').slice(i + 1)), host);
for (const sig of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
  process.on(sig, () => {
    http.close();
    watcher.close();
    process.exit(0);
  });
}
