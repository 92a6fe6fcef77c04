/**
 * The shape of `ProviderPool.snapshot()` (also `EdgeContext.poolSnapshot()`): every model group
 * with its providers, their load and outlier state, the group's queue and prefix-affinity figures,
 * and the pool-wide retry budget and admission counters. Plain data (JSON-serializable).
 */
import type { OutlierDetector, OutlierSnapshot } from './outlier-detector.js';
import type { ModelGroup, ModelTarget } from './pool-config.js';
import type { PoolProvider } from './provider.js';
import type { AffinityStats, PrefixAffinity } from './prefix-affinity.js';
import type { RetryBudgetSnapshot } from './retry-budget.js';

export interface PoolProviderSnapshot {
  id: string;
  kind: 'agent' | 'direct';
  /** Served model ids of the group it serves here. */
  models: string[];
  inFlight: number;
  maxConcurrency: number;
  weight: number;
  labels: Record<string, string>;
  available: boolean;
  queued: number;
  kvCacheUsage: number | undefined;
  /** Prefix keys its agent reports resident in its KV cache (cache-aware routing); 0 for others. */
  residentPrefixes: number;
  /** `healthy` | `ejected` | `probing`, with the outlier detector's counters. */
  outlier: Omit<OutlierSnapshot, 'providerId'>;
}

export interface PoolGroupSnapshot {
  name: string;
  aliases: string[];
  /** True for a served model used under its own name (no configured group). */
  implicit: boolean;
  targets: Array<{ model: string; labels?: Record<string, string>; weight: number }>;
  fallbacks: string[];
  contextFallback: string | undefined;
  queue: { waiting: number; maxQueued: number; maxWaitMs: number };
  providers: PoolProviderSnapshot[];
  affinity: AffinityStats;
}

export interface PoolSnapshot {
  groups: PoolGroupSnapshot[];
  retryBudget: RetryBudgetSnapshot;
  queue: { rejectedFull: number; rejectedTimeout: number };
}

/** The pool's runtime state of one model group. */
export interface PoolGroupState {
  group: ModelGroup;
  /** True for a served model used under its own name (no configured group). */
  implicit: boolean;
  readonly outliers: OutlierDetector;
  affinity: PrefixAffinity;
}

const HEALTHY: Omit<OutlierSnapshot, 'providerId'> = {
  state: 'healthy',
  consecutiveFailures: 0,
  ejections: 0,
  ejectedUntil: undefined,
  reason: undefined,
};

/**
 * One group's snapshot: its configuration, the providers serving each target with their load and
 * outlier state, its queue and affinity figures.
 * @param candidates the providers serving a group's targets (`ProviderPool.candidates`).
 * @param waiting requests waiting in the group's admission queue.
 * @param residentPrefixes a provider's resident prefix keys (the residency index).
 */
export function groupSnapshot(
  state: PoolGroupState,
  candidates: (group: ModelGroup) => Map<PoolProvider, ModelTarget>,
  waiting: number,
  residentPrefixes: (provider: PoolProvider) => number = () => 0,
): PoolGroupSnapshot {
  const { group } = state;
  const outliers = new Map(state.outliers.snapshot().map((entry) => [entry.providerId, entry]));
  const models = new Map<PoolProvider, string[]>();
  for (const target of group.targets) {
    for (const [provider, served] of candidates({ ...group, targets: [target] })) {
      if (served === target) models.set(provider, [...(models.get(provider) ?? []), target.model]);
    }
  }
  const providers: PoolProviderSnapshot[] = [];
  for (const [provider, served] of models) {
    const entry = outliers.get(provider.id);
    const outlier = entry === undefined ? { ...HEALTHY } : (({ providerId: _id, ...rest }) => rest)(entry);
    providers.push({
      id: provider.id,
      kind: provider.kind,
      models: served,
      inFlight: provider.inFlight,
      maxConcurrency: provider.maxConcurrency,
      weight: provider.weight,
      labels: { ...provider.labels },
      available: provider.available,
      queued: provider.load.queued,
      kvCacheUsage: provider.load.kvCacheUsage,
      residentPrefixes: residentPrefixes(provider),
      outlier,
    });
  }
  return {
    name: group.name,
    aliases: [...group.aliases],
    implicit: state.implicit,
    targets: group.targets.map((target) => ({
      model: target.model,
      weight: target.weight,
      ...(target.agents === undefined ? {} : { labels: { ...target.agents.labels } }),
    })),
    fallbacks: [...group.fallbacks],
    contextFallback: group.contextFallback,
    queue: { waiting, maxQueued: group.queue.maxQueued, maxWaitMs: group.queue.maxWaitMs },
    providers,
    affinity: state.affinity.stats(),
  };
}
