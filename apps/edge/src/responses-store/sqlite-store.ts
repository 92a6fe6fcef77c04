/**
 * The default `ResponseStore`: embedded SQLite (better-sqlite3 12; v13 needs Node 22) in a data
 * directory, WAL journal, prepared statements. One row per response: the `StoredResponse` as JSON,
 * the time it was stored and its owner (see `ResponseStore`); the key-less lookups also match the
 * owner, so another owner's row is never read, paged or deleted.
 *
 * Migration: a database file from before owners (no `owner` column) gets the column on open
 * (`ALTER TABLE responses ADD COLUMN owner TEXT NOT NULL DEFAULT ''`), so its rows belong to the
 * open edge (`''`): still served while no client keys are configured, readable by nobody once
 * keys are, until retention removes them.
 *
 * Retention: a read of an expired row deletes it and answers undefined; every `pruneEveryPuts`
 * writes and every `pruneIntervalMs` (an unref'd timer) expired rows and the oldest rows beyond
 * `maxRows` are deleted.
 *
 * Size: a record is stored as record-codec.ts text (each long string once); its length in bytes is
 * kept in the `bytes` column (added on open to older files and filled from their rows). A record
 * over `maxResponseBytes` is refused (`recordTooLarge`); when the rows together pass
 * `maxTotalBytes`, the oldest are deleted until they fit.
 *
 * better-sqlite3 is synchronous: this class blocks its thread for each statement. The edge runs it
 * in a worker thread (worker-store.ts), so the event loop never waits for the disk.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SQLITE_CACHE_SIZE } from '../storage/sql-database.js';
import { decodeRecord, encodeRecord, encodeShared, type SharedRecord } from './record-codec.js';
import {
  pageInputItems,
  recordTooLarge,
  resolveRetention,
  type InputItemsPage,
  type InputItemsQuery,
  type ResolvedRetention,
  type ResponseStore,
  type RetentionOptions,
  type StoredResponse,
} from './store.js';

/** The data directory: `IOP_DATA_DIR`, default `./.iop-data`. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.IOP_DATA_DIR !== undefined && env.IOP_DATA_DIR.length > 0 ? env.IOP_DATA_DIR : './.iop-data';
}

export interface SqliteStoreOptions extends RetentionOptions {
  /**
   * Directory of `responses.sqlite` (created if missing). Default `defaultDataDir()`. Use `:memory:` for a throwaway
   * database.
   */
  dataDir?: string;
  /** Prune after this many puts. Default 100. */
  pruneEveryPuts?: number;
  /** Prune on a timer this often, in ms; 0 disables the timer. Default 60,000. */
  pruneIntervalMs?: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS responses (
  id TEXT PRIMARY KEY,
  stored_at_ms INTEGER NOT NULL,
  record TEXT NOT NULL,
  owner TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS responses_stored_at ON responses (stored_at_ms);
`;

/** Creates the table, or adds the `owner` column to one from before owners (rows owned by `''`). */
function migrate(db: Database.Database): void {
  db.exec(SCHEMA);
  const columns = db.prepare<[], { name: string }>("SELECT name FROM pragma_table_info('responses')").all();
  if (!columns.some((column) => column.name === 'owner'))
    db.exec("ALTER TABLE responses ADD COLUMN owner TEXT NOT NULL DEFAULT ''");
  if (!columns.some((column) => column.name === 'bytes')) {
    db.exec('ALTER TABLE responses ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0');
    db.exec('UPDATE responses SET bytes = length(CAST(record AS BLOB))');
  }
}

export class SqliteResponseStore implements ResponseStore {
  private readonly db: Database.Database;
  private readonly retention: ResolvedRetention;
  private readonly pruneEveryPuts: number;
  private readonly timer: NodeJS.Timeout | undefined;
  private putsSincePrune = 0;
  /** Bytes of all rows (the `bytes` column's sum), kept current by put, delete and prune. */
  private totalBytes: number;
  private readonly statements: {
    put: Database.Statement<[string, number, string, string, number]>;
    bytesOf: Database.Statement<[string], { bytes: number }>;
    totalBytes: Database.Statement<[], { total: number | null }>;
    deleteBeyondBytes: Database.Statement<[number]>;
    get: Database.Statement<[string, string], { stored_at_ms: number; record: string }>;
    delete: Database.Statement<[string, string]>;
    deleteExpired: Database.Statement<[number]>;
    deleteOverflow: Database.Statement<[number]>;
  };

  constructor(options: SqliteStoreOptions = {}) {
    this.retention = resolveRetention(options);
    this.pruneEveryPuts = options.pruneEveryPuts ?? 100;
    if (!Number.isSafeInteger(this.pruneEveryPuts) || this.pruneEveryPuts < 1)
      throw new RangeError(`pruneEveryPuts must be an integer >= 1, got ${this.pruneEveryPuts}`);
    const pruneIntervalMs = options.pruneIntervalMs ?? 60_000;
    if (!Number.isFinite(pruneIntervalMs) || pruneIntervalMs < 0)
      throw new RangeError(`pruneIntervalMs must be >= 0, got ${pruneIntervalMs}`);
    const dataDir = options.dataDir ?? defaultDataDir();
    let file = ':memory:';
    if (dataDir !== ':memory:') {
      mkdirSync(dataDir, { recursive: true });
      file = join(dataDir, 'responses.sqlite');
    }
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma(`cache_size = ${SQLITE_CACHE_SIZE}`);
    this.db.transaction(() => migrate(this.db)).immediate();
    this.statements = {
      put: this.db.prepare(
        'INSERT OR REPLACE INTO responses (id, stored_at_ms, record, owner, bytes) VALUES (?, ?, ?, ?, ?)',
      ),
      bytesOf: this.db.prepare('SELECT bytes FROM responses WHERE id = ?'),
      totalBytes: this.db.prepare('SELECT SUM(bytes) AS total FROM responses'),
      // The newest rows whose running total fits stay; the older rest goes.
      deleteBeyondBytes: this.db.prepare(
        'DELETE FROM responses WHERE id IN (SELECT id FROM (SELECT id, SUM(bytes) OVER (ORDER BY stored_at_ms DESC, rowid DESC) AS running FROM responses) WHERE running > ?)',
      ),
      get: this.db.prepare('SELECT stored_at_ms, record FROM responses WHERE id = ? AND owner = ?'),
      delete: this.db.prepare('DELETE FROM responses WHERE id = ? AND owner = ?'),
      deleteExpired: this.db.prepare('DELETE FROM responses WHERE stored_at_ms <= ?'),
      deleteOverflow: this.db.prepare(
        'DELETE FROM responses WHERE id IN (SELECT id FROM responses ORDER BY stored_at_ms DESC, rowid DESC LIMIT -1 OFFSET ?)',
      ),
    };
    this.totalBytes = this.statements.totalBytes.get()?.total ?? 0;
    if (pruneIntervalMs > 0) {
      this.timer = setInterval(() => this.prune(), pruneIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * @throws IopError `request_too_large` when the record's stored text is over `maxResponseBytes` (nothing is stored).
   */
  async put(record: StoredResponse, owner: string): Promise<void> {
    this.putText(record.id, encodeRecord(record), owner);
  }

  /** `put` of a record already in stored form (`shareRecord`: the worker's input). @throws as `put`. */
  putShared(id: string, shared: SharedRecord, owner: string): void {
    this.putText(id, encodeShared(shared), owner);
  }

  private putText(id: string, text: string, owner: string): void {
    const bytes = Buffer.byteLength(text);
    if (bytes > this.retention.maxResponseBytes) throw recordTooLarge(bytes, this.retention.maxResponseBytes);
    const replaced = this.statements.bytesOf.get(id)?.bytes ?? 0;
    this.statements.put.run(id, this.retention.now(), text, owner, bytes);
    this.totalBytes += bytes - replaced;
    if (++this.putsSincePrune >= this.pruneEveryPuts || this.totalBytes > this.retention.maxTotalBytes) this.prune();
  }

  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    const row = this.statements.get.get(id, owner);
    if (row === undefined) return undefined;
    if (row.stored_at_ms <= this.retention.now() - this.retention.maxAgeMs) {
      this.statements.delete.run(id, owner);
      return undefined;
    }
    return decodeRecord(row.record);
  }

  async delete(id: string, owner: string): Promise<boolean> {
    const bytes = this.statements.bytesOf.get(id)?.bytes ?? 0;
    const deleted = this.statements.delete.run(id, owner).changes > 0;
    if (deleted) this.totalBytes -= bytes;
    return deleted;
  }

  async inputItems(id: string, owner: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined> {
    const record = await this.get(id, owner);
    return record === undefined ? undefined : pageInputItems(record.inputItems, query);
  }

  /** Deletes expired rows, the oldest beyond `maxRows` and beyond `maxTotalBytes`; returns how many rows went. */
  prune(): number {
    this.putsSincePrune = 0;
    const expired = this.statements.deleteExpired.run(this.retention.now() - this.retention.maxAgeMs).changes;
    const overflow = this.statements.deleteOverflow.run(this.retention.maxRows).changes;
    const oversize =
      this.totalBytes > this.retention.maxTotalBytes
        ? this.statements.deleteBeyondBytes.run(this.retention.maxTotalBytes).changes
        : 0;
    this.totalBytes = this.statements.totalBytes.get()?.total ?? 0;
    return expired + overflow + oversize;
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.db.open) this.db.close();
  }
}
