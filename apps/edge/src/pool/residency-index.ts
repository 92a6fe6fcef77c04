/**
 * Which prefix keys (prefix-keys.ts) each agent session's backend holds in its KV cache, and
 * how many leading tokens of each, as the agents report it (proto `ResidencyReport`;
 * docs/decisions/007-cache-aware-routing.md). The router reads it to send a request where most of
 * its prompt is cached.
 *
 * - Written per agent session only: the tunnel hands each Control stream's reports to `apply`
 *   with that stream's own session id (a report names no agent, so one agent can never write
 *   another's residency); `forget` drops a session's entries when it ends.
 * - Validated: a report with more than `maxPrefixesPerReport` keys, a key that is not a 53-bit
 *   integer, or a token count over `maxCachedTokens` is refused whole (`ResidencyRefusal`, the
 *   caller logs it; counted in `iop_residency_reports_refused_total{reason}`).
 * - Bounded: at most `maxKeysPerHolder` keys per session, the least recently reported evicted
 *   first. Memory per (session, key) entry: one entry in the session's map and one in the key's
 *   holder map, ~290 bytes measured (apps/bench/src/residency-pick-bench.ts; 16 384 keys ≈ 4.8 MB per agent).
 * - Order-independent across sessions: each session's entries depend only on its own reports, in
 *   the order its stream delivered them (test/unit/pool/residency-index.test.ts checks any
 *   interleaving of several sessions' reports gives the same state).
 *
 * Lookup (`holders(key)`) is one map read per key: key → (session → cached tokens).
 */

/** One key's residency as reported: cached tokens now, 0 = gone. */
export interface ReportedPrefix {
  key: bigint | number;
  cachedTokens: number;
}

export interface ReportedResidency {
  reset: boolean;
  prefixes: readonly ReportedPrefix[];
}

export type RefusalReason = 'too_many_prefixes' | 'bad_key' | 'absurd_tokens';

export interface ResidencyRefusal {
  reason: RefusalReason;
  detail: string;
}

/** What the tunnel calls with an agent session's reports (pool/ owns the index; tunnel/ only feeds it). */
export interface ResidencySink {
  /** Applies a report from session `holder`; a refusal (nothing applied) or undefined. */
  apply(holder: string, report: ReportedResidency): ResidencyRefusal | undefined;
  /** Session `holder` ended: its residency goes. */
  forget(holder: string): void;
}

export interface ResidencyIndexOptions {
  /** Keys kept per agent session (LRU). Default 16 384. */
  maxKeysPerHolder?: number;
  /** Keys allowed in one report. Default 4 096. */
  maxPrefixesPerReport?: number;
  /** Largest cached-token count believed for one key. Default 16 777 216 (above any context window served today). */
  maxCachedTokens?: number;
  /** Told about each refused report (the metric). */
  onRefused?: (reason: RefusalReason) => void;
}

const MAX_KEY = BigInt(Number.MAX_SAFE_INTEGER);

export class ResidencyIndex implements ResidencySink {
  readonly maxKeysPerHolder: number;
  readonly maxPrefixesPerReport: number;
  readonly maxCachedTokens: number;
  /** Session → (key → cached tokens), insertion order = recency. */
  private readonly byHolder = new Map<string, Map<number, number>>();
  /** Key → (session → cached tokens). */
  private readonly byKey = new Map<number, Map<string, number>>();

  constructor(private readonly options: ResidencyIndexOptions = {}) {
    this.maxKeysPerHolder = options.maxKeysPerHolder ?? 16_384;
    this.maxPrefixesPerReport = options.maxPrefixesPerReport ?? 4_096;
    this.maxCachedTokens = options.maxCachedTokens ?? 16_777_216;
  }

  /** Whether any session reports a resident key (the router skips the lookup otherwise). */
  get empty(): boolean {
    return this.byKey.size === 0;
  }

  /** (session, key) entries in all. */
  get entries(): number {
    let total = 0;
    for (const keys of this.byHolder.values()) total += keys.size;
    return total;
  }

  /** Keys held by `holder`. */
  sizeOf(holder: string): number {
    return this.byHolder.get(holder)?.size ?? 0;
  }

  /** Cached tokens summed over `holder`'s keys (for the admin view: one pass over its keys). */
  tokensOf(holder: string): number {
    let total = 0;
    for (const tokens of this.byHolder.get(holder)?.values() ?? []) total += tokens;
    return total;
  }

  /** The sessions holding `key` and their cached tokens (undefined when none). Shared: do not mutate. */
  holders(key: number): ReadonlyMap<string, number> | undefined {
    return this.byKey.get(key);
  }

  /** `holder`'s cached tokens for `key`, 0 when not resident. */
  cachedTokens(holder: string, key: number): number {
    return this.byHolder.get(holder)?.get(key) ?? 0;
  }

  apply(holder: string, report: ReportedResidency): ResidencyRefusal | undefined {
    const refusal = this.check(report);
    if (refusal !== undefined) {
      this.options.onRefused?.(refusal.reason);
      return refusal;
    }
    if (report.reset) this.forget(holder);
    for (const prefix of report.prefixes) this.set(holder, Number(prefix.key), prefix.cachedTokens);
    return undefined;
  }

  forget(holder: string): void {
    const keys = this.byHolder.get(holder);
    if (keys === undefined) return;
    for (const key of keys.keys()) this.unlinkKey(key, holder);
    this.byHolder.delete(holder);
  }

  private check(report: ReportedResidency): ResidencyRefusal | undefined {
    if (report.prefixes.length > this.maxPrefixesPerReport) {
      return {
        reason: 'too_many_prefixes',
        detail: `${report.prefixes.length} prefixes in one report, at most ${this.maxPrefixesPerReport}`,
      };
    }
    for (const prefix of report.prefixes) {
      const key = prefix.key;
      if (typeof key === 'bigint' ? key < 0n || key > MAX_KEY : !Number.isSafeInteger(key) || key < 0) {
        return { reason: 'bad_key', detail: `key ${String(key)} is not a 53-bit prefix key` };
      }
      if (
        !Number.isInteger(prefix.cachedTokens) ||
        prefix.cachedTokens < 0 ||
        prefix.cachedTokens > this.maxCachedTokens
      ) {
        return {
          reason: 'absurd_tokens',
          detail: `${prefix.cachedTokens} cached tokens for one prefix, at most ${this.maxCachedTokens}`,
        };
      }
    }
    return undefined;
  }

  private set(holder: string, key: number, cachedTokens: number): void {
    let keys = this.byHolder.get(holder);
    if (cachedTokens === 0) {
      if (keys?.delete(key) === true) {
        this.unlinkKey(key, holder);
        if (keys.size === 0) this.byHolder.delete(holder);
      }
      return;
    }
    if (keys === undefined) this.byHolder.set(holder, (keys = new Map()));
    keys.delete(key);
    keys.set(key, cachedTokens);
    let holders = this.byKey.get(key);
    if (holders === undefined) this.byKey.set(key, (holders = new Map()));
    holders.set(holder, cachedTokens);
    if (keys.size > this.maxKeysPerHolder) {
      const oldest = keys.keys().next().value!;
      keys.delete(oldest);
      this.unlinkKey(oldest, holder);
    }
  }

  private unlinkKey(key: number, holder: string): void {
    const holders = this.byKey.get(key);
    if (holders === undefined) return;
    holders.delete(holder);
    if (holders.size === 0) this.byKey.delete(key);
  }
}
