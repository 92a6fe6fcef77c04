/**
 * The `storage` section: where the edge keeps state that several edges may share.
 * - `sql`: stored Responses, managed keys and the usage ledger — `sqlite` (embedded, the default,
 *   files in the data directory) or `postgres` (`url`, optional `schema`).
 * - `counters`: rate-limit windows, budgets, concurrent-stream slots and revocation broadcasts —
 *   `memory` (this edge only, the default) or `redis` (`url`, optional `keyPrefix`).
 * - `onFailure`: `open` (a logged warning, this edge's own counters, cached keys) or `closed`
 *   (503 until the server answers again).
 * - `keyCacheTtlMs`: how long an edge trusts a key looked up in the store (revocation delay
 *   without Redis). `ledger`: batch writer settings (ledger/usage-ledger.ts).
 * Needs a restart to change.
 */
import type { FailureMode } from '../limits/failover-counter-store.js';

export interface StorageConfig {
  sql: { kind: 'sqlite' | 'postgres'; url?: string; schema?: string; poolSize?: number };
  counters: { kind: 'memory' | 'redis'; url?: string; keyPrefix?: string };
  onFailure: FailureMode;
  keyCacheTtlMs: number;
  /** Ledger writer; `maxAgeMs`: rows older are deleted (hourly), 0 keeps all (the default). */
  ledger: { batchSize: number; flushIntervalMs: number; maxQueued: number; maxAgeMs: number };
}

export const DEFAULT_STORAGE: StorageConfig = {
  sql: { kind: 'sqlite' },
  counters: { kind: 'memory' },
  onFailure: 'open',
  keyCacheTtlMs: 2_000,
  ledger: { batchSize: 200, flushIntervalMs: 1_000, maxQueued: 50_000, maxAgeMs: 0 },
};

export const STORAGE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    sql: {
      type: 'object',
      additionalProperties: false,
      required: ['kind'],
      properties: {
        kind: { enum: ['sqlite', 'postgres'] },
        url: { type: 'string', pattern: '^postgres(ql)?://' },
        schema: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' },
        poolSize: { type: 'integer', minimum: 1, maximum: 1000 },
      },
      if: { properties: { kind: { const: 'postgres' } } },
      then: { required: ['url'] },
    },
    counters: {
      type: 'object',
      additionalProperties: false,
      required: ['kind'],
      properties: {
        kind: { enum: ['memory', 'redis'] },
        url: { type: 'string', pattern: '^rediss?://' },
        keyPrefix: { type: 'string', maxLength: 100 },
      },
      if: { properties: { kind: { const: 'redis' } } },
      then: { required: ['url'] },
    },
    onFailure: { enum: ['open', 'closed'] },
    keyCacheTtlMs: { type: 'integer', minimum: 0, maximum: 600_000 },
    ledger: {
      type: 'object',
      additionalProperties: false,
      properties: {
        batchSize: { type: 'integer', minimum: 1, maximum: 1000 },
        flushIntervalMs: { type: 'integer', minimum: 10, maximum: 600_000 },
        maxQueued: { type: 'integer', minimum: 1000, maximum: 10_000_000 },
        maxAgeMs: { type: 'integer', minimum: 0 },
      },
    },
  },
} as const;

/** Layer merge: each sub-object merges key by key (a later `sql.url` keeps an earlier `sql.schema`). */
export function mergeStorage(base: StorageConfig, override: Record<string, unknown> | undefined): StorageConfig {
  if (override === undefined) return base;
  const part = <K extends 'sql' | 'counters' | 'ledger'>(key: K) => ({ ...base[key], ...((override[key] as object | undefined) ?? {}) });
  return { ...base, ...(override as Partial<StorageConfig>), sql: part('sql'), counters: part('counters'), ledger: part('ledger') } as StorageConfig;
}

/** IOP_STORAGE_POSTGRES_URL (+ _SCHEMA), IOP_STORAGE_REDIS_URL (+ _PREFIX), IOP_STORAGE_ON_FAILURE. */
export function storageFromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  if (env.IOP_STORAGE_POSTGRES_URL) out.sql = { kind: 'postgres', url: env.IOP_STORAGE_POSTGRES_URL, ...(env.IOP_STORAGE_POSTGRES_SCHEMA ? { schema: env.IOP_STORAGE_POSTGRES_SCHEMA } : {}) };
  if (env.IOP_STORAGE_REDIS_URL) out.counters = { kind: 'redis', url: env.IOP_STORAGE_REDIS_URL, ...(env.IOP_STORAGE_REDIS_PREFIX ? { keyPrefix: env.IOP_STORAGE_REDIS_PREFIX } : {}) };
  if (env.IOP_STORAGE_ON_FAILURE) out.onFailure = env.IOP_STORAGE_ON_FAILURE;
  return Object.keys(out).length > 0 ? out : undefined;
}
