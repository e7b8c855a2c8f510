// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The codec on the official TypeScript SDK (@modelcontextprotocol/server 2.4.0), without importing
// it: the SDK's ServerContext is assignable to RequestStateContext below.
//
// The SDK's only seam is ServerOptions.requestState.verify(state, ctx), run before the handler of
// every round that echoes a requestState; what it returns is what ctx.mcpReq.requestState()
// gives the handler, and a throw answers -32602 "Invalid or expired requestState". A handler mints
// its own string into inputRequired({requestState}). Neither sees the request's params: the SDK
// hands verify the method and _meta only. So, as the Go library's mcpstate.RecordParams does,
// recordParams wraps the HTTP handler (createMcpHandler's fetch) and keeps the params of each
// request as received, byte for byte, for as long as it is served: the binding is then exactly
// Snodo's (and Go's), 1.0 and 1 apart, every member bound, and a Go replica behind the same
// balancer opens what this one seals.

import { Reader, textOf } from './canonical.js';
import { ANONYMOUS, ConfigError, InvalidRequestStateError, type JSONText, type SignedCodec } from './signed.js';

/** What of the SDK's ServerContext the glue reads. */
export interface RequestStateContext {
  mcpReq: { id: string | number; method: string };
  http?: { req?: Request | undefined; authInfo?: AuthInfoLike | undefined } | undefined;
}

/** What of the SDK's AuthInfo principalFromAuthInfo reads. */
export interface AuthInfoLike {
  clientId?: string;
  scopes?: string[];
  extra?: Record<string, unknown>;
}

/** The request whose params were recorded. */
interface Recorded {
  id: string | number | null;
  method: string;
  params: string | undefined; // the params' JSON text as received; undefined: no params
}

const recorded = new WeakMap<Request, Recorded>();

/** The methods whose results may be input-required (MRTR). */
const MRTR_METHODS = new Set(['tools/call', 'resources/read', 'prompts/get']);

/** The default bound on a body that recordParams reads: the SDK's own default (4 MiB). */
const MAX_RECORDED_BODY = 4 << 20;

/** The options of createMcpHandler's fetch that recordParams reads and passes on. */
export interface FetchOptions {
  parsedBody?: unknown;
  [k: string]: unknown;
}

/** The shape of createMcpHandler's result that recordParams wraps. */
export interface FetchHandler {
  fetch(request: Request, options?: FetchOptions): Promise<Response>;
}

/**
 * Wraps an MCP HTTP handler (createMcpHandler's result, or anything with fetch(request, options))
 * so that the params of each tools/call, resources/read and prompts/get request stay available,
 * byte for byte, to the RequestState glue while the request is served. A body that is not one such
 * request (a batch, a response, a repeated "method", "id" or "params", more than 4 MiB) passes
 * unrecorded, and its state does not open. The body it parsed goes on as options.parsedBody, so
 * that the SDK neither reads it again nor serves a copy of the request (its 2025-era fallback
 * would otherwise hand the handlers a clone, whose params were not recorded).
 */
export function recordParams<H extends FetchHandler>(handler: H): H {
  const fetch = async (request: Request, options?: FetchOptions): Promise<Response> => {
    let opts = options;
    let req = request;
    if (request.method.toUpperCase() === 'POST' && request.body !== null && !request.bodyUsed) {
      // At most MAX_RECORDED_BODY + 1 bytes, whatever Content-Length says (Go's RecordParams): a
      // chunked body has none, and a longer one is the SDK's to refuse, not this wrapper's to hold.
      const { head, rest } = await readAtMost(request.body, MAX_RECORDED_BODY + 1);
      if (rest !== undefined) {
        // Over the bound: unrecorded, and the handler reads the same bytes, those read and then
        // the rest, under its own limit (the SDK answers 413 beyond 4 MiB without reading on).
        req = new Request(request, { body: prefixed(head, rest), duplex: 'half' } as RequestInit);
      } else {
        let text: string | undefined;
        try {
          text = textOf(head);
        } catch {
          // not UTF-8: not a request to record, and the SDK answers it
        }
        const r = text === undefined ? undefined : requestOf(text);
        if (opts?.parsedBody === undefined && text !== undefined) {
          try {
            opts = { ...opts, parsedBody: JSON.parse(text) as unknown };
          } catch {
            // not JSON: the SDK answers it
          }
        }
        if (opts?.parsedBody === undefined) {
          // The handler reads the body itself: give it the bytes read.
          req = new Request(request, { body: head, duplex: 'half' } as RequestInit);
        }
        if (r !== undefined) {
          recorded.set(req, r);
        }
      }
    }
    return handler.fetch(req, opts);
  };
  return new Proxy(handler, {
    get(target, prop, receiver): unknown {
      return prop === 'fetch' ? fetch : Reflect.get(target, prop, receiver);
    },
  });
}

