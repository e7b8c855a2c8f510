// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The TypeScript package's conformance consumer (docs/consumers.md, "Conformance"): the package's
// KeyringWatcher, AckReporter and SignedCodec behind the check's probe protocol. It lives in the
// test tree, not in the published package, and takes the package's built entry point as its
// argument, so that it uses only what the package exports:
//
//   (cd clients/typescript && npm run build)
//   go run ./test/conformance -lost-answer -- node test/conformance/consumers/typescript/consumer.mjs clients/typescript/dist/index.js
//
// It follows $MRTR_KEYRING_DIR/keyring.json, acknowledges every keyring it loads, prints
// "loaded <fingerprint> <token-ttl|none>" for each one before it is acknowledged, answers
// "serving?" on stdin with "serving <fingerprint> <token-ttl|none>" and "seal?" with
// "sealed <token>", and writes every error to stderr. A server does the same with its codec on the
// SDK's seams where the probe is.

import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const entry = process.argv[2];
if (entry === undefined) {
  process.stderr.write('usage: consumer.mjs <the package\'s built index.js>\n');
  process.exit(2);
}
const { AckReporter, KeyringWatcher, Metrics, SignedCodec, ANONYMOUS } = await import(pathToFileURL(path.resolve(entry)).href);

// The lifetime of the tokens it seals: at most the token-ttl of every keyring the check mounts
// (the codec refuses to seal longer than the keyring in service declares).
const TTL_SECONDS = 60;

function say(word, k) {
  process.stdout.write(`${word} ${k.fingerprint} ${k.maxTokenTTL > 0 ? String(k.maxTokenTTL) : 'none'}\n`);
}

const logErr = (e) => {
  process.stderr.write(String(e instanceof Error ? e.message : e).replace(/\n/g, ' ') + '\n');
};

async function main() {
  const ac = new AbortController();
  // The consumer metrics (docs/consumers.md, "Metrics"), answered to "metrics?".
  const metrics = new Metrics();
  const watcher = await KeyringWatcher.open(path.join(process.env.MRTR_KEYRING_DIR ?? '', 'keyring.json'), {
    onError: logErr,
    metrics,
  });
  const reporter = new AckReporter({ secret: process.env.MRTR_SECRET_NAME ?? '', onError: logErr, metrics });
  // The codec reads the watcher's keyring on every seal: keys[0] of the keyring in service.
  const codec = new SignedCodec(watcher, { ttlSeconds: TTL_SECONDS, metrics });
  const binding = { method: 'tools/call', params: '{"name":"conformance"}', principal: ANONYMOUS };
  // Listeners run in the order they were added: "loaded" is printed before the reporter hears of it.
  watcher.onChange((k) => {
    say('loaded', k);
  });
  say('loaded', watcher.keyring());
  reporter.follow(watcher);
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === 'serving?') {
      say('serving', watcher.keyring());
    } else if (line.startsWith('open? ')) {
      let result = 'ok';
      try {
        codec.open(binding, line.slice('open? '.length));
      } catch {
        result = 'rejected';
      }
      process.stdout.write(`opened ${result}\n`);
    } else if (line === 'metrics?') {
      const text = metrics.exposition().split('\n').filter((l) => l !== '').map((l) => `metric ${l}\n`).join('');
      process.stdout.write(`${text}metrics end\n`);
    } else if (line === 'seal?') {
      try {
        const tok = codec.seal(binding, '{"probe":true}');
        process.stdout.write(`sealed ${tok}\n`);
      } catch (e) {
        logErr(e);
      }
    }
  });
  const stop = () => {
    ac.abort();
    watcher.close();
    process.stdin.destroy();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await reporter.run(ac.signal);
}

main().catch((e) => {
  logErr(e);
  process.exit(1);
});
