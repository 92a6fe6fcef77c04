/**
 * The cache-aware pick (docs/decisions/007-cache-aware-routing.md "The pick"): among the eligible
 * candidates within the bounded load of decision 003 (`load_i < ⌈c × (L + 1) × cap_i / C⌉`, as
 * prefix affinity bounds it), the one whose backend holds the longest resident prefix of the
 * request (most cached tokens, as its agent reported for the request's prefix keys), ties to the
 * lower load relative to capacity. Undefined when no candidate within the bound holds any of the
 * keys (a cold prefix, or agents that report nothing): the caller falls back to its policy.
 *
 * Cost: one map read per key (at most `MAX_PREFIX_KEYS`), longest first, and one pass over the
 * candidates; a candidate's score is its longest resident key's tokens (the first found).
 */
import { isEligible, type PickOptions } from './p2c.js';
import type { PrefixKeys } from './prefix-keys.js';
import type { RoutedProvider } from './provider.js';
import type { ResidencyIndex } from './residency-index.js';

/** A provider the cache-aware pick can score: an agent session (`sessionId`) reports residency. */
export type ResidentCandidate = RoutedProvider & { readonly sessionId?: string };

const loadOf = (provider: RoutedProvider) => provider.inFlight + provider.load.queued;

/**
 * @param loadFactor the bound c ≥ 1 (the group's `affinity.loadFactor`).
 * @returns the chosen provider and its cached tokens, or undefined to fall back.
 */
export function pickResident<P extends ResidentCandidate>(
  keys: PrefixKeys,
  candidates: readonly P[],
  index: ResidencyIndex,
  loadFactor: number,
  options?: PickOptions,
): { provider: P; cachedTokens: number } | undefined {
  if (index.empty) return undefined;
  const bySession = new Map<string, P>();
  let totalLoad = 0;
  let totalCapacity = 0;
  let eligible = 0;
  for (const provider of candidates) {
    if (!isEligible(provider, options)) continue;
    eligible++;
    totalLoad += loadOf(provider);
    totalCapacity += provider.maxConcurrency * provider.weight;
    if (provider.sessionId !== undefined && index.sizeOf(provider.sessionId) > 0)
      bySession.set(provider.sessionId, provider);
  }
  if (bySession.size === 0 || eligible === 0) return undefined;
  const bound = (provider: P) =>
    Math.ceil((loadFactor * (totalLoad + 1) * provider.maxConcurrency * provider.weight) / totalCapacity);
  const scored = new Map<string, number>();
  for (let i = keys.keys.length - 1; i >= 0 && scored.size < bySession.size; i--) {
    const holders = index.holders(keys.keys[i]!);
    if (holders === undefined) continue;
    for (const [session, tokens] of holders)
      if (bySession.has(session) && !scored.has(session)) scored.set(session, tokens);
  }
  let best: P | undefined;
  let bestTokens = 0;
  let bestLoad = 0;
  for (const [session, tokens] of scored) {
    const provider = bySession.get(session)!;
    if (loadOf(provider) >= bound(provider)) continue;
    const load = loadOf(provider) / (provider.maxConcurrency * provider.weight);
    if (tokens > bestTokens || (tokens === bestTokens && load < bestLoad)) {
      best = provider;
      bestTokens = tokens;
      bestLoad = load;
    }
  }
  return best === undefined ? undefined : { provider: best, cachedTokens: bestTokens };
}
