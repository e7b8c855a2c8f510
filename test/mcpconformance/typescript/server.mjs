// @ts-check
// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The TypeScript consumer's server for the MCP project's conformance suite
// (@modelcontextprotocol/conformance): the official SDK's 2026-07-28 HTTP entry (createMcpHandler,
// a server per request, stateless) with the suite's multi round-trip test tools
// (test_input_required_result_*) and prompt, the request state sealed by @mrtr-dev/keyring
// (RequestState over a SignedCodec) with the keyring of a mounted folder (KeyringWatcher).
// test/mcpconformance runs replicas of it behind a round-robin balancer while it rotates the
// keyring. Type-checked by `npm run check` (tsc --strict over this file's JSDoc).
//
//   node server.mjs --listen 127.0.0.1:8080 --keyring-dir DIR --token-ttl 3

import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import {
  CLIENT_CAPABILITIES_META_KEY,
  McpServer,
  acceptedContent,
  createMcpHandler,
  inputRequired,
  inputResponse,
} from '@modelcontextprotocol/server';
import { KeyringWatcher, RequestState, SignedCodec, anonymous, recordParams } from '@mrtr-dev/keyring';

import { serveFetch } from '../../../examples/typescript-server/node-fetch.mjs';

/** @typedef {{ tool: string, step: number, name?: string }} Step */
/** @typedef {import('@modelcontextprotocol/server').ServerContext} Ctx */
/** @typedef {import('@modelcontextprotocol/server').CallToolResult} CallToolResult */
/** @typedef {import('@modelcontextprotocol/server').InputRequiredResult} InputRequiredResult */

const { values: flags } = parseArgs({
  options: {
    listen: { type: 'string', default: '127.0.0.1:8080' },
    'keyring-dir': { type: 'string', default: '' },
    'token-ttl': { type: 'string', default: '3' },
  },
});
const dir = flags['keyring-dir'] ?? '';
if (dir === '') {
  throw new Error('--keyring-dir is required: the folder the keyring Secret is mounted at');
}
/** @param {string} msg */
const warn = (msg) => console.error(`${new Date().toISOString()} WARN ${msg}`);

const watcher = await KeyringWatcher.open(dir, { onError: (e) => warn(`keyring not reloaded: ${e.message}`) });
const codec = new SignedCodec(watcher, { ttlSeconds: Number(flags['token-ttl']) });
/** @type {RequestState<Step>} */
const requestState = new RequestState(codec, { principal: anonymous });

/** @param {string} message @param {string} field */
const elicit = (message, field) =>
  inputRequired.elicit({ message, requestedSchema: { type: 'object', properties: { [field]: { type: 'string' } }, required: [field] } });
/** @param {string} text @param {number} maxTokens */
const sample = (text, maxTokens) =>
  inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text } }], maxTokens });
/** @param {string} text @returns {CallToolResult} */
const text = (text) => ({ content: [{ type: 'text', text }] });

/**
 * The state of a retry, which the SDK's verify hook (requestState.verify) has opened: it must have
 * been sealed by tool at step want. A retry without state, or with another tool's, is refused.
 * @param {Ctx} ctx @param {string} tool @param {number} want
 * @returns {Step}
 */
function opened(ctx, tool, want) {
  const st = ctx.mcpReq.requestState();
  const step = /** @type {Step | undefined} */ (st);
  if (step?.tool !== tool || step.step !== want) {
    throw new Error(`the request state is not ${tool}'s step ${want}`);
  }
  return step;
}

/**
 * The suite's test tools: those whose scenario checks the request state seal theirs, so that the
 * retry, which the balancer sends to another replica, opens it there.
 * @type {Record<string, (ctx: Ctx) => CallToolResult | InputRequiredResult>}
 */
