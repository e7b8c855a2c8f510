// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The acknowledgement of the Go library's pkg/ack: the pod publishes the fingerprint of the
// keyring it has loaded in an annotation of its own Pod, with one request,
//
//   PATCH {apiServer}/api/v1/namespaces/{namespace}/pods/{pod}?fieldManager=mrtr-ack
//   Authorization: Bearer <the service account token, read again for every request>
//   Content-Type: application/merge-patch+json
//   {"metadata":{"annotations":{"loaded.mrtr.dev/<secret>":"<fingerprint>"}}}
//
// over TLS verified with the service account's ca.crt only. The operator takes as proof only an
// acknowledgement whose managedFields entry names the field manager mrtr-ack. A failed attempt
// (refused, failed, or without an answer within the timeout: a lost answer) is retried with
// exponential backoff and jitter, without a total limit, for the latest fingerprint only.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { request as httpsRequest, Agent } from 'node:https';
import path from 'node:path';

import type { Keyring } from './keyring.js';
import type { AckState, MetricsRecorder } from './metrics.js';

/** Starts every acknowledgement annotation key. */
export const ANNOTATION_PREFIX = 'loaded.mrtr.dev/';
/** The field manager of every acknowledgement. */
export const FIELD_MANAGER = 'mrtr-ack';

const DEFAULT_SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/**
 * Replaces the service account directory when AckConfig.serviceAccountDir is not given: unset in
 * a pod, set by the conformance check to point a consumer at its fake API server (pkg/ack's
 * ServiceAccountDirEnv).
 */
export const SERVICE_ACCOUNT_DIR_ENV = 'MRTR_SERVICE_ACCOUNT_DIR';
const USER_AGENT = 'mrtr-ack-ts (@mrtr-dev/keyring)';
const MAX_ERROR_BODY = 4 << 10;
// How much of an accepted answer (the patched Pod) is read, so that the connection can be reused;
// a longer one is cut off by closing it (Go's maxDrainedBody).
const MAX_DRAINED_BODY = 64 << 10;
const MAX_MESSAGE = 200;

/**
 * The Pod annotation under which a pod acknowledges the keyring of the Secret named secret: the
 * prefix and the name when it is at most 63 characters, else its first 46, a dash and 16 hex
 * digits of its SHA-256 (Go's ack.AnnotationKey).
 */
export function annotationKey(secret: string): string {
  if (secret.length <= 63) {
    return ANNOTATION_PREFIX + secret;
  }
  return ANNOTATION_PREFIX + secret.slice(0, 46) + '-' + createHash('sha256').update(secret).digest('hex').slice(0, 16);
}

const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface AckConfig {
  /** The name of the keyring Secret the pod mounts. Required. */
  secret: string;
  /** This pod: default $POD_NAME and $POD_NAMESPACE (the downward API), the namespace then from the service account. */
  podName?: string;
  namespace?: string;
  /** The API server's base URL: default https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT. */
  apiServer?: string;
  /** Holds token and ca.crt: default $MRTR_SERVICE_ACCOUNT_DIR, else /var/run/secrets/kubernetes.io/serviceaccount. */
  serviceAccountDir?: string;
  /** Receives every failed attempt (never key bytes, never the token). */
  onError?: (err: Error) => void;
  /** Bounds of the backoff between failed attempts, with jitter: default 200 ms and 30 s. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Bounds one request, answer included: default 10 s. */
  timeoutMs?: number;
  /** Told each change of the acknowledgement's state (docs/consumers.md, "Metrics"). */
  metrics?: MetricsRecorder;
}

/**
 * Publishes the fingerprint of the keyring this pod has loaded on its Pod object. report never
 * blocks or fails; run publishes the latest fingerprint, retrying until it is accepted.
 */
export class AckReporter {
  readonly url: string;
  readonly key: string;
  private readonly pod: string;
  private readonly tokenPath: string;
  private readonly agent: Agent;
  private readonly onError: ((err: Error) => void) | undefined;
  private readonly minBackoff: number;
  private readonly maxBackoff: number;
  private readonly timeout: number;
  private latest = '';
  private acked = ''; // the last fingerprint the API server accepted
  private onPod = ''; // what the Pod is known to carry: '' after a failure, which may have been applied
  private readonly metrics: MetricsRecorder | undefined;
  private state: AckState | '' = '';
  private wake: (() => void) | undefined;
  private woken = false;
  private running = false;

