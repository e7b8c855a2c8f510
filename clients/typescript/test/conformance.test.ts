// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The consumer contract's conformance check (test/conformance at the repository's root, a Go
// program) run against the package's conformance consumer (test/conformance/consumers/typescript at
// the repository's root: the watcher, the reporter and the codec behind the check's probe protocol,
// on the package as compiled here), with -lost-answer: every check must pass.
// MRTR_CONFORMANCE_ROOT names another checkout that holds the check.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { packageRoot, repoRoot } from './paths.js';

const root = process.env.MRTR_CONFORMANCE_ROOT ?? repoRoot;
const consumer = path.join(root, 'test', 'conformance', 'consumers', 'typescript', 'consumer.mjs');
const present = existsSync(path.join(root, 'test', 'conformance', 'main.go')) && existsSync(consumer);

describe('the conformance check', { skip: present ? false : `no conformance check in ${root}/test/conformance` }, () => {
  it('passes every check, the lost answer and the metrics included', async () => {
    const entry = path.join(packageRoot, 'build', 'src', 'index.js');
    const { stdout } = await promisify(execFile)(
      'go',
      ['run', './test/conformance', '-lost-answer', '-metrics', '--', process.execPath, consumer, entry],
      { cwd: root, maxBuffer: 16 << 20 },
    ).catch((e: unknown) => {
      const err = e as { stdout?: string; stderr?: string };
      assert.fail(`the conformance check failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    });
    assert.match(stdout, /^\d+ passed, 0 failed$/m, stdout);
    assert.doesNotMatch(stdout, /^FAIL/m, stdout);
    assert.match(stdout, /^PASS reports-metrics/m, stdout);
  });
});
