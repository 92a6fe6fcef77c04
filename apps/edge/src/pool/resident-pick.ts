/**
 * The cache-aware pick (docs/decisions/007-cache-aware-routing.md "The pick"): the candidate where
 * the request's first token is expected soonest. Its expected cost on candidate i, in ms:
 *
 *   cost_i = backlog_i + uncached_i / (rate × weight_i) × 1000
 *
 * - `uncached_i`: the prompt tokens i would compute: the prompt's tokens less the longest prefix i
 *   holds (its agent's report for the request's prefix keys, read from the longest key down), or
 *   the tail after that prefix, whichever is more (a prefix partly evicted is reported shorter).
 *   The edge does not tokenize: tokens are characters × the learned `tokensPerChar`.
 * - `backlog_i`: the prefill work already sent to i and not done (prefill-ledger.ts), ms.
 * - `rate`: prefill tokens per second of a provider of weight 1 (`affinity.prefillTokensPerS`).
 *
 * So a cache hit on a loaded agent is weighed against recomputing on an idle one. Two cases:
 *
 * - **A later turn** (some candidate holds a key of the session's own, past the shared leading
 *   system message): its home is the candidate holding the most of it. It stays there unless
 *   another candidate's cost is lower by more than a quarter (`STAY_FACTOR`: moving a session
 *   duplicates its history in a second cache) or the home is over twice the bounded load of
 *   decision 003 (a hard limit, so no agent takes every session whatever its cache).
 * - **A first turn or a cold prompt** (nothing held but the shared system message, or nothing):
 *   among the candidates within the bounded load (`load_i < ⌈c × (L + 1) × cap_i / C⌉`, load =
 *   in flight + queued, so the bound follows live load), the lowest cost: a project's new sessions
 *   go to an agent holding its system prompt while it is not busier than recomputing elsewhere
 *   costs, and spread by load beyond it.
 *
 * Ties go to the lower load relative to capacity, then candidate order. Undefined only when no
 * candidate is eligible.
 *
 * Cost: one map read per key (at most `MAX_PREFIX_KEYS`), longest first, until every reporting
 * candidate is resolved, and two passes over the candidates; no allocation but one small map.
 */
import { isEligible, type PickOptions } from './p2c.js';
import type { PrefixKeys } from './prefix-keys.js';
import type { RoutedProvider } from './provider.js';
import type { ResidencyIndex } from './residency-index.js';

/** A provider the cache-aware pick can score: an agent session (`sessionId`) reports residency. */
export type ResidentCandidate = RoutedProvider & { readonly sessionId?: string | undefined };

/** A session moves off its home only to a candidate whose cost is below the home's divided by this. */
export const STAY_FACTOR = 1.25;

/** A session's home is left when its load reaches this many times the bounded load. */
export const HOME_BOUND_FACTOR = 2;

export interface CostContext {
  /** The bounded-load factor c ≥ 1 (the group's `affinity.loadFactor`). */
  loadFactor: number;
  /** Prefill tokens per second of a provider of weight 1. */
  prefillTokensPerS: number;
  /** Tokens per character of prompt text (prefill-ledger.ts `TokenRatio`). */
  tokensPerChar: number;
  /** Prefill work queued on a provider, ms (prefill-ledger.ts `PrefillLedger`); none when omitted. */
  backlogMs?: (provider: RoutedProvider) => number;
  options?: PickOptions | undefined;
}

export interface ResidentPick<P> {
  provider: P;
  /** Prompt tokens the chosen candidate's agent reports cached for the request's longest held prefix. */
  cachedTokens: number;
  /** Prompt tokens it is expected to compute. */
  uncachedTokens: number;
  /** Its expected time to first token, ms. */
  costMs: number;
  /** `home`: a later turn kept (or moved) by cost; `spread`: a first turn or cold prompt within the bounded load. */
  reason: 'home' | 'moved' | 'spread';
  /** The held prefix with the most tokens per character (a sample for `TokenRatio`), when any is held. */
  sample: { tokens: number; chars: number } | undefined;
  /** The chosen candidate's prefill time for the request alone (without its backlog), ms. */
  prefillMs: number;
}

const loadOf = (provider: RoutedProvider) => provider.inFlight + provider.load.queued;

/**
 * Expected time to first token on a candidate, ms: its queued prefill plus the uncached tokens at its prefill rate.
 */
export function expectedCostMs(backlogMs: number, uncachedTokens: number, tokensPerS: number): number {
  return backlogMs + (Math.max(0, uncachedTokens) / tokensPerS) * 1000;
}

/**
 * @returns the chosen candidate with its figures, or undefined when none is eligible.
 */
