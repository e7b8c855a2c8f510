#!/usr/bin/env node
// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The package's consumer for the conformance check (test/conformance, docs/consumers.md,
// "Conformance"): it follows $MRTR_KEYRING_DIR/keyring.json with a KeyringWatcher, acknowledges
// every keyring it loads with an AckReporter, prints "loaded <fingerprint> <token-ttl|none>" for
// each one before it is acknowledged, answers "serving?" on stdin with "serving <fingerprint>
// <token-ttl|none>", and writes every error to stderr. A server does the same with its codec where
// the probe is.
//
//   go run ./test/conformance -lost-answer -- node clients/typescript/dist/conformance.js

import path from 'node:path';
import { createInterface } from 'node:readline';

import { AckReporter } from './ack.js';
import type { Keyring } from './keyring.js';
import { KeyringWatcher } from './watch.js';

function say(word: string, k: Keyring): void {
  process.stdout.write(`${word} ${k.fingerprint} ${k.maxTokenTTL > 0 ? String(k.maxTokenTTL) : 'none'}\n`);
}

const logErr = (e: Error): void => {
  process.stderr.write(e.message.replace(/\n/g, ' ') + '\n');
};

async function main(): Promise<void> {
  const ac = new AbortController();
  const watcher = await KeyringWatcher.open(path.join(process.env.MRTR_KEYRING_DIR ?? '', 'keyring.json'), {
    onError: logErr,
  });
  const reporter = new AckReporter({ secret: process.env.MRTR_SECRET_NAME ?? '', onError: logErr });
  // Listeners run in the order they were added: "loaded" is printed before the reporter hears of it.
  watcher.onChange((k) => {
    say('loaded', k);
  });
  say('loaded', watcher.keyring());
  reporter.follow(watcher);
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === 'serving?') {
      say('serving', watcher.keyring());
    }
  });
  const stop = (): void => {
    ac.abort();
    watcher.close();
    process.stdin.destroy();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await reporter.run(ac.signal);
}

main().catch((e: unknown) => {
  logErr(e instanceof Error ? e : new Error(String(e)));
  process.exit(1);
});