  /** Checks the configuration; the errors name what is missing or wrong. Reads ca.crt once. */
  constructor(c: AckConfig) {
    if (c.secret === '') {
      throw new Error('ack: no secret: set secret to the name of the keyring Secret the pod mounts');
    }
    if (c.secret.length > 253 || !SECRET_NAME.test(c.secret)) {
      throw new Error(
        `ack: secret ${JSON.stringify(c.secret)} is not a Secret name (a DNS subdomain: at most 253 lowercase letters, digits, '-' and '.')`,
      );
    }
    const dir = c.serviceAccountDir ?? (process.env[SERVICE_ACCOUNT_DIR_ENV] || DEFAULT_SERVICE_ACCOUNT_DIR);
    const pod = c.podName ?? process.env.POD_NAME ?? '';
    if (pod === '') {
      throw new Error('ack: no pod name: set podName or $POD_NAME (the downward API\'s metadata.name)');
    }
    const ns = namespace(c.namespace, dir);
    const base = apiServer(c.apiServer);
    const caPath = path.join(dir, 'ca.crt');
    let ca: Buffer;
    try {
      ca = readFileSync(caPath);
    } catch (e) {
      throw new Error(`ack: API server CA: ${(e as Error).message}`, { cause: e });
    }
    if (!ca.toString('latin1').includes('-----BEGIN CERTIFICATE-----')) {
      throw new Error(`ack: API server CA: no PEM certificate in ${caPath}`);
    }
    this.metrics = c.metrics;
    this.url = `${base}/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(pod)}`;
    this.pod = `${ns}/${pod}`;
    this.key = annotationKey(c.secret);
    this.tokenPath = path.join(dir, 'token');
    // Only the cluster's CA: the token must reach the API server and nothing else. No proxy.
    // rejectUnauthorized explicitly: left out, it follows NODE_TLS_REJECT_UNAUTHORIZED, and =0
    // would send the token to any server at all (Go and Python ignore such settings).
    this.agent = new Agent({ ca, keepAlive: true, minVersion: 'TLSv1.2', rejectUnauthorized: true });
    this.onError = c.onError;
    this.minBackoff = c.minBackoffMs ?? 200;
    this.maxBackoff = c.maxBackoffMs ?? 30_000;
    this.timeout = c.timeoutMs ?? 10_000;
    if (this.minBackoff < 0 || this.maxBackoff < 0) {
      throw new Error(`ack: backoff ${this.minBackoff} to ${this.maxBackoff} ms: negative`);
    }
    if (this.minBackoff > this.maxBackoff) {
      throw new Error(`ack: minBackoffMs ${this.minBackoff} exceeds maxBackoffMs ${this.maxBackoff}`);
    }
    if (this.timeout <= 0) {
      throw new Error(`ack: timeoutMs ${this.timeout}: not positive`);
    }
  }

  /** Records that the process now seals and opens with the keyring of this fingerprint. Latest wins. */
  report(fingerprint: string): void {
    if (fingerprint === '' || fingerprint === this.latest) {
      return; // nothing run does not know already; in particular, no retry out of its backoff
    }
    this.latest = fingerprint;
    this.setState(fingerprint === this.onPod ? 'acknowledged' : 'pending');
    this.woken = true;
    this.wake?.();
  }

  private setState(s: AckState): void {
    if (s !== this.state) {
      this.state = s;
      this.metrics?.ackStateChanged(s);
    }
  }

  /** The last fingerprint the API server accepted, "" before the first. */
  acknowledged(): string {
    return this.acked;
  }

  /** Reports the watcher's keyring now and every keyring it changes to; returns the unsubscribe function. */
  follow(w: { keyring(): Keyring; onChange(fn: (r: Keyring) => void): () => void }): () => void {
    const off = w.onChange((r) => {
      this.report(r.fingerprint);
    });
    this.report(w.keyring().fingerprint);
    return off;
  }

