/**
 * Builds the edge's state stores from the `storage` section (storage-config.ts) and closes them in
 * order on shutdown: the SQL database (SQLite `state.sqlite` in the data directory, or
 * PostgreSQL) with its migrations applied, the Responses store on it (PostgreSQL) or beside it
 * (SQLite `responses.sqlite`, memory), managed keys, the usage ledger, and the counters (memory or
 * Redis, behind the failure policy) with the per-key limiter.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EdgeConfig } from './config.js';
import { ConfigError } from './config-error.js';
import type { Logger } from './logger.js';
import { KeyDirectory } from './keys/key-directory.js';
import { KeyStore } from './keys/key-store.js';
import { recordsOfConfigKeys } from './keys/config-keys.js';
import { UsageLedger } from './ledger/usage-ledger.js';
import { usedSince } from './ledger/usage-query.js';
import { MemoryCounterStore, type CounterStore } from './limits/counter-store.js';
import { FailoverCounterStore } from './limits/failover-counter-store.js';
import { KeyLimiter } from './limits/key-limiter.js';
import { RedisCounterStore } from './limits/redis-counter-store.js';
import {
  MemoryResponseStore,
  WorkerResponseStore,
  defaultDataDir,
  type ResponseStore,
} from './responses-store/index.js';
import { resolve as resolvePath } from 'node:path';
import { SqlResponseStore } from './responses-store/sql-store.js';
import { migrate } from './storage/migrations.js';
import { PostgresDatabase, SqliteDatabase, type SqlDatabase } from './storage/sql-database.js';

export interface SharedState {
  sql: SqlDatabase;
  responses: ResponseStore;
  keyStore: KeyStore;
  keys: KeyDirectory;
  counters: CounterStore;
  limiter: KeyLimiter;
  ledger: UsageLedger;
  /** Tells every edge (through Redis, or just this one) to forget a cached key hash. */
  broadcastInvalidate(keyHash: string): Promise<void>;
  close(deadlineMs: number): Promise<void>;
}

const INVALIDATE = 'invalidate:';

async function openSql(config: EdgeConfig, logger: Logger): Promise<SqlDatabase> {
  const sql = config.storage.sql;
  if (sql.kind === 'sqlite') {
    const dataDir =
      config.responsesStore.kind === 'memory' ? ':memory:' : (config.responsesStore.dataDir ?? defaultDataDir());
    let db: SqliteDatabase;
    try {
      db = new SqliteDatabase(dataDir);
    } catch (error) {
      throw dataDirError(dataDir, error);
    }
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ applied, database: 'sqlite' }, 'schema migrations applied');
    return db;
  }
  const db = new PostgresDatabase({
    url: sql.url!,
    ...(sql.schema === undefined ? {} : { schema: sql.schema }),
    ...(sql.poolSize === undefined ? {} : { poolSize: sql.poolSize }),
  });
  try {
    const applied = await migrate(db);
    if (applied.length > 0)
      logger.info({ applied, database: 'postgres', schema: db.schema }, 'schema migrations applied');
  } catch (error) {
    await db.close().catch(() => {});
    const where = new URL(sql.url!);
    throw new ConfigError(
      `cannot prepare PostgreSQL at ${where.host}${where.pathname} (storage.sql): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return db;
}

/** The error of a data directory the edge cannot use: names it, the user, and the settings to change. */
function dataDirError(dataDir: string, error: unknown): ConfigError {
  const reason = error instanceof Error ? error.message : String(error);
  const user = typeof process.getuid === 'function' ? ` (uid ${process.getuid()})` : '';
  return new ConfigError(
    `cannot open the Responses store in ${resolvePath(dataDir)}: ${reason}; make that directory writable by this user${user}, or set IOP_DATA_DIR (responsesStore.dataDir) to one that is, or use "responsesStore": {"kind": "memory"}`,
  );
}

export async function openSharedState(config: EdgeConfig, logger: Logger, registry: Registry): Promise<SharedState> {
  const sql = await openSql(config, logger);
  const { kind, dataDir, ...retention } = config.responsesStore;
  const responses: ResponseStore =
    sql.kind === 'postgres'
      ? new SqlResponseStore(sql, retention)
      : kind === 'memory'
        ? new MemoryResponseStore(retention)
        : // Its worker thread starts with the first stored Response (worker-store.ts); openSql has
          // opened state.sqlite in the same directory, so the directory is known to be usable.
          new WorkerResponseStore({ dataDir: dataDir ?? defaultDataDir(), ...retention });

  let shared: CounterStore;
  if (config.storage.counters.kind === 'redis') {
    const redis = new RedisCounterStore({
      url: config.storage.counters.url!,
      ...(config.storage.counters.keyPrefix === undefined ? {} : { keyPrefix: config.storage.counters.keyPrefix }),
    });
    await redis
      .ready()
      .catch((error: unknown) =>
        logger.warn(
          { error: error instanceof Error ? error.message : String(error), onFailure: config.storage.onFailure },
          'Redis not reachable at start; retrying in the background',
        ),
      );
    shared = new FailoverCounterStore(redis, config.storage.onFailure, logger);
  } else {
    shared = new MemoryCounterStore();
  }

  const keyStore = new KeyStore(sql);
  const keys = new KeyDirectory({
    store: keyStore,
    cacheTtlMs: config.storage.keyCacheTtlMs,
    failureMode: config.storage.onFailure,
    logger,
  });
  keys.setConfigKeys(recordsOfConfigKeys(config.keys));
  shared.onMessage((message) => {
    if (message.startsWith(INVALIDATE)) keys.invalidate(message.slice(INVALIDATE.length));
  });

  const dropped = new Counter({
    name: 'iop_usage_ledger_dropped_total',
    help: 'Usage ledger rows dropped (queue full while the database was slow or down, or left at shutdown).',
    registers: [registry],
  });
  const writeErrors = new Counter({
    name: 'iop_usage_ledger_write_errors_total',
    help: 'Failed usage ledger batch writes (the rows stay queued and are retried).',
    registers: [registry],
  });
  let lastWarnMs = 0;
  const ledger = new UsageLedger(sql, {
    ...config.storage.ledger,
    onDrop: (count) => dropped.inc(count),
    onWriteError: (error) => {
      writeErrors.inc();
      if (Date.now() - lastWarnMs < 10_000) return;
      lastWarnMs = Date.now();
      logger.warn(
        { error: error instanceof Error ? error.message : String(error), queued: ledger.queued },
        'usage ledger write failed; rows kept and retried',
      );
    },
  });
  new Gauge({
    name: 'iop_usage_ledger_queued',
    help: 'Usage ledger rows waiting to be written.',
    registers: [registry],
    collect() {
      this.set(ledger.queued);
    },
  });

  const limiter = new KeyLimiter(shared, {
    // In memory a restart would forget what a budget has used: the ledger tells it again.
    ...(config.storage.counters.kind === 'memory'
      ? { usedSince: (keyId: string, sinceMs: number) => usedSince(sql, keyId, sinceMs) }
      : {}),
  });

  return {
    sql,
    responses,
    keyStore,
    keys,
    counters: shared,
    limiter,
    ledger,
    broadcastInvalidate: async (keyHash) => {
      keys.invalidate(keyHash);
      await shared.publish(INVALIDATE + keyHash);
    },
    close: async (deadlineMs) => {
      limiter.close();
      await ledger.close(deadlineMs);
      await responses.close();
      await shared.close();
      await sql.close();
    },
  };
}