/**
 * Reads body until it ends or more than limit - 1 bytes have come: head holds what was read, and
 * rest, if the body did not end, the reader of what is left. The chunk that crosses the bound is
 * the last one read.
 */
async function readAtMost(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ head: Uint8Array; rest: ReadableStreamDefaultReader<Uint8Array> | undefined }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < limit) {
    const { done, value } = await reader.read();
    if (done) {
      return { head: concat(chunks, size), rest: undefined };
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return { head: concat(chunks, size), rest: reader };
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) {
    return chunks[0] as Uint8Array;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** A stream of head and then what rest reads, pulled only as its reader asks. */
function prefixed(head: Uint8Array, rest: ReadableStreamDefaultReader<Uint8Array>): ReadableStream<Uint8Array> {
  let first = true;
  return new ReadableStream<Uint8Array>(
    {
      async pull(c): Promise<void> {
        if (first) {
          first = false;
          c.enqueue(head);
          return;
        }
        const { done, value } = await rest.read();
        if (done) {
          c.close();
        } else {
          c.enqueue(value);
        }
      },
      cancel(reason): Promise<void> {
        return rest.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * The recorded request of one JSON-RPC request body, or undefined if it is not one to record. The
 * members' values are skipped, not canonicalized (Go's requestParams): only the method and a
 * scalar id are decoded. The params are canonicalized only when a state is sealed or opened.
 */
function requestOf(body: string): Recorded | undefined {
  const spans = new Reader(body).topLevelMembers();
  if (spans === undefined) {
    return undefined;
  }
  const seen = new Map<string, string>();
  for (const [name, text] of spans) {
    if ((name === 'method' || name === 'params' || name === 'id') && seen.has(name)) {
      return undefined;
    }
    seen.set(name, text);
  }
  const m = seen.get('method');
  if (m === undefined || !m.startsWith('"')) {
    return undefined;
  }
  const method = JSON.parse(m) as string;
  if (!MRTR_METHODS.has(method)) {
    return undefined;
  }
  const idText = seen.get('id');
  if (idText !== undefined && (idText.startsWith('[') || idText.startsWith('{'))) {
    return undefined;
  }
  const id = idText === undefined ? null : (JSON.parse(idText) as unknown);
  if (id !== null && typeof id !== 'string' && typeof id !== 'number') {
    return undefined;
  }
  return { id, method, params: seen.get('params') };
}

export interface RequestStateOptions {
  /**
   * The authenticated caller of a request as JSON text, bound into its state: ANONYMOUS ("null")
   * for a server without authentication (use anonymous), or principalFromAuthInfo.
   */
  principal: (ctx: RequestStateContext) => JSONText;
  /**
   * The params of a request as JSON text, for a transport recordParams does not wrap (stdio, an
   * in-memory pair). Default: the params recordParams recorded.
   */
  params?: (ctx: RequestStateContext) => JSONText | undefined;
  /** Receives every refused state's reason (for logs; never sent to the client). */
  onReject?: (err: Error, ctx: RequestStateContext) => void;
}

/** The principal of servers without authentication. */
export function anonymous(): JSONText {
  return ANONYMOUS;
}

/**
 * Binds state to the caller as the SDK's AuthInfo names it: {"client":<clientId>,"iss":<iss>,
 * "scopes":[...],"sub":<sub>} with iss and sub from AuthInfo.extra, each absent part left out but
 * sub, which is required (a request without one is a ConfigError, never silently anonymous).
 */
export function principalFromAuthInfo(opts: { bindScopes?: boolean } = {}): (ctx: RequestStateContext) => JSONText {
  return (ctx) => {
    const a = ctx.http?.authInfo;
    const sub = a?.extra?.sub;
    if (typeof sub !== 'string' || sub === '') {
      throw new ConfigError('principal', 'the request carries no authenticated user (no AuthInfo with extra.sub)');
    }
    const p: Record<string, unknown> = { sub };
    if (typeof a?.clientId === 'string' && a.clientId !== '') {
      p.client = a.clientId;
    }
    if (typeof a?.extra?.iss === 'string') {
      p.iss = a.extra.iss;
    }
    if (opts.bindScopes === true) {
      p.scopes = [...(a?.scopes ?? [])].sort();
    }
    return JSON.stringify(p);
  };
}

/**
 * The SignedCodec on the SDK's seams: verify for ServerOptions.requestState.verify, mint for
 * inputRequired({requestState}). Each binds the request's method, its params as received (but the
 * top-level _meta, requestState and inputResponses) and the principal, as Snodo does.
 *
 *   const rs = new RequestState(codec, { principal: anonymous });
 *   const handler = recordParams(createMcpHandler(() => {
 *     const server = new McpServer(info, { requestState: { verify: rs.verify } });
 *     server.registerTool('t', ..., (args, ctx) => {
 *       const st = ctx.mcpReq.requestState<MyState>();
 *       if (st === undefined) return inputRequired({ inputRequests, requestState: rs.mint(ctx, {step: 1}) });
 *       ...
 *     });
 *     return server;
 *   }));
 */
export class RequestState<T = unknown> {
  constructor(
    readonly codec: SignedCodec,
    private readonly opts: RequestStateOptions,
  ) {}

  private binding(ctx: RequestStateContext): { method: string; params: JSONText | undefined; principal: JSONText } {
    let params: JSONText | undefined;
    if (this.opts.params !== undefined) {
      params = this.opts.params(ctx);
    } else {
      const req = ctx.http?.req;
      const r = req === undefined ? undefined : recorded.get(req);
      if (r === undefined) {
        throw new ConfigError(
          'params',
          'the params of this request were not recorded: wrap the HTTP handler with recordParams, or give RequestStateOptions.params',
        );
      }
      if (r.method !== ctx.mcpReq.method || (r.id !== null && r.id !== ctx.mcpReq.id)) {
        throw new ConfigError('params', 'the recorded request is not the one being served');
      }
      params = r.params;
    }
    return { method: ctx.mcpReq.method, params, principal: this.opts.principal(ctx) };
  }

  /**
   * Seals state (any JSON-serializable value) bound to the request of ctx: the string for
   * inputRequired({requestState}). Throws InputError for params that cannot be bound (the client's
   * mistake: answer invalid params) and ConfigError for the server's own.
   */
  mint(ctx: RequestStateContext, state: T): string {
    const text = JSON.stringify(state);
    if (typeof text !== 'string') {
      throw new ConfigError('state', 'is not JSON-serializable');
    }
    return this.codec.seal(this.binding(ctx), text);
  }

  /**
   * ServerOptions.requestState.verify: opens state for the request of ctx and returns the value it
   * carries (what ctx.mcpReq.requestState() then gives the handler), or throws, which the SDK
   * answers as -32602 "Invalid or expired requestState".
   */
  readonly verify = (state: string, ctx: RequestStateContext): T => {
    try {
      return JSON.parse(this.codec.open(this.binding(ctx), state)) as T;
    } catch (e) {
      const err = e instanceof Error ? e : new InvalidRequestStateError();
      this.opts.onReject?.(err, ctx);
      throw err;
    }
  };
}