const tools = {
  // No state: its scenarios retry with the answer alone (extra keys, wrong keys, bad values).
  test_input_required_result_elicitation: (ctx) => {
    const c = acceptedContent(ctx.mcpReq.inputResponses, 'user_name');
    if (c !== undefined) {
      return text(`Hello, ${String(c.name)}!`);
    }
    return inputRequired({ inputRequests: { user_name: elicit('What is your name?', 'name') } });
  },
  test_input_required_result_sampling: (ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, 'capital_question');
    if (r.kind === 'sampling') {
      return text(JSON.stringify(r.result.content));
    }
    return inputRequired({ inputRequests: { capital_question: sample('What is the capital of France?', 100) } });
  },
  test_input_required_result_list_roots: (ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
    if (r.kind === 'roots') {
      return text(`roots: ${r.roots.map((root) => root.uri).join(' ')}`);
    }
    return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
  },
  test_input_required_result_request_state: (ctx) => confirmed(ctx, 'test_input_required_result_request_state'),
  test_input_required_result_tampered_state: (ctx) => confirmed(ctx, 'test_input_required_result_tampered_state'),
  test_input_required_result_multiple_inputs: (ctx) => {
    const tool = 'test_input_required_result_multiple_inputs';
    if (ctx.mcpReq.requestState() === undefined) {
      return inputRequired({
        inputRequests: {
          user_name: elicit('What is your name?', 'name'),
          greeting: sample('Generate a greeting', 50),
          client_roots: inputRequired.listRoots(),
        },
        requestState: requestState.mint(ctx, { tool, step: 1 }),
      });
    }
    opened(ctx, tool, 1);
    const rs = ctx.mcpReq.inputResponses;
    if (acceptedContent(rs, 'user_name') === undefined || inputResponse(rs, 'greeting').kind !== 'sampling' ||
      inputResponse(rs, 'client_roots').kind !== 'roots') {
      throw new Error('inputResponses lack one of user_name, greeting and client_roots');
    }
    return text('all three inputs received');
  },
  // Asks for a name, then (sealing the name into a new state) for a colour.
  test_input_required_result_multi_round: (ctx) => {
    const tool = 'test_input_required_result_multi_round';
    if (ctx.mcpReq.requestState() === undefined) {
      return inputRequired({
        inputRequests: { step1: elicit('Step 1: What is your name?', 'name') },
        requestState: requestState.mint(ctx, { tool, step: 1 }),
      });
    }
    const name = acceptedContent(ctx.mcpReq.inputResponses, 'step1');
    if (name !== undefined) {
      opened(ctx, tool, 1);
      return inputRequired({
        inputRequests: { step2: elicit('Step 2: What is your favorite color?', 'color') },
        requestState: requestState.mint(ctx, { tool, step: 2, name: String(name.name) }),
      });
    }
    const st = opened(ctx, tool, 2);
    const colour = acceptedContent(ctx.mcpReq.inputResponses, 'step2');
    if (colour === undefined) {
      throw new Error('inputResponses lack an accepted step2');
    }
    return text(`${st.name ?? ''} likes ${String(colour.color)}`);
  },
  // Asks only for what the client declared it can answer.
  test_input_required_result_capabilities: (ctx) => {
    if (Object.keys(ctx.mcpReq.inputResponses ?? {}).length > 0) {
      return text('inputs received');
    }
    const envelope = /** @type {Record<string, unknown>} */ (ctx.mcpReq.envelope ?? {});
    const caps = /** @type {{ sampling?: unknown, elicitation?: unknown }} */ (envelope[CLIENT_CAPABILITIES_META_KEY] ?? {});
    /** @type {Record<string, import('@modelcontextprotocol/server').InputRequest>} */
    const inputRequests = {};
    if (caps.sampling !== undefined) {
      inputRequests.question = sample('What is the capital of France?', 100);
    }
    if (caps.elicitation !== undefined) {
      inputRequests.user_name = elicit('What is your name?', 'name');
    }
    if (Object.keys(inputRequests).length === 0) {
      return text('the client declared no capability to ask with');
    }
    return inputRequired({ inputRequests });
  },
};

/**
 * request-state and tampered-state: a sealed state, which the retry must bring back unchanged.
 * @param {Ctx} ctx @param {string} tool
 * @returns {CallToolResult | InputRequiredResult}
 */
function confirmed(ctx, tool) {
  if (ctx.mcpReq.requestState() === undefined) {
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        }),
      },
      requestState: requestState.mint(ctx, { tool, step: 1 }),
    });
  }
  opened(ctx, tool, 1);
  if (acceptedContent(ctx.mcpReq.inputResponses, 'confirm') === undefined) {
    throw new Error('inputResponses lack an accepted confirm');
  }
  return text('state-ok: the request state opened on this replica');
}

// A server per request: the 2026-07-28 HTTP entry, stateless, so that any replica answers any round.
const mcp = recordParams(
  createMcpHandler(() => {
    const server = new McpServer({ name: 'mrtr-conformance-typescript', version: '0.1.0' }, { requestState: { verify: requestState.verify } });
    for (const [name, handler] of Object.entries(tools)) {
      server.registerTool(name, { description: `The conformance suite's ${name}` }, handler);
    }
    const prompt = 'test_input_required_result_prompt';
    server.registerPrompt(prompt, { description: 'A prompt that asks for its context' }, (ctx) => {
      if (ctx.mcpReq.requestState() === undefined) {
        return inputRequired({
          inputRequests: { user_context: elicit('What context should the prompt use?', 'context') },
          requestState: requestState.mint(ctx, { tool: prompt, step: 1 }),
        });
      }
      opened(ctx, prompt, 1);
      const c = acceptedContent(ctx.mcpReq.inputResponses, 'user_context');
      if (c === undefined) {
        throw new Error('inputResponses lack an accepted user_context');
      }
      return { messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${String(c.context)}` } }] };
    });
    return server;
  }),
);

const http = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/debug/keyring') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ fingerprint: watcher.keyring().fingerprint }));
    return;
  }
  if (req.url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  void serveFetch((request) => mcp.fetch(request), req, res);
});

const listen = flags.listen ?? '';
const i = listen.lastIndexOf(':');
http.listen(Number(listen.slice(i + 1)), listen.slice(0, i) || '127.0.0.1');
for (const sig of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
  process.on(sig, () => {
    http.close();
    watcher.close();
    process.exit(0);
  });
}
