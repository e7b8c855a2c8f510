// Copyright 2026 The mrtr-operator Authors.
// Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

// The consumer metrics of the contract (docs/consumers.md, "Metrics"), with no dependency: the
// names and labels are Go's, Python's and Rust's, so that one alert covers every consumer. Give one
// Metrics to the watcher, the reporter and the codec (their `metrics` option) and serve
// exposition() on GET /metrics with METRICS_CONTENT_TYPE. No label carries key bytes.

export const TOKENS_SEALED_TOTAL = 'mrtr_consumer_tokens_sealed_total';
export const TOKENS_OPENED_TOTAL = 'mrtr_consumer_tokens_opened_total';
export const KEYRING_INFO = 'mrtr_consumer_keyring_info';
export const RELOAD_FAILURES_TOTAL = 'mrtr_consumer_reload_failures_total';
export const ACK_STATE = 'mrtr_consumer_ack_state';
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** How an open ended, in the order the exposition lists them. */
export const RESULTS = ['ok', 'expired', 'unknown_key', 'bad_mac', 'binding_mismatch', 'malformed', 'too_large'] as const;
export type OpenResult = (typeof RESULTS)[number];
/** The acknowledgement's states. */
export const ACK_STATES = ['pending', 'acknowledged', 'retrying'] as const;
export type AckState = (typeof ACK_STATES)[number];

/** What the watcher, the reporter and the codec report to. Metrics implements it. */
export interface MetricsRecorder {
  tokenSealed(format: string): void;
  tokenOpened(format: string, result: OpenResult): void;
  keyringInService(fingerprint: string): void;
  reloadFailed(): void;
  ackStateChanged(state: AckState): void;
}

/** The metrics of one process, in memory, written in the Prometheus text format. */
export class Metrics implements MetricsRecorder {
  private readonly sealedBy = new Map<string, number>();
  private readonly openedBy = new Map<string, Map<OpenResult, number>>();
  private fp = '';
  private reloadFails = 0;
  private ack: AckState | '' = '';

  // Every series of a format at 0 from its first use: the first rejection is an increase.
  private format(format: string): Map<OpenResult, number> {
    let m = this.openedBy.get(format);
    if (m === undefined) {
      m = new Map(RESULTS.map((r) => [r, 0]));
      this.openedBy.set(format, m);
      this.sealedBy.set(format, 0);
    }
    return m;
  }

  tokenSealed(format: string): void {
    this.format(format);
    this.sealedBy.set(format, (this.sealedBy.get(format) ?? 0) + 1);
  }

  tokenOpened(format: string, result: OpenResult): void {
    const m = this.format(format);
    m.set(result, (m.get(result) ?? 0) + 1);
  }

  keyringInService(fingerprint: string): void {
    this.fp = fingerprint;
  }

  reloadFailed(): void {
    this.reloadFails++;
  }

  ackStateChanged(state: AckState): void {
    this.ack = state;
  }

  sealed(format: string): number {
    return this.sealedBy.get(format) ?? 0;
  }

  opened(format: string, result: OpenResult): number {
    return this.openedBy.get(format)?.get(result) ?? 0;
  }

  get fingerprint(): string {
    return this.fp;
  }

  get reloadFailures(): number {
    return this.reloadFails;
  }

  get ackState(): AckState | '' {
    return this.ack;
  }

  /** Every metric in the Prometheus text format, as Go's metrics.Text writes it. */
  exposition(): string {
    const out: string[] = [];
    const formats = [...this.sealedBy.keys()].sort();
    out.push(`# HELP ${TOKENS_SEALED_TOTAL} Request-state tokens sealed, by format.`, `# TYPE ${TOKENS_SEALED_TOTAL} counter`);
    for (const f of formats) {
      out.push(`${TOKENS_SEALED_TOTAL}{format="${f}"} ${this.sealed(f)}`);
    }
    out.push(`# HELP ${TOKENS_OPENED_TOTAL} Request-state tokens opened, by format and result.`, `# TYPE ${TOKENS_OPENED_TOTAL} counter`);
    for (const f of formats) {
      for (const r of RESULTS) {
        out.push(`${TOKENS_OPENED_TOTAL}{format="${f}",result="${r}"} ${this.opened(f, r)}`);
      }
    }
    out.push(`# HELP ${KEYRING_INFO} The keyring in service, by fingerprint.`, `# TYPE ${KEYRING_INFO} gauge`);
    if (this.fp !== '') {
      out.push(`${KEYRING_INFO}{fingerprint="${this.fp}"} 1`);
    }
    out.push(
      `# HELP ${RELOAD_FAILURES_TOTAL} Reloads that kept the last good keyring.`,
      `# TYPE ${RELOAD_FAILURES_TOTAL} counter`,
      `${RELOAD_FAILURES_TOTAL} ${this.reloadFails}`,
      `# HELP ${ACK_STATE} The acknowledgement's state: 1 for the current one.`,
      `# TYPE ${ACK_STATE} gauge`,
    );
    if (this.ack !== '') {
      for (const s of ACK_STATES) {
        out.push(`${ACK_STATE}{state="${s}"} ${s === this.ack ? 1 : 0}`);
      }
    }
    return out.join('\n') + '\n';
  }
}