  /**
   * Publishes each reported fingerprint with one PATCH of the Pod, retrying failures with backoff,
   * until signal aborts. Serving never waits on it. Only one run at a time.
   */
  async run(signal?: AbortSignal): Promise<void> {
    if (this.running) {
      throw new Error(`ack: reporter for pod ${this.pod} already running`);
    }
    this.running = true;
    let failures = 0;
    const aborted = (): boolean => signal?.aborted === true;
    try {
      while (!aborted()) {
        this.woken = false;
        const fp = this.latest !== this.onPod ? this.latest : '';
        let pause: number | undefined;
        if (fp !== '') {
          try {
            await this.publish(fp, signal);
            this.acked = fp;
            this.onPod = fp;
            this.setState(fp === this.latest ? 'acknowledged' : 'pending');
            failures = 0;
            continue; // a newer fingerprint may have come meanwhile
          } catch (e) {
            if (aborted()) {
              return;
            }
            // What the Pod carries is unknown now: the API server may have applied a PATCH whose
            // answer was lost, so a return to the fingerprint acknowledged before must be sent again.
            this.onPod = '';
            this.setState('retrying');
            failures++;
            try {
              this.onError?.(e as Error);
            } catch {
              // the handler's failure must not stop the retries
            }
            pause = this.backoff(failures);
          }
        }
        await this.idle(pause, signal);
      }
    } finally {
      this.running = false;
    }
  }

  /** Waits for a report, the pause (if any) or the abort, whichever comes first. */
  private idle(pause: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    if (this.woken) {
      return Promise.resolve(); // a report came during the attempt: try it at once
    }
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.wake = done;
      signal?.addEventListener('abort', done);
      if (pause !== undefined) {
        timer = setTimeout(done, pause);
      }
    });
  }

  /** Uniformly random in the upper half of min(minBackoff·2ⁿ, maxBackoff), never outside the bounds. */
  private backoff(n: number): number {
    let d = this.minBackoff;
    for (let i = 0; i < n; i++) {
      if (d > this.maxBackoff / 2) {
        d = this.maxBackoff;
        break;
      }
      d *= 2;
    }
    return Math.max(d / 2 + Math.random() * (d / 2), this.minBackoff);
  }

  private async publish(fp: string, signal: AbortSignal | undefined): Promise<void> {
    let token: string;
    try {
      token = (await readFile(this.tokenPath, 'utf8')).trim();
    } catch (e) {
      throw new Error(`ack: service account token: ${(e as Error).message}`, { cause: e });
    }
    if (token === '') {
      throw new Error(`ack: service account token ${this.tokenPath} is empty`);
    }
    const body = JSON.stringify({ metadata: { annotations: { [this.key]: fp } } });
    // One deadline for the whole request, connection, answer and body included (Go's
    // context.WithTimeout): the socket's own timeout is an idle one, which an endpoint that
    // trickles a byte now and then never reaches.
    const { status, statusLine, respBody } = await new Promise<{ status: number; statusLine: string; respBody: string }>((resolve, reject) => {
      let answer: { status: number; statusLine: string; chunks: Buffer[]; size: number; ok: boolean } | undefined;
      let settled = false;
      const finish = (): void => {
        if (settled || answer === undefined) {
          return;
        }
        settled = true;
        clearTimeout(deadline);
        resolve({
          status: answer.status,
          statusLine: answer.statusLine,
          respBody: Buffer.concat(answer.chunks).subarray(0, MAX_ERROR_BODY).toString('utf8'),
        });
      };
      const fail = (e: Error): void => {
        if (!settled) {
          settled = true;
          clearTimeout(deadline);
          reject(new Error(`ack: patch pod ${this.pod}: ${e.message}`));
        }
      };
      const req = httpsRequest(
        `${this.url}?fieldManager=${FIELD_MANAGER}`,
        {
          method: 'PATCH',
          agent: this.agent,
          rejectUnauthorized: true,
          headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/merge-patch+json',
            Accept: 'application/json',
            'User-Agent': USER_AGENT,
            'Content-Length': Buffer.byteLength(body),
          },
          ...(signal !== undefined ? { signal } : {}),
        },
        (res) => {
          const code = res.statusCode ?? 0;
          const a = {
            status: code,
            statusLine: formatStatusLine(code, res.statusMessage ?? '', token),
            chunks: [] as Buffer[],
            size: 0,
            ok: code >= 200 && code < 300,
          };
          answer = a;
          res.on('data', (b: Buffer) => {
            a.size += b.length;
            if (!a.ok && a.size - b.length < MAX_ERROR_BODY) {
              a.chunks.push(b);
            }
            // Enough read: of an error, to explain it; of an accepted answer, to be worth the
            // connection. The rest is cut off with the connection.
            if (a.size >= (a.ok ? MAX_DRAINED_BODY : MAX_ERROR_BODY)) {
              finish();
              req.destroy();
            }
          });
          res.on('end', finish);
          res.on('error', () => {
            finish(); // the status came: the body was only to explain it
          });
        },
      );
      const deadline = setTimeout(() => {
        if (answer !== undefined) {
          // The status came and the body did not end in time: what was read serves (Go: an
          // accepted answer whose drain is cut is still accepted).
          finish();
          req.destroy();
          return;
        }
        req.destroy(new Error(`no answer within ${this.timeout} ms`));
      }, this.timeout);
      req.on('error', fail);
      req.end(body);
    });
    if (status >= 200 && status < 300) {
      return;
    }
    throw new Error(`ack: patch pod ${this.pod}: ${statusLine}: ${statusMessage(respBody, token)}${hint(status)}`);
  }
}

