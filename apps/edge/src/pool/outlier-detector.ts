/**
 * Passive health checking by outlier ejection (Envoy "Outlier detection", consecutive 5xx with
 * `base_ejection_time`, `max_ejection_time` and `max_ejection_percent`; the half-open probe of a
 * circuit breaker, Nygard "Release It!"). One detector per model group, keyed by provider id.
 *
 * - A provider is ejected after `consecutiveFailures` failures in a row. Failures are server-side:
 *   5xx answers, connect failures, resets and (first-byte) timeouts. A 4xx, a 429 or a rejection
 *   for capacity is the provider working as designed: it resets the run of failures like a success.
 * - The n-th ejection lasts `min(baseEjectionMs × n, maxEjectionMs)` ms. n goes back to 0 once the
 *   provider has stayed healthy for `maxEjectionMs` after its last recovery.
 * - When the ejection time is over the provider is allowed again for ONE request, the probe
 *   (state `probing`, half-open): success → `healthy`; failure → ejected again with n + 1. Other
 *   requests stay away until the probe answers. A probe that ends without a verdict (`cancelled`)
 *   frees the slot for the next probe.
 * - Never more than ⌊members × maxEjectedPercent / 100⌋ providers of the group are out at once
 *   (ejected or probing); over that the provider stays in service and its failures keep counting.
 *   A group of one provider is therefore never ejected at 50 %: failing fast would not help it.
 * - Results of requests started before an ejection that arrive while the provider is out are
 *   ignored; only the probe's result decides.
 *
 * Every state change calls `onChange(providerId, state, reason)` for logs and the admin API;
 * `snapshot()` lists every known provider. Times are ms from the injected clock.
 */
import type { Clock } from './provider.js';

export interface OutlierConfig {
  /** Failures in a row that eject a provider (Envoy `consecutive_5xx`, default 5). */
  consecutiveFailures: number;
  /** First ejection time, ms (Envoy `base_ejection_time`, default 10 000). */
  baseEjectionMs: number;
  /** Longest ejection time, ms (Envoy `max_ejection_time`, default 300 000). */
  maxEjectionMs: number;
  /** Largest share of a group's providers out at once, percent (Envoy `max_ejection_percent`). */
  maxEjectedPercent: number;
}

export type OutlierState = 'healthy' | 'ejected' | 'probing';

/**
 * What an attempt's end says about the provider. `success`: it answered (2xx); `client_error`: it
 * answered 4xx (the request's fault; 429 and capacity rejections belong here too); `server_error`:
 * 5xx; `connect_failure`: connection refused, reset, tunnel lost; `timeout`: no first byte in time;
 * `cancelled`: the client left before a verdict.
 */
export type AttemptOutcome = 'success' | 'client_error' | 'server_error' | 'connect_failure' | 'timeout' | 'cancelled';

export interface OutlierSnapshot {
  providerId: string;
  state: OutlierState;
  consecutiveFailures: number;
  /** Ejections counted towards the next ejection time. */
  ejections: number;
  /** When the current ejection ends (clock ms), while ejected. */
  ejectedUntil: number | undefined;
  /** Reason of the last state change. */
  reason: string | undefined;
}

/** Returned by `onStart`; give it back to `onResult`. */
export interface OutlierTicket {
  readonly providerId: string;
  /** Whether this attempt is the half-open probe. */
  readonly probe: boolean;
}

export type OutlierListener = (providerId: string, state: OutlierState, reason: string) => void;

interface Entry {
  state: OutlierState;
  consecutiveFailures: number;
  ejections: number;
  ejectedUntil: number;
  recoveredAt: number;
  reason: string | undefined;
}

export class OutlierDetector {
  private readonly entries = new Map<string, Entry>();
  private out = 0;
  private readonly now: Clock;
  private readonly onChange: OutlierListener | undefined;

  constructor(
    private config: OutlierConfig,
    options: { now?: Clock; onChange?: OutlierListener } = {},
  ) {
    this.now = options.now ?? Date.now;
    this.onChange = options.onChange;
  }

  /**
   * Applies new settings (config reload). Providers keep their state: an ejection in progress
   * keeps its end time; the new times and thresholds apply from the next failure or ejection.
   */
  configure(config: OutlierConfig): void {
    this.config = config;
  }