export function pickResident<P extends ResidentCandidate>(
  keys: PrefixKeys,
  candidates: readonly P[],
  index: ResidencyIndex,
  context: CostContext,
): ResidentPick<P> | undefined {
  const { options, tokensPerChar } = context;
  // Pass 1: eligibility, live load, and which candidates report residency.
  const reporting = new Map<string, number>();
  let totalLoad = 0;
  let totalCapacity = 0;
  let eligible = 0;
  for (let i = 0; i < candidates.length; i++) {
    const provider = candidates[i]!;
    if (!isEligible(provider, options)) continue;
    eligible++;
    totalLoad += loadOf(provider);
    totalCapacity += provider.maxConcurrency * provider.weight;
    if (provider.sessionId !== undefined && index.sizeOf(provider.sessionId) > 0) reporting.set(provider.sessionId, -1);
  }
  if (eligible === 0) return undefined;
  // The longest held key of each reporting candidate (its index into `keys`), longest first.
  let resolved = 0;
  for (let k = keys.keys.length - 1; k >= 0 && resolved < reporting.size; k--) {
    const holders = index.holders(keys.keys[k]!);
    if (holders === undefined) continue;
    for (const session of holders.keys()) {
      if (reporting.get(session) === -1) {
        reporting.set(session, k);
        resolved++;
      }
    }
  }
  const last = keys.chars.length - 1;
  const totalChars = keys.chars[last] ?? 0;
  const promptTokens = totalChars * tokensPerChar;
  const sharedOnly = (k: number) => k === 0 && keys.leadingSystem && keys.messages[0] === 1 && keys.total > 1;
  const bound = (provider: P) =>
    Math.ceil((context.loadFactor * (totalLoad + 1) * provider.maxConcurrency * provider.weight) / totalCapacity);

  // Pass 2: each candidate's cost; the home (most cached of a session's own prefix), the cheapest
  // of all, and the cheapest within the bounded load.
  let home: P | undefined;
  let homeCached = 0;
  let best: P | undefined;
  let bestCost = Infinity;
  let bounded: P | undefined;
  let boundedCost = Infinity;
  let sample: { tokens: number; chars: number } | undefined;
  const figures = new Map<P, { cached: number; uncached: number; cost: number }>();
  for (let i = 0; i < candidates.length; i++) {
    const provider = candidates[i]!;
    if (!isEligible(provider, options)) continue;
    const k = provider.sessionId === undefined ? undefined : reporting.get(provider.sessionId);
    let cached = 0;
    let uncached = promptTokens;
    if (k !== undefined && k >= 0) {
      cached = index.cachedTokens(provider.sessionId!, keys.keys[k]!);
      const heldChars = keys.chars[k]!;
      if (heldChars > 0 && (sample === undefined || cached * sample.chars > sample.tokens * heldChars))
        sample = { tokens: cached, chars: heldChars };
      uncached = Math.max((totalChars - heldChars) * tokensPerChar, promptTokens - cached);
      if (!sharedOnly(k) && cached > homeCached) {
        home = provider;
        homeCached = cached;
      }
    }
    const backlog = context.backlogMs?.(provider) ?? 0;
    const cost = expectedCostMs(backlog, uncached, context.prefillTokensPerS * provider.weight);
    figures.set(provider, { cached, uncached, cost });
    const load = loadOf(provider);
    if (cost < bestCost || (cost === bestCost && lighter(provider, best!))) {
      best = provider;
      bestCost = cost;
    }
    if (load < bound(provider) && (cost < boundedCost || (cost === boundedCost && lighter(provider, bounded!)))) {
      bounded = provider;
      boundedCost = cost;
    }
  }
  const result = (provider: P, reason: ResidentPick<P>['reason']): ResidentPick<P> => {
    const { cached, uncached, cost } = figures.get(provider)!;
    const prefillMs = expectedCostMs(0, uncached, context.prefillTokensPerS * provider.weight);
    return { provider, cachedTokens: cached, uncachedTokens: uncached, costMs: cost, reason, sample, prefillMs };
  };
  if (home !== undefined && loadOf(home) < HOME_BOUND_FACTOR * bound(home)) {
    const stay = figures.get(home)!.cost;
    // `best` is defined: the home itself is eligible.
    if (best !== home && bestCost * STAY_FACTOR < stay && loadOf(best!) < HOME_BOUND_FACTOR * bound(best!))
      return result(best!, 'moved');
    return result(home, 'home');
  }
  // Some eligible candidate is always within the bound (the bounds sum to more than L while c ≥ 1).
  return result(bounded ?? best!, home === undefined ? 'spread' : 'moved');
}

/** Whether `a` is less loaded than `b` relative to capacity. */
function lighter(a: RoutedProvider, b: RoutedProvider): boolean {
  return loadOf(a) / (a.maxConcurrency * a.weight) < loadOf(b) / (b.maxConcurrency * b.weight);
}
