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

export interface GoReplica {
  proc: ChildProcess;
  addr: string;
  stderr: () => string;
  /** Resolves once the replica has put in service the keyring of this fingerprint. */
  loaded: (fingerprint: string) => Promise<void>;
  /** Stops the replica: `go run` and the program it built, its own process group. */
  close: () => Promise<void>;
}

/** Starts `go run test/goreplica serve ...` and resolves with the process and the address it serves. */
export function goServe(...args: string[]): Promise<GoReplica> {
  // A process group of its own: `go run` does not pass SIGTERM on to the program it runs, so the
  // group is signalled, both at once.
  const proc = spawn('go', ['run', pkg, 'serve', ...args], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => {
    resolve();
  }));
  const close = async (): Promise<void> => {
    if (proc.pid !== undefined && proc.exitCode === null) {
      try {
        process.kill(-proc.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await exited;
    proc.stdout.destroy();
    proc.stderr.destroy();
  };
  let err = '';
  proc.stderr.on('data', (b: Buffer) => {
    err += b.toString();
  });
  const fingerprints = new Set<string>();
  const waiting = new Map<string, () => void>();
  const loaded = (fp: string): Promise<void> =>
    fingerprints.has(fp) ? Promise.resolve() : new Promise((resolve) => waiting.set(fp, resolve));
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        const k = /^keyring (\S+)$/.exec(line);
        if (k) {
          fingerprints.add(k[1] as string);
          waiting.get(k[1] as string)?.();
        }
        const m = /^listening on (\S+)$/.exec(line);
        if (m) {
          resolve({ proc, addr: m[1] as string, stderr: () => err, loaded, close });
        }
      }
    });
    proc.on('exit', (code) => {
      reject(new Error(`goreplica exited (${String(code)}) before serving: ${err}`));
    });
  });
}

/** Runs the Go helper with input on its stdin and returns its stdout lines. */
export function goRunInput(input: string, ...args: string[]): Promise<string[]> {
  const proc = spawn('go', ['run', pkg, ...args], { cwd: packageRoot, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (b: Buffer) => (out += b.toString()));
  proc.stderr.on('data', (b: Buffer) => (err += b.toString()));
  proc.stdin.end(input);
  return new Promise((resolve, reject) => {
    proc.on('exit', (code) => {
      if (code === 0) {
        resolve(out.split('\n').filter((l) => l !== ''));
      } else {
        reject(new Error(`goreplica ${args.join(' ')} exited ${String(code)}: ${err}`));
      }
    });
  });
}
