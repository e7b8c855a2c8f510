// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The cost of one round trip (seal, then open) of this package's SignedCodec against the SDK's own
// createRequestStateCodec (@modelcontextprotocol/server), on the same payload and binding: the
// fixture of the Go token benchmarks (pkg/token/testdata/bench/fixture.json, read in place: a
// tools/call retry with ~300 bytes of salient params, a string principal, 229 bytes of state),
// bound to the method, the params and the principal (the SDK codec binds the same three through its
// bind callback). Each codec runs ROUNDS rounds of ITERATIONS round trips, alternating, and the
// median of its rounds is reported, in CPU time of the process (the SDK's WebCrypto work included,
// wherever it runs) and in wall time: a slow spell of the shared machine then hits both. Prints a
// markdown table and one JSON line.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createRequestStateCodec, type ServerContext } from '@modelcontextprotocol/server';

import { Keyring, SignedCodec, type Binding } from '../src/index.js';

// Run from build/bench: the repository's root is four folders up.
const fixturePath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'pkg', 'token', 'testdata', 'bench', 'fixture.json');
const fixture = JSON.parse(readFileSync(fixturePath, 'utf8')) as {
  binding: { method: string; params: unknown; principal: string };
  state: Record<string, unknown>;
};

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 5000);

const secret = new Uint8Array(32).fill(7);
const state = fixture.state;
const stateText = JSON.stringify(state);
const params = JSON.stringify(fixture.binding.params);
const binding: Binding = { method: fixture.binding.method, params, principal: JSON.stringify(fixture.binding.principal) };

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

/** One round: [CPU ns, wall ns] per round trip. */
async function round(f: () => void | Promise<void>): Promise<[number, number]> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) {
    await f();
  }
  const wall = Number(process.hrtime.bigint() - start);
  const used = process.cpuUsage(cpu);
  return [((used.user + used.system) * 1000) / ITERATIONS, wall / ITERATIONS];
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

// Warm up both (JIT, HMAC key schedules, WebCrypto key import).
await round(oursRoundTrip);
await round(sdkRoundTrip);
const a: [number, number][] = [];
const b: [number, number][] = [];
for (let r = 0; r < ROUNDS; r++) {
  a.push(await round(oursRoundTrip));
  b.push(await round(sdkRoundTrip));
}
const ma = median(a.map((x) => x[0]));
const mb = median(b.map((x) => x[0]));
const wa = median(a.map((x) => x[1]));
const wb = median(b.map((x) => x[1]));
const tokOurs = ours.seal(binding, stateText);
const tokSdk = await sdk.mint(state, ctx);
console.log(`node ${process.version}, @modelcontextprotocol/server 2.4.0, ${ROUNDS} rounds of ${ITERATIONS} round trips, medians`);
console.log('');
console.log('| codec | CPU per round trip (seal + open) | wall | token bytes |');
console.log('| --- | ---: | ---: | ---: |');
console.log(`| @mrtr-dev/keyring SignedCodec (mrtr2) | ${(ma / 1000).toFixed(1)} µs | ${(wa / 1000).toFixed(1)} µs | ${tokOurs.length} |`);
console.log(`| SDK createRequestStateCodec (v1.) | ${(mb / 1000).toFixed(1)} µs | ${(wb / 1000).toFixed(1)} µs | ${tokSdk.length} |`);
console.log(`| ratio (goal ≤ 1.2×) | ${(ma / mb).toFixed(2)}× | ${(wa / wb).toFixed(2)}× | |`);
console.log(
  JSON.stringify({ oursCpuNs: Math.round(ma), sdkCpuNs: Math.round(mb), ratio: Number((ma / mb).toFixed(3)), oursWallNs: Math.round(wa), sdkWallNs: Math.round(wb) }),
);
