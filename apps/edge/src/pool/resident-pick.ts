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
 * candidate is resolved, and two passes over the candidates, with scratch arrays and a map reused
 * by every pick (not reentrant; picks run one at a time): no allocation but the result.
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
  /**
   * The held prefix with the most tokens per character (a sample for `TokenRatio`): its cached tokens and
   * characters, 0 and 0 when none is held.
   */
  sampleTokens: number;
  sampleChars: number;
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
  const { options, tokensPerChar, loadFactor } = context;
  // Pass 1: eligibility, live load, and which candidates report residency.
  const reporting = scratchSessions;
  reporting.clear();
  const { eligibleAt, keyAt, tokensAt } = scratch;
  let totalLoad = 0;
  let totalCapacity = 0;
  let eligible = 0;
  for (let i = 0; i < candidates.length; i++) {
    const provider = candidates[i]!;
    eligibleAt[i] = isEligible(provider, options);
    keyAt[i] = NOT_REPORTING;
    if (!eligibleAt[i]) continue;
    eligible++;
    totalLoad += loadOf(provider);
    totalCapacity += provider.maxConcurrency * provider.weight;
    if (provider.sessionId !== undefined && index.sizeOf(provider.sessionId) > 0) {
      reporting.set(provider.sessionId, i);
      keyAt[i] = NONE_HELD;
    }
  }
  if (eligible === 0) return undefined;
  // The longest held key of each reporting candidate (its index into `keys`) and its cached tokens, longest first.
  let resolved = 0;
  for (let k = keys.keys.length - 1; k >= 0 && resolved < reporting.size; k--) {
    const holders = index.holders(keys.keys[k]!);
    if (holders === undefined) continue;
    for (const [session, tokens] of holders) {
      const i = reporting.get(session);
      if (i !== undefined && keyAt[i] === NONE_HELD) {
        keyAt[i] = k;
        tokensAt[i] = tokens;
        resolved++;
      }
    }
  }
  const totalChars = keys.chars[keys.chars.length - 1] ?? 0;
  const promptTokens = totalChars * tokensPerChar;
  // Key 0 names only the shared system message: holding it does not make a session's home.
  const sharedKey = keys.leadingSystem && keys.messages[0] === 1 && keys.total > 1 ? 0 : -1;
  const boundScale = (loadFactor * (totalLoad + 1)) / totalCapacity;

  // Pass 2: each candidate's cost; the home (most cached of a session's own prefix), the cheapest
  // of all, and the cheapest within the bounded load.
  const home = scratchHome.reset() as Scored<P>;
  const best = scratchBest.reset() as Scored<P>;
  const bounded = scratchBounded.reset() as Scored<P>;
  let sampleTokens = 0;
  let sampleChars = 0;
  for (let i = 0; i < candidates.length; i++) {
    if (!eligibleAt[i]) continue;
    const provider = candidates[i]!;
    const k = keyAt[i]!;
    let cached = 0;
    let uncached = promptTokens;
    if (k >= 0) {
      cached = tokensAt[i]!;
      const heldChars = keys.chars[k]!;
      if (heldChars > 0 && (sampleChars === 0 || cached * sampleChars > sampleTokens * heldChars)) {
        sampleTokens = cached;
        sampleChars = heldChars;
      }
      uncached = Math.max((totalChars - heldChars) * tokensPerChar, promptTokens - cached);
    }
    const cost = expectedCostMs(
      context.backlogMs?.(provider) ?? 0,
      uncached,
      context.prefillTokensPerS * provider.weight,
    );
    if (k > sharedKey && cached > home.cached) home.set(provider, cached, uncached, cost);
    if (best.beaten(provider, cost)) best.set(provider, cached, uncached, cost);
    if (loadOf(provider) < bound(provider, boundScale) && bounded.beaten(provider, cost))
      bounded.set(provider, cached, uncached, cost);
  }
  const result = (scored: Scored<P>, reason: ResidentPick<P>['reason']): ResidentPick<P> => ({
    provider: scored.provider!,
    cachedTokens: scored.cached,
    uncachedTokens: scored.uncached,
    costMs: scored.cost,
    reason,
    sampleTokens,
    sampleChars,
    prefillMs: expectedCostMs(0, scored.uncached, context.prefillTokensPerS * scored.provider!.weight),
  });
  const homeLimit = (provider: P) => HOME_BOUND_FACTOR * bound(provider, boundScale);
  if (home.provider !== undefined && loadOf(home.provider) < homeLimit(home.provider)) {
    // `best` is set: the home itself is eligible.
    if (
      best.provider !== home.provider &&
      best.cost * STAY_FACTOR < home.cost &&
      loadOf(best.provider!) < homeLimit(best.provider!)
    )
      return result(best, 'moved');
    return result(home, 'home');
  }
  // Some eligible candidate is always within the bound (the bounds sum to more than L while c ≥ 1).
  return result(bounded.provider === undefined ? best : bounded, home.provider === undefined ? 'spread' : 'moved');
}

// Reused by every pick (picks run one at a time, synchronously): reporting session → its candidate's
// index, and per candidate index its eligibility, the index of its longest held key and that key's tokens.
const NOT_REPORTING = -2;
const NONE_HELD = -1;
const scratchSessions = new Map<string, number>();
const scratch = { eligibleAt: [] as boolean[], keyAt: [] as number[], tokensAt: [] as number[] };

/** The bounded load of decision 003 for `provider`: ⌈c × (L + 1) × cap_i / C⌉, `scale` = c × (L + 1) / C. */
function bound(provider: RoutedProvider, scale: number): number {
  return Math.ceil(scale * provider.maxConcurrency * provider.weight);
}

/** The best candidate so far by one criterion, with its figures. */
class Scored<P extends RoutedProvider> {
  provider: P | undefined = undefined;
  cached = 0;
  uncached = 0;
  cost = Infinity;

  /** Whether `provider` at `cost` beats the one held: cheaper, or as cheap and less loaded. */
  beaten(provider: P, cost: number): boolean {
    return cost < this.cost || (cost === this.cost && this.provider !== undefined && lighter(provider, this.provider));
  }

  reset(): this {
    this.provider = undefined;
    this.cost = Infinity;
    this.cached = 0;
    this.uncached = 0;
    return this;
  }

  set(provider: P, cached: number, uncached: number, cost: number): void {
    this.provider = provider;
    this.cached = cached;
    this.uncached = uncached;
    this.cost = cost;
  }
}

// The running bests of `pickResident`, reused by every pick.
const scratchHome = new Scored<RoutedProvider>();
const scratchBest = new Scored<RoutedProvider>();
const scratchBounded = new Scored<RoutedProvider>();

/** Whether `a` is less loaded than `b` relative to capacity. */
function lighter(a: RoutedProvider, b: RoutedProvider): boolean {
  return loadOf(a) / (a.maxConcurrency * a.weight) < loadOf(b) / (b.maxConcurrency * b.weight);
}
