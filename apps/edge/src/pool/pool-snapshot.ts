/**
 * The shape of `ProviderPool.snapshot()` (also `EdgeContext.poolSnapshot()`): every model group
 * with its providers, their load and outlier state, the group's queue and prefix-affinity figures,
 * and the pool-wide retry budget and admission counters. Plain data (JSON-serializable).
 */
import type { OutlierSnapshot } from './outlier-detector.js';
import type { AffinityStats } from './prefix-affinity.js';
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
