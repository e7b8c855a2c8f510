// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// A watcher of a mounted keyring Secret, as the Go library's keyring.FileSource follows one.
//
// The kubelet's atomic writer lays the volume out as
//
//   <dir>/keyring.json -> ..data/keyring.json
//   <dir>/token-ttl    -> ..data/token-ttl
//   <dir>/..data       -> ..2026_07_01_10_00_00.123456789
//
// and updates it by writing a new timestamped directory, swapping ..data over to it in one rename
// and only then removing the old one. So a read resolves ..data once, reads both files from the
// directory it names, and reads ..data again: if it moved, the read raced a swap and is retried.
// The two files always come from one snapshot, never the old keyring with the new token-ttl. A
// reload also waits until two reads in a row return the same bytes, for a writer that rewrites
// the file in place. A new keyring is validated in full before it replaces the old one; a bad one
// is reported and the last good keyring stays in service until a valid one appears.

import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { lstat, open, readlink } from 'node:fs/promises';
import path from 'node:path';

import { KEYRING_FILE, Keyring, MAX_DOCUMENT_BYTES, TOKEN_TTL_FILE, parseKeyring, parseTokenTTL } from './keyring.js';
import type { MetricsRecorder } from './metrics.js';
import type { KeyringSource } from './signed.js';

/** How long the watcher waits after the last file-system event before it re-reads (ms). */
export const DEFAULT_DEBOUNCE_MS = 100;
/** How often it re-reads even without an event, in case one was missed (ms). */
export const DEFAULT_RESYNC_MS = 10_000;

const SETTLE_FIRST_WAIT_MS = 5;
const SETTLE_MAX_WAIT_MS = 100;
const SETTLE_READS = 8;
const MAX_TOKEN_TTL_FILE_BYTES = 16;
const DATA_LINK = '..data';

export interface WatcherOptions {
  /** Receives every failed reload (an invalid or unreadable file); the last good keyring stays. */
  onError?: (err: Error) => void;
  debounceMs?: number;
  resyncMs?: number;
  /**
   * Whether the watcher keeps the process alive, as fs.watch does (default true): close it to let
   * the process exit. false leaves that to the server's own handles.
   */
  persistent?: boolean;
  /** Told of every keyring put in service (the first too) and every failed reload (docs/consumers.md, "Metrics"). */
  metrics?: MetricsRecorder;
}

/** A snapshot of the volume: keyring.json's bytes and token-ttl's, if there is one. */
interface Snapshot {
  data: Buffer;
  ttl: Buffer | undefined;
}

class Raced extends Error {}

function isNotExist(e: unknown): boolean {
  return typeof e === 'object' && e !== null && 'code' in e && (e).code === 'ENOENT';
}

/**
 * A file system error worded as Go's (*fs.PathError, "open PATH: no such file or directory"),
 * keeping Node's code for the checks.
 */
function pathError(e: unknown, file: string): Error {
  const err = e as NodeJS.ErrnoException;
  const desc = err.code === 'EISDIR' ? 'is a directory' : (/^[A-Z]+: ([^,]+)/.exec(err.message)?.[1] ?? err.message);
  return Object.assign(new Error(`keyring: ${err.syscall ?? 'open'} ${file}: ${desc}`, { cause: e }), { code: err.code });
}

async function readLimited(file: string, limit: number): Promise<Buffer> {
  let f;
  try {
    f = await open(file, 'r');
  } catch (e) {
    throw pathError(e, file);
  }
  try {
    const buf = Buffer.alloc(limit);
    let n = 0;
    while (n < limit) {
      const { bytesRead } = await f.read(buf, n, limit - n, n);
      if (bytesRead === 0) {
        break;
      }
      n += bytesRead;
    }
    return buf.subarray(0, n);
  } catch (e) {
    throw pathError(e, file);
  } finally {
    await f.close();
  }
}