function namespace(ns: string | undefined, dir: string): string {
  const v = ns ?? process.env.POD_NAMESPACE ?? '';
  if (v !== '') {
    return v;
  }
  const file = path.join(dir, 'namespace');
  let text = '';
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (e) {
    if ((e as { code?: string }).code !== 'ENOENT') {
      throw new Error(
        `ack: no namespace: set namespace or $POD_NAMESPACE (the downward API's metadata.namespace): ${(e as Error).message}`,
        { cause: e },
      );
    }
  }
  if (text === '') {
    throw new Error(
      `ack: no namespace: set namespace or $POD_NAMESPACE (the downward API's metadata.namespace); ${file} is missing or empty`,
    );
  }
  return text;
}

function apiServer(base: string | undefined): string {
  let b = base ?? '';
  if (b === '') {
    const host = process.env.KUBERNETES_SERVICE_HOST ?? '';
    const port = process.env.KUBERNETES_SERVICE_PORT ?? '';
    if (host === '' || port === '') {
      throw new Error(
        'ack: no API server: set apiServer or $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT (the kubelet sets both in every container)',
      );
    }
    b = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }
  let u: URL;
  try {
    u = new URL(b);
  } catch (e) {
    throw new Error(`ack: API server: ${(e as Error).message}`, { cause: e });
  }
  // Plain http would send the token in the clear.
  if (u.protocol !== 'https:' || u.host === '') {
    throw new Error(`ack: API server ${JSON.stringify(u.origin)}: not an https:// URL`);
  }
  return u.toString().replace(/\/$/, '');
}

/** The message of the metav1.Status in body, else its start, with the token removed, quoted and cut. */
function statusMessage(body: string, token: string): string {
  let msg = '';
  try {
    const st = JSON.parse(body) as { message?: unknown };
    if (typeof st.message === 'string') {
      msg = st.message;
    }
  } catch {
    // not a Status: a proxy's or load balancer's page
  }
  if (msg === '') {
    msg = body.trim();
  }
  msg = msg.split(token).join('[token]');
  if (msg === '') {
    return 'no message';
  }
  const cut = msg.length > MAX_MESSAGE;
  return JSON.stringify(cut ? msg.slice(0, MAX_MESSAGE) : msg) + (cut ? '…' : '');
}

/**
 * The status code and reason phrase: a phrase other than the standard one is the server's text (any
 * endpoint the CA trusts can answer), treated like a message: redacted, quoted, cut.
 */
function formatStatusLine(code: number, reason: string, token: string): string {
  const std = STATUS_CODES[code] ?? '';
  if (reason === '' || reason === std) {
    return `${code} ${std}`.trim();
  }
  return `${code} ${statusMessage(JSON.stringify({ message: reason }), token)}`;
}

function hint(code: number): string {
  switch (code) {
    case 401:
      return ' (the service account token was not accepted)';
    case 403:
      return ' (is the ClusterRole mrtr-keyring-consumer bound to the pod\'s ServiceAccount?)';
    case 404:
      return ' (no such pod: check $POD_NAME and $POD_NAMESPACE)';
  }
  return '';
}
