/**
 * Versioned schema migrations, applied at start (`migrate`). Each migration has a version, a name
 * and its SQL for each database; `iop_schema_migrations` records the versions applied. On
 * PostgreSQL the run holds a transaction-scoped advisory lock, so edges starting together apply
 * each migration once; a database whose newest version is above this build's is refused (an older
 * edge must not write into a newer schema).
 *
 * Tables:
 * - `responses`: stored Responses with their size in bytes (PostgreSQL; SQLite keeps its own `responses.sqlite`).
 * - `api_keys`: keys managed through the admin API, stored as SHA-256 of the key, never the key.
 * - `usage_ledger`: one row per request (see ledger/usage-ledger.ts); `tokens_estimated` (version 5)
 *   marks rows whose tokens the edge estimated; `cost_usd` (version 6) is the row's cost at the
 *   price table, USD (ledger/pricing.ts).
 */
import type { SqlDatabase } from './sql-database.js';

export interface Migration {
  version: number;
  name: string;
  sqlite: string;
  postgres: string;
}

const API_KEYS = (json: string, big: string) => `
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  key_hash TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  owner TEXT NOT NULL DEFAULT '',
  settings ${json} NOT NULL,
  created_at_ms ${big} NOT NULL,
  updated_at_ms ${big} NOT NULL,
  expires_at_ms ${big},
  revoked_at_ms ${big}
);`;

const LEDGER = (big: string, id: string) => `
CREATE TABLE usage_ledger (
  seq ${id},
  ts_ms ${big} NOT NULL,
  request_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  requested_model TEXT NOT NULL,
  served_model TEXT,
  agent_id TEXT,
  dialect TEXT NOT NULL,
  input_tokens ${big} NOT NULL DEFAULT 0,
  output_tokens ${big} NOT NULL DEFAULT 0,
  cached_tokens ${big} NOT NULL DEFAULT 0,
  reasoning_tokens ${big} NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 1,
  ttft_ms DOUBLE PRECISION,
  duration_ms DOUBLE PRECISION NOT NULL,
  status INTEGER NOT NULL
);
CREATE INDEX usage_ledger_ts ON usage_ledger (ts_ms);
CREATE INDEX usage_ledger_key_ts ON usage_ledger (key_id, ts_ms);`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'responses',
    // SQLite's stored Responses live in responses.sqlite (responses-store/sqlite-store.ts).
    sqlite: 'SELECT 1;',
    postgres: `
CREATE TABLE responses (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  stored_at_ms BIGINT NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX responses_stored_at ON responses (stored_at_ms);`,
  },
  { version: 2, name: 'api_keys', sqlite: API_KEYS('TEXT', 'INTEGER'), postgres: API_KEYS('TEXT', 'BIGINT') },
  {
    version: 3,
    name: 'usage_ledger',
    sqlite: LEDGER('INTEGER', 'INTEGER PRIMARY KEY AUTOINCREMENT'),
    postgres: LEDGER('BIGINT', 'BIGSERIAL PRIMARY KEY'),
  },
  {
    version: 4,
    name: 'responses_bytes',
    // Each stored Response's size (its record's UTF-8 bytes), so the prune can keep the table
    // within `responsesStore.maxTotalBytes`; rows stored before get theirs from the record.
    sqlite: 'SELECT 1;',
    postgres: `
ALTER TABLE responses ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
UPDATE responses SET bytes = octet_length(record);`,
  },
  {
    version: 5,
    name: 'usage_ledger_tokens_estimated',
    // 1 when the row's tokens are the edge's estimate (a stream that ended without the backend's usage).
    sqlite: 'ALTER TABLE usage_ledger ADD COLUMN tokens_estimated INTEGER NOT NULL DEFAULT 0;',
    postgres: 'ALTER TABLE usage_ledger ADD COLUMN tokens_estimated SMALLINT NOT NULL DEFAULT 0;',
  },
  {
    version: 6,
    name: 'usage_ledger_cost_usd',
    // What the row's usage cost at the price table in force when it was settled, USD (ledger/pricing.ts);
    // rows written before this version, and models without a price, have 0.
    sqlite: 'ALTER TABLE usage_ledger ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;',
    postgres: 'ALTER TABLE usage_ledger ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;',
  },
];

/** Any 64-bit number distinct to iop: the PostgreSQL advisory lock that serializes migrations. */
const MIGRATION_LOCK = 0x10b_5c4e_4d41;

/**
 * Applies the migrations not yet recorded, in order, in one transaction (PostgreSQL's DDL is transactional).
 * @returns the versions applied now.
 * @throws Error when the database records a version newer than this build knows.
 */
export async function migrate(db: SqlDatabase, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  return db.transaction(async (tx) => {
    // First, under the lock: PostgreSQL's CREATE … IF NOT EXISTS is not safe against a concurrent
    // twin (two edges starting together would collide on the catalog).
    if (tx.kind === 'postgres') {
      await tx.execute('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      if (db.schema !== undefined) await tx.execute(`CREATE SCHEMA IF NOT EXISTS ${db.schema}`);
    }
    await tx.execute(
      'CREATE TABLE IF NOT EXISTS iop_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)',
    );
    const rows = await tx.query<{ version: number }>('SELECT version FROM iop_schema_migrations');
    const applied = new Set(rows.map((row) => Number(row.version)));
    const newest = Math.max(0, ...applied);
    const known = Math.max(0, ...migrations.map((migration) => migration.version));
    if (newest > known)
      throw new Error(`the database schema is at version ${newest}, newer than this edge's ${known}: upgrade the edge`);
    const done: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      const script = tx.kind === 'postgres' ? migration.postgres : migration.sqlite;
      for (const statement of script
        .split(';')
        .map((part) => part.trim())
        .filter((part) => part.length > 0))
        await tx.execute(statement);
      await tx.execute('INSERT INTO iop_schema_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)', [
        migration.version,
        migration.name,
        Date.now(),
      ]);
      done.push(migration.version);
    }
    return done;
  });
}
