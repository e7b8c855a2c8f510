// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';

import { packageRoot } from './paths.js';

const exec = promisify(execFile);

const pkg = './test/goreplica';

/** Runs the Go helper (test/goreplica) with `go run` from the repository's root and returns its stdout lines. */
export async function goRun(...args: string[]): Promise<string[]> {
  const { stdout } = await exec('go', ['run', pkg, ...args], { cwd: packageRoot, maxBuffer: 64 << 20 });
  return stdout.split('\n').filter((l) => l !== '');
}

/** Starts `go run test/goreplica serve ...` and resolves with the process and the address it serves. */
export function goServe(...args: string[]): Promise<{ proc: ChildProcess; addr: string; stderr: () => string }> {
  const proc = spawn('go', ['run', pkg, 'serve', ...args], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (b: Buffer) => {
    err += b.toString();
  });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening on (\S+)\n/.exec(out);
      if (m) {
        resolve({ proc, addr: m[1] as string, stderr: () => err });
      }
    });
    proc.on('exit', (code) => {
      reject(new Error(`goreplica exited (${String(code)}) before serving: ${err}`));
    });
  });
}
