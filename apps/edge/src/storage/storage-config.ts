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
 * Needs a restart to change. Environment: `IOP_STORAGE_*` by the naming rule, and the older
 * IOP_STORAGE_POSTGRES_URL (+ _SCHEMA), IOP_STORAGE_REDIS_URL (+ _PREFIX), which also set the kind.
 */
import { Type, type Static } from '@sinclair/typebox';
import { compileSchema, stringEnum, type Assert, type SameShape } from '@iop/core';

/**
 * What the edge does when shared state cannot be reached (`storage.onFailure`): `open` answers from what it has (the
 * counters of this edge, the last cached key), `closed` refuses with 503.
 */
export type FailureMode = 'open' | 'closed';

export interface StorageConfig {
  sql: { kind: 'sqlite' | 'postgres'; url?: string; schema?: string; poolSize?: number };
  counters: { kind: 'memory' | 'redis'; url?: string; keyPrefix?: string };
  onFailure: FailureMode;
  keyCacheTtlMs: number;
  /** Ledger writer; `maxAgeMs`: rows older are deleted (hourly), 0 keeps all (the default). */
  ledger: { batchSize: number; flushIntervalMs: number; maxQueued: number; maxAgeMs: number };
}

const storageSchema = Type.Object(
  {
    sql: Type.Object(
      {
        kind: stringEnum(['sqlite', 'postgres'] as const, {
          default: 'sqlite',
          description:
            'Stored Responses, managed keys and the usage ledger: `sqlite` (embedded, in the data directory) or `postgres`.',
        }),
        url: Type.Optional(
          Type.String({ pattern: '^postgres(ql)?://', description: 'PostgreSQL URL (kind `postgres`).' }),
        ),
        schema: Type.Optional(Type.String({ pattern: '^[a-z_][a-z0-9_]{0,62}$', description: 'PostgreSQL schema.' })),
        poolSize: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 1000,
            description: 'PostgreSQL connections this edge opens at most (default 10).',
          }),
        ),
      },
      {
        additionalProperties: false,
        default: {},
        if: { properties: { kind: { const: 'postgres' } }, required: ['kind'] },
        then: { required: ['url'] },
      },
    ),
    counters: Type.Object(
      {
        kind: stringEnum(['memory', 'redis'] as const, {
          default: 'memory',
          description:
            'Rate-limit windows, budgets, stream slots and revocations: `memory` (this edge only) or `redis`.',
        }),
        url: Type.Optional(Type.String({ pattern: '^rediss?://', description: 'Redis URL (kind `redis`).' })),
        keyPrefix: Type.Optional(
          Type.String({
            maxLength: 100,
            description:
              'Prefix of every Redis key this edge writes (default `iop:`); edges that share counters use the same one.',
          }),
        ),
      },
      {
        additionalProperties: false,
        default: {},
        if: { properties: { kind: { const: 'redis' } }, required: ['kind'] },
        then: { required: ['url'] },
      },
    ),
    onFailure: stringEnum(['open', 'closed'] as const, {
      default: 'open',
      description: "When the shared store fails: `open` (a warning, this edge's own counters) or `closed` (503).",
    }),
    keyCacheTtlMs: Type.Integer({
      minimum: 0,
      maximum: 600_000,
      default: 2_000,
      description: 'How long an edge trusts a key looked up in the store, ms.',
    }),
    ledger: Type.Object(
      {
        batchSize: Type.Integer({
          minimum: 1,
          maximum: 1000,
          default: 200,
          description: 'Ledger rows written in one INSERT at most.',
        }),
        flushIntervalMs: Type.Integer({
          minimum: 10,
          maximum: 600_000,
          default: 1_000,
          description: 'Queued ledger rows are written at least this often, ms.',
        }),
        maxQueued: Type.Integer({
          minimum: 1000,
          maximum: 10_000_000,
          default: 50_000,
          description:
            'Ledger rows held while the database is slow or down; beyond it new rows are dropped and counted (iop_usage_ledger_dropped_total).',
        }),
        maxAgeMs: Type.Integer({
          minimum: 0,
          default: 0,
          description: 'Ledger rows older are deleted (hourly); 0 keeps all.',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false, default: {}, description: 'Where shared state lives (restart to change).' },
);

const _shape: Assert<SameShape<Static<typeof storageSchema>, StorageConfig>> = true;

/** The `storage` section's schema, typed by the checked `StorageConfig`. */
export const STORAGE_SCHEMA = Type.Unsafe<StorageConfig>(storageSchema);

/** Every storage default (from the schema). */
export const DEFAULT_STORAGE: StorageConfig = compileSchema(STORAGE_SCHEMA)({}).value;