  /** Registers a provider of the group (it counts towards `maxEjectedPercent`). Idempotent. */
  add(providerId: string): void {
    this.entry(providerId);
  }

  /** Forgets a provider that left the group. */
  remove(providerId: string): void {
    const entry = this.entries.get(providerId);
    if (entry === undefined) return;
    if (entry.state !== 'healthy') this.out--;
    this.entries.delete(providerId);
  }

  /** Whether a request may go to the provider now (healthy, or an ejection over and no probe out). */
  allows(providerId: string): boolean {
    const entry = this.entries.get(providerId);
    if (entry === undefined || entry.state === 'healthy') return true;
    return entry.state === 'ejected' && this.now() >= entry.ejectedUntil;
  }

  /** Call when an attempt is sent to the provider; an ejected provider past its time enters `probing`. */
  onStart(providerId: string): OutlierTicket {
    const entry = this.entry(providerId);
    if (entry.state === 'ejected' && this.now() >= entry.ejectedUntil) {
      this.change(providerId, entry, 'probing', `ejection time over; probing with one request`);
      return { providerId, probe: true };
    }
    return { providerId, probe: false };
  }

  /** Call once when the attempt has a verdict (its response start, or its failure). */
  onResult(ticket: OutlierTicket, outcome: AttemptOutcome): void {
    const entry = this.entries.get(ticket.providerId);
    if (entry === undefined) return;
    const failed = outcome === 'server_error' || outcome === 'connect_failure' || outcome === 'timeout';
    if (ticket.probe && entry.state === 'probing') {
      if (outcome === 'cancelled') {
        entry.ejectedUntil = this.now();
        this.change(ticket.providerId, entry, 'ejected', 'probe cancelled before a verdict; the next request probes');
      } else if (failed) this.eject(ticket.providerId, entry, `probe failed: ${outcome}`);
      else {
        entry.consecutiveFailures = 0;
        entry.recoveredAt = this.now();
        this.out--;
        this.change(ticket.providerId, entry, 'healthy', `probe succeeded: ${outcome}`);
      }
      return;
    }
    if (entry.state !== 'healthy' || outcome === 'cancelled') return;
    if (!failed) {
      entry.consecutiveFailures = 0;
      return;
    }
    entry.consecutiveFailures++;
    if (entry.consecutiveFailures < this.config.consecutiveFailures) return;
    if (this.out + 1 > Math.floor((this.entries.size * this.config.maxEjectedPercent) / 100)) return;
    this.out++;
    this.eject(ticket.providerId, entry, `${entry.consecutiveFailures} consecutive failures, last: ${outcome}`);
  }

  state(providerId: string): OutlierState {
    return this.entries.get(providerId)?.state ?? 'healthy';
  }

  snapshot(): OutlierSnapshot[] {
    return [...this.entries].map(([providerId, entry]) => ({
      providerId,
      state: entry.state,
      consecutiveFailures: entry.consecutiveFailures,
      ejections: entry.ejections,
      ejectedUntil: entry.state === 'healthy' ? undefined : entry.ejectedUntil,
      reason: entry.reason,
    }));
  }

  private entry(providerId: string): Entry {
    let entry = this.entries.get(providerId);
    if (entry === undefined) {
      entry = {
        state: 'healthy',
        consecutiveFailures: 0,
        ejections: 0,
        ejectedUntil: 0,
        recoveredAt: 0,
        reason: undefined,
      };
      this.entries.set(providerId, entry);
    }
    return entry;
  }

  /** Ejects (the caller has counted it in `out`). */
  private eject(providerId: string, entry: Entry, cause: string): void {
    const now = this.now();
    if (entry.state === 'healthy' && entry.ejections > 0 && now - entry.recoveredAt >= this.config.maxEjectionMs)
      entry.ejections = 0;
    entry.ejections++;
    const durationMs = Math.min(this.config.baseEjectionMs * entry.ejections, this.config.maxEjectionMs);
    entry.ejectedUntil = now + durationMs;
    entry.consecutiveFailures = 0;
    this.change(providerId, entry, 'ejected', `${cause}; ejected for ${durationMs} ms (ejection ${entry.ejections})`);
  }

  private change(providerId: string, entry: Entry, state: OutlierState, reason: string): void {
    entry.state = state;
    entry.reason = reason;
    this.onChange?.(providerId, state, reason);
  }
}
