/**
 * Power of two choices (Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing",
 * 2001; Envoy's LEAST_REQUEST balancer with `choice_count: 2`): draw two distinct eligible
 * providers at random and keep the less loaded one. Against live load this keeps the busiest
 * provider's excess to O(log log n) where one random choice gives O(log n / log log n), and unlike
 * a global "least loaded" it does not send a burst of simultaneous picks to the same provider.
 *
 * Load score (lower is better), dimensionless:
 *   ((inFlight + queued) / maxConcurrency + kvCacheWeight × kvCacheUsage²) / weight
 * The KV-cache term only applies when the backend reports `kvCacheUsage` (vLLM/SGLang): a nearly
 * full cache means preemption or queueing soon, and squaring it keeps it small until it matters.
 * `backendWaiting` is not added: those requests are already counted in the edge's `inFlight`.
 *
 * Eligible = `available`, not in `exclude` (provider ids, e.g. those a retry already tried),
 * carrying every `requireLabels` entry, and passing `allow` (e.g. the outlier detector). Equal
 * scores are broken at random. No allocation per pick (two passes over the candidates).
 */
import { hasLabels, type RoutedProvider, type Random } from './provider.js';

export interface PickOptions {
  /** Provider ids not to pick (already tried by this request). */
  exclude?: ReadonlySet<string> | undefined;
  /** Labels a provider must carry with these exact values (from the request or the model group target). */
  requireLabels?: Readonly<Record<string, string>> | undefined;
  /** Extra eligibility test, e.g. `(p) => outliers.allows(p.id)`. */
  allow?: ((provider: RoutedProvider) => boolean) | undefined;
}

export interface P2cOptions {
  random?: Random;
  /** Weight of the KV-cache pressure term (default 1: a full cache counts as one more full concurrency share). */
  kvCacheWeight?: number;
}

/** The load score of a provider (see the module doc); lower is better. */
export function loadScore(provider: RoutedProvider, kvCacheWeight = 1): number {
  const kv = provider.load.kvCacheUsage;
  let score = (provider.inFlight + provider.load.queued) / provider.maxConcurrency;
  if (kv !== undefined && Number.isFinite(kv)) score += kvCacheWeight * kv * kv;
  return score / provider.weight;
}

/** Whether `provider` may be picked under `options`. */
export function isEligible(provider: RoutedProvider, options: PickOptions | undefined): boolean {
  if (!provider.available) return false;
  if (options === undefined) return true;
  if (options.exclude?.has(provider.id) === true) return false;
  if (!hasLabels(provider, options.requireLabels)) return false;
  return options.allow === undefined || options.allow(provider);
}

export class P2cPicker {
  private readonly random: Random;
  private readonly kvCacheWeight: number;

  constructor(options: P2cOptions = {}) {
    this.random = options.random ?? Math.random;
    this.kvCacheWeight = options.kvCacheWeight ?? 1;
  }

  /** Returns the chosen provider, or undefined when none is eligible. */
  pick<P extends RoutedProvider>(candidates: readonly P[], options?: PickOptions): P | undefined {
    let eligible = 0;
    for (const provider of candidates) if (isEligible(provider, options)) eligible++;
    if (eligible === 0) return undefined;
    const first = eligible === 1 ? 0 : Math.floor(this.random() * eligible);
    let second = eligible === 1 ? 0 : Math.floor(this.random() * (eligible - 1));
    if (eligible > 1 && second >= first) second++;
    let a: P | undefined;
    let b: P | undefined;
    let index = 0;
    for (const provider of candidates) {
      if (!isEligible(provider, options)) continue;
      if (index === first) a = provider;
      if (index === second) b = provider;
      index++;
    }
    if (a === undefined || b === undefined || a === b) return a ?? b;
    const scoreA = loadScore(a, this.kvCacheWeight);
    const scoreB = loadScore(b, this.kvCacheWeight);
    if (scoreA < scoreB) return a;
    if (scoreB < scoreA) return b;
    return this.random() < 0.5 ? a : b;
  }
}

/**
 * Round robin over the eligible providers, in candidate order: a baseline that ignores load, for
 * comparing routing policies (`pool.balancer: "round-robin"`). One cursor per picker (one per
 * router: a group's turns interleave with other groups', which keeps each group near even).
 */
export class RoundRobinPicker {
  private next = 0;

  pick<P extends RoutedProvider>(candidates: readonly P[], options?: PickOptions): P | undefined {
    const eligible = candidates.filter((provider) => isEligible(provider, options));
    if (eligible.length === 0) return undefined;
    const chosen = eligible[this.next % eligible.length]!;
    this.next = (this.next + 1) % 1_000_000_007;
    return chosen;
  }
}
