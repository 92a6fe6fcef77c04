/**
 * One small interface over the two SQL databases the edge can keep its state in: embedded SQLite
 * (better-sqlite3, the default: one edge, no server) and PostgreSQL (`pg`, shared by many edges).
 * Statements are written once with PostgreSQL's numbered placeholders (`$1`, `$2`, …), so
 * keys, the usage ledger and the Responses store share their SQL. Only the migrations differ per
 * database (column types). better-sqlite3 binds `?` positionally, so the SQLite side rewrites each
 * `$N` to `?` and binds the values in the order the placeholders appear (a `$N` used twice is
 * bound twice).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type * as Pg from 'pg';

export type SqlValue = string | number | null;
export type SqlKind = 'sqlite' | 'postgres';

export interface SqlDatabase {
  readonly kind: SqlKind;
  /** PostgreSQL: the schema holding iop's tables (created by the migrations when missing). */
  readonly schema?: string;
  /** Rows of a SELECT (or of a statement with RETURNING). @throws the driver's error. */
  query<Row extends object>(sql: string, params?: readonly SqlValue[]): Promise<Row[]>;
  /** Runs a statement; resolves with the number of rows it changed. */
  execute(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs `work` in one transaction; `work` gets a database bound to that transaction. */
  transaction<T>(work: (db: SqlDatabase) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const PLACEHOLDER = /\$(\d+)/g;

/**
 * Page cache of each connection, in SQLite's unit (negative: KiB): 2 MiB, SQLite's own default.
 * better-sqlite3 is built with 16 MB per connection, which the edge's resident memory would fill
 * as the usage ledger grows (one row per request). The ledger's writes touch the last pages of
 * its table and indexes, and the kernel's page cache keeps the file. (Most of the creep measured
 * before this was the ledger's prepared statements: usage-ledger.ts `pieceSize`.)
 */
export const SQLITE_CACHE_SIZE = -2000;

/** better-sqlite3 is synchronous: each call runs to completion on the event loop (fast, local file). */
export class SqliteDatabase implements SqlDatabase {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly statements = new Map<string, { statement: Database.Statement; order: number[] }>();

  /** @param dataDir a directory (`state.sqlite` is created in it) or `:memory:`. */
  constructor(dataDir: string, file = 'state.sqlite') {
    let path = ':memory:';
    if (dataDir !== ':memory:') {
      mkdirSync(dataDir, { recursive: true });
      path = join(dataDir, file);
    }
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma(`cache_size = ${SQLITE_CACHE_SIZE}`);
  }

  private prepare(sql: string, params: readonly SqlValue[]): { statement: Database.Statement; values: SqlValue[] } {
    let prepared = this.statements.get(sql);
    if (prepared === undefined) {
      const order: number[] = [];
      const text = sql.replace(PLACEHOLDER, (_match, index: string) => {
        order.push(Number(index) - 1);
        return '?';
      });
      prepared = { statement: this.db.prepare(text), order };
      if (this.statements.size < 1000) this.statements.set(sql, prepared);
    }
    return { statement: prepared.statement, values: prepared.order.map((index) => params[index] ?? null) };
  }

  async query<Row extends object>(sql: string, params: readonly SqlValue[] = []): Promise<Row[]> {
    const { statement, values } = this.prepare(sql, params);
    return statement.all(...values) as Row[];
  }

  async execute(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    const { statement, values } = this.prepare(sql, params);
    if (!statement.reader) return statement.run(...values).changes;
    statement.all(...values);
    return 0;
  }

  /** Runs a multi-statement script (migrations). */
  exec(script: string): void {
    this.db.exec(script);
  }

  async transaction<T>(work: (db: SqlDatabase) => Promise<T>): Promise<T> {
    // better-sqlite3 transactions must be synchronous; `work` on SQLite awaits only already
    // resolved promises, so BEGIN/COMMIT around it hold (no other statement interleaves: one thread).
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = await work(this);
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

export interface PostgresOptions {
  /** `postgres://user@host:port/database`. */
  url: string;
  /**
   * Schema holding iop's tables (created if missing); default `public`. Lets several deployments or tests share one
   * database.
   */
  schema?: string;
  /** Connections per edge. Default 10. */
  poolSize?: number;
  /** Longest wait for a connection and for one statement, ms. Default 5,000. */
  timeoutMs?: number;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** A `pg` pool; every connection has `search_path` set to the schema. */
export class PostgresDatabase implements SqlDatabase {
  readonly kind = 'postgres' as const;
  readonly schema: string;
  private readonly pool: Pg.Pool;

  /** @throws RangeError when the schema is not a plain lower-case identifier. */
  constructor(options: PostgresOptions) {
    this.schema = options.schema ?? 'public';
    if (!IDENTIFIER.test(this.schema))
      throw new RangeError(`storage.sql.schema must match ${IDENTIFIER.source}, got ${JSON.stringify(this.schema)}`);
    const timeoutMs = options.timeoutMs ?? 5_000;
    // pg is loaded only for PostgreSQL: the default SQLite edge keeps its 30 modules out of memory.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Pool } = require('pg') as typeof Pg;
    this.pool = new Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
      options: `-c search_path=${this.schema}`,
    });
    // An idle connection that dies (server restart) is dropped by the pool; without a listener
    // node would treat the 'error' event as fatal.
    this.pool.on('error', () => {});
  }

  async query<Row extends object>(sql: string, params: readonly SqlValue[] = []): Promise<Row[]> {
    const result = await this.pool.query(sql, params as SqlValue[]);
    return result.rows as Row[];
  }

  async execute(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    const result = await this.pool.query(sql, params as SqlValue[]);
    return result.rowCount ?? 0;
  }

  async transaction<T>(work: (db: SqlDatabase) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const bound: SqlDatabase = {
      kind: 'postgres',
      query: async (sql, params = []) => (await client.query(sql, params as SqlValue[])).rows,
      execute: async (sql, params = []) => (await client.query(sql, params as SqlValue[])).rowCount ?? 0,
      transaction: (inner) => inner(bound),
      close: async () => {},
    };
    try {
      await client.query('BEGIN');
      const result = await work(bound);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