/** Reads keyring.json and token-ttl from one snapshot of the volume (see the file comment). */
export async function readSnapshot(file: string): Promise<Snapshot> {
  const dir = path.dirname(file);
  const name = path.basename(file);
  const link = path.join(dir, DATA_LINK);
  let snap = dir;
  let target: string | undefined;
  try {
    if ((await lstat(file)).isSymbolicLink()) {
      target = await readlink(link);
      snap = path.resolve(dir, target);
    }
  } catch (e) {
    if (!isNotExist(e)) {
      throw e;
    }
    target = undefined;
  }
  const data = await readLimited(path.join(snap, name), MAX_DOCUMENT_BYTES + 1);
  let ttl: Buffer | undefined;
  try {
    ttl = await readLimited(path.join(snap, TOKEN_TTL_FILE), MAX_TOKEN_TTL_FILE_BYTES + 1);
  } catch (e) {
    if (!isNotExist(e)) {
      throw e;
    }
  }
  if (target !== undefined) {
    let again: string | undefined;
    try {
      again = await readlink(link);
    } catch {
      again = undefined;
    }
    if (again !== target) {
      throw new Raced(`keyring: ${link} changed while it was read`);
    }
  }
  return { data, ttl };
}

/** Builds the keyring of a snapshot read from file, naming the file in the error. */
export function parseSnapshot(file: string, s: Snapshot): Keyring {
  let r: Keyring;
  try {
    r = parseKeyring(s.data);
  } catch (e) {
    throw new Error(`keyring: ${file}: ${(e as Error).message}`, { cause: e });
  }
  if (s.ttl === undefined) {
    return r;
  }
  try {
    return r.withMaxTokenTTL(parseTokenTTL(s.ttl));
  } catch (e) {
    throw new Error(`keyring: ${path.join(path.dirname(file), TOKEN_TTL_FILE)}: ${(e as Error).message}`, { cause: e });
  }
}

