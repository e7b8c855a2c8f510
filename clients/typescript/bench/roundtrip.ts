// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The cost of one round trip (seal, then open) of this package's SignedCodec against the SDK's own
// createRequestStateCodec (@modelcontextprotocol/server), on the same payload and binding: the
// state of the tests' get_weather tool, bound to the method, the params and the principal (the SDK
// codec binds the same three through its bind callback). Each codec runs ROUNDS rounds of ITERATIONS
// round trips, alternating, and the median of its rounds is reported: a slow spell of the shared
// machine then hits both. Prints a markdown table and one JSON line.

import { createRequestStateCodec, type ServerContext } from '@modelcontextprotocol/server';

import { Keyring, SignedCodec, type Binding } from '../src/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 5000);

const secret = new Uint8Array(32).fill(7);
const state = { location: 'Paris', sealedBy: 'ts-0', sealKey: 'k1', step: 1, asked: ['github_login'] };
const stateText = JSON.stringify(state);
const params = '{"name":"get_weather","arguments":{"location":"Paris","units":"metric","days":3},"_meta":{"progressToken":7}}';
const binding: Binding = { method: 'tools/call', params, principal: '{"iss":"https://issuer.example","sub":"user-123"}' };

const ours = new SignedCodec(new Keyring([{ id: 'k1', secret }]), { ttlSeconds: 300 });
const sdk = createRequestStateCodec<typeof state>({
  key: secret,
  ttlSeconds: 300,
  // The same three things bound: the method, the params (here as the SDK hands them, parsed) and the principal.
  bind: (ctx) => `${ctx.mcpReq.method}\u0000${params}\u0000${binding.principal as string}`,
});
const ctx = { mcpReq: { method: 'tools/call' } } as unknown as ServerContext;

function oursRoundTrip(): void {
  const tok = ours.seal(binding, stateText);
  JSON.parse(ours.open(binding, tok));
}

async function sdkRoundTrip(): Promise<void> {
  const tok = await sdk.mint(state, ctx);
  await sdk.verify(tok, ctx);
}

async function round(f: () => void | Promise<void>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) {
    await f();
  }
  return Number(process.hrtime.bigint() - start) / ITERATIONS; // ns per round trip
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

// Warm up both (JIT, HMAC key schedules, WebCrypto key import).
await round(oursRoundTrip);
await round(sdkRoundTrip);
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  a.push(await round(oursRoundTrip));
  b.push(await round(sdkRoundTrip));
}
const ma = median(a);
const mb = median(b);
const tokOurs = ours.seal(binding, stateText);
const tokSdk = await sdk.mint(state, ctx);
console.log(`node ${process.version}, @modelcontextprotocol/server 2.4.0, ${ROUNDS} rounds of ${ITERATIONS} round trips, medians`);
console.log('');
console.log('| codec | round trip (seal + open) | token bytes |');
console.log('| --- | ---: | ---: |');
console.log(`| @mrtr-dev/keyring SignedCodec (mrtr2) | ${(ma / 1000).toFixed(1)} µs | ${tokOurs.length} |`);
console.log(`| SDK createRequestStateCodec (v1.) | ${(mb / 1000).toFixed(1)} µs | ${tokSdk.length} |`);
console.log(`| ratio | ${(ma / mb).toFixed(2)}× | |`);
console.log(JSON.stringify({ oursNs: Math.round(ma), sdkNs: Math.round(mb), ratio: Number((ma / mb).toFixed(3)) }));