/** Reads and parses the keyring at file once, with the token-ttl beside it, from one snapshot. */
export async function loadKeyringFile(file: string): Promise<Keyring> {
  let last: unknown;
  for (let i = 0; i < 3; i++) {
    try {
      return parseSnapshot(file, await readSnapshot(file));
    } catch (e) {
      last = e;
      if (!(e instanceof Raced) && !isNotExist(e)) {
        break;
      }
    }
  }
  throw last instanceof Error ? last : new Error(String(last));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function digest(s: Snapshot): string {
  const h = createHash('sha256').update(s.data);
  if (s.ttl !== undefined) {
    h.update('\x00ttl\x00').update(s.ttl);
  }
  return h.digest('hex');
}

/**
 * Follows the keyring.json of a mounted Secret directory and always holds a valid keyring: the
 * KeyringSource of a SignedCodec. Open it with KeyringWatcher.open, which fails if the first
 * keyring is not valid; close it when done.
 */
export class KeyringWatcher implements KeyringSource {
  readonly file: string;
  private current: Keyring;
  private readonly listeners = new Set<(r: Keyring) => void>();
  private readonly onError: ((err: Error) => void) | undefined;
  private readonly metrics: MetricsRecorder | undefined;
  private readonly debounceMs: number;
  private fsWatcher: FSWatcher | undefined;
  private resync: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private reloading: Promise<void> = Promise.resolve();
  private lastSum: string | undefined;
  private lastError: Error | undefined;
  /** The message of the last reload's read error; undefined once a reload could read. */
  private lastUnread: string | undefined;
  private closed = false;
  /** Counters: reload attempts after the first read, reloads that changed the keyring, failed ones. */
  readonly stats = { reloads: 0, changes: 0, errors: 0 };

  private constructor(file: string, first: Keyring, sum: string, opts: WatcherOptions) {
    this.file = file;
    this.current = first;
    this.lastSum = sum;
    this.onError = opts.onError;
    this.metrics = opts.metrics;
    this.metrics?.keyringInService(first.fingerprint);
    this.debounceMs = opts.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    const dir = path.dirname(file);
    try {
      // The directory, not the file: the kubelet swaps ..data, which a watch on the file would not survive.
      this.fsWatcher = watch(dir, { persistent: opts.persistent ?? true }, () => {
        this.schedule();
      });
      this.fsWatcher.on('error', (e) => {
        this.report(new Error(`keyring: watching ${dir}: ${e.message}; re-reading every ${opts.resyncMs ?? DEFAULT_RESYNC_MS} ms`));
      });
    } catch (e) {
      this.report(new Error(`keyring: cannot watch ${dir}: ${(e as Error).message}; re-reading every ${opts.resyncMs ?? DEFAULT_RESYNC_MS} ms`));
    }
    this.resync = setInterval(() => {
      this.schedule(0);
    }, opts.resyncMs ?? DEFAULT_RESYNC_MS);
    if (opts.persistent === false) {
      this.resync.unref();
    }
  }

  /**
   * Opens a watcher of dir (the Secret's mount) or of a keyring.json path: reads the keyring once,
   * failing if it is not valid, and then follows it.
   */
  static async open(dirOrFile: string, opts: WatcherOptions = {}): Promise<KeyringWatcher> {
    const file = path.basename(dirOrFile) === KEYRING_FILE ? dirOrFile : path.join(dirOrFile, KEYRING_FILE);
    let last: unknown;
    for (let i = 0; i < 3; i++) {
      try {
        const snap = await readSnapshot(file);
        return new KeyringWatcher(file, parseSnapshot(file, snap), digest(snap), opts);
      } catch (e) {
        last = e;
        if (!(e instanceof Raced) && !isNotExist(e)) {
          break;
        }
      }
    }
    throw last instanceof Error ? last : new Error(String(last));
  }

  /** The keyring in service: always a valid one. */
  keyring(): Keyring {
    return this.current;
  }

  /** The error of the last reload, undefined once a reload succeeds. */
  get error(): Error | undefined {
    return this.lastError;
  }

  /** Calls fn with every new keyring put in service; returns a function that removes it. */
  onChange(fn: (r: Keyring) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Re-reads now (as an event would) and resolves once done. */
  reload(): Promise<void> {
    this.reloading = this.reloading.then(() => this.reloadOnce());
    return this.reloading;
  }

  close(): void {
    this.closed = true;
    this.fsWatcher?.close();
    clearInterval(this.resync);
    clearTimeout(this.debounce);
  }

  toString(): string {
    return `KeyringWatcher{file: ${this.file}, keyring: ${this.current.toString()}}`;
  }

  private schedule(ms = this.debounceMs): void {
    if (this.closed) {
      return;
    }
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      void this.reload();
    }, ms);
    this.debounce.unref();
  }

  private report(err: Error): void {
    this.stats.errors++;
    this.lastError = err;
    try {
      this.onError?.(err);
    } catch {
      // a handler's failure must not stop the watcher
    }
  }

  /** Reads until two reads in a row agree, then puts a new valid keyring in service. */
  private async reloadOnce(): Promise<void> {
    if (this.closed) {
      return;
    }
    this.stats.reloads++;
    let prev: Snapshot | undefined;
    let prevSum: string | undefined;
    let lastErr: unknown;
    let wait = SETTLE_FIRST_WAIT_MS;
    for (let i = 0; i < SETTLE_READS; i++) {
      if (i > 0) {
        await sleep(wait);
        wait = Math.min(wait * 2, SETTLE_MAX_WAIT_MS);
      }
      let snap: Snapshot;
      try {
        snap = await readSnapshot(this.file);
      } catch (e) {
        lastErr = e;
        prev = undefined;
        prevSum = undefined;
        if (e instanceof Raced || isNotExist(e)) {
          continue;
        }
        break;
      }
      const sum = digest(snap);
      if (prev !== undefined && sum === prevSum) {
        this.settled(snap, sum);
        return;
      }
      prev = snap;
      prevSum = sum;
      lastErr = new Error(`keyring: ${this.file} kept changing while it was read`);
    }
    this.lastSum = undefined;
    const err = lastErr instanceof Error ? lastErr : new Error(String(lastErr));
    // A snapshot that stays unreadable for the same reason is one failure, as one that stays
    // invalid is: counted per failure, not per poll, as every consumer counts it.
    if (err.message === this.lastUnread) {
      this.lastError = err;
      return;
    }
    this.lastUnread = err.message;
    this.metrics?.reloadFailed();
    this.report(err);
  }

  private settled(snap: Snapshot, sum: string): void {
    this.lastUnread = undefined;
    if (sum === this.lastSum) {
      return; // the bytes last read, valid or not: nothing new to put in service or to report
    }
    this.lastSum = sum;
    let r: Keyring;
    try {
      r = parseSnapshot(this.file, snap);
    } catch (e) {
      this.metrics?.reloadFailed();
      this.report(e as Error);
      return;
    }
    this.lastError = undefined;
    if (r.fingerprint === this.current.fingerprint && r.maxTokenTTL === this.current.maxTokenTTL) {
      return;
    }
    this.current = r;
    this.stats.changes++;
    this.metrics?.keyringInService(r.fingerprint);
    for (const fn of this.listeners) {
      try {
        fn(r);
      } catch {
        // one listener's failure must not keep the others from the news
      }
    }
  }
}
