/**
 * A `ResponseStore` on a shared SQL database (PostgreSQL: `storage.sql.kind = "postgres"`), so
 * every edge behind a load balancer serves `previous_response_id`, `GET`/`DELETE
 * /v1/responses/{id}` and `input_items` for responses another edge stored. Same rules as the
 * SQLite store (store.ts): one row per response (the `StoredResponse` as JSON text, its owner, the
 * time stored), reads and deletes match the owner, expired rows are removed on read and by a
 * periodic prune (every `pruneEveryPuts` puts and every `pruneIntervalMs`), which also keeps at
 * most `maxRows` and at most `maxTotalBytes` (the newest rows whose sizes add up to it; each row
 * carries its record's size). A record is stored as record-codec.ts text (each long string once)
 * and refused over `maxResponseBytes` (`recordTooLarge`). Between prunes the table may exceed the
 * limits by what the edges stored since (at most `pruneEveryPuts` records per edge). The table
 * comes from the versioned migrations (storage/migrations.ts).
 */
import type { SqlDatabase } from '../storage/sql-database.js';
import { decodeRecord, encodeRecord } from './record-codec.js';
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

export interface SqlStoreOptions extends RetentionOptions {
  /** Prune after this many puts (on this edge). Default 100. */
  pruneEveryPuts?: number;
  /** Prune on a timer this often, ms; 0 disables it. Default 60,000. */
  pruneIntervalMs?: number;
}

export class SqlResponseStore implements ResponseStore {
  private readonly retention: ResolvedRetention;
  private readonly pruneEveryPuts: number;
  private readonly timer: NodeJS.Timeout | undefined;
  private putsSincePrune = 0;

  /** @param db a migrated database (storage/migrations.ts); the store does not close it. */
  constructor(
    private readonly db: SqlDatabase,
    options: SqlStoreOptions = {},
  ) {
    this.retention = resolveRetention(options);
    this.pruneEveryPuts = options.pruneEveryPuts ?? 100;
    if (!Number.isSafeInteger(this.pruneEveryPuts) || this.pruneEveryPuts < 1)
      throw new RangeError(`pruneEveryPuts must be an integer >= 1, got ${this.pruneEveryPuts}`);
    const pruneIntervalMs = options.pruneIntervalMs ?? 60_000;
    if (!Number.isFinite(pruneIntervalMs) || pruneIntervalMs < 0)
      throw new RangeError(`pruneIntervalMs must be >= 0, got ${pruneIntervalMs}`);
    if (pruneIntervalMs > 0) {
      this.timer = setInterval(() => void this.prune().catch(() => {}), pruneIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * @throws IopError `request_too_large` when the record's stored text is over `maxResponseBytes` (nothing is stored).
   */
  async put(record: StoredResponse, owner: string): Promise<void> {
    const text = encodeRecord(record);
    const bytes = Buffer.byteLength(text);
    if (bytes > this.retention.maxResponseBytes) throw recordTooLarge(bytes, this.retention.maxResponseBytes);
    await this.db.execute(
      'INSERT INTO responses (id, owner, stored_at_ms, record, bytes) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, stored_at_ms = excluded.stored_at_ms, record = excluded.record, bytes = excluded.bytes',
      [record.id, owner, this.retention.now(), text, bytes],
    );
    if (++this.putsSincePrune >= this.pruneEveryPuts) void this.prune().catch(() => {});
  }

  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    const [row] = await this.db.query<{ stored_at_ms: string | number; record: string }>(
      'SELECT stored_at_ms, record FROM responses WHERE id = $1 AND owner = $2',
      [id, owner],
    );
    if (row === undefined) return undefined;
    if (Number(row.stored_at_ms) <= this.retention.now() - this.retention.maxAgeMs) {
      await this.db.execute('DELETE FROM responses WHERE id = $1 AND owner = $2', [id, owner]);
      return undefined;
    }
    return decodeRecord(row.record);
  }

  async delete(id: string, owner: string): Promise<boolean> {
    return (await this.db.execute('DELETE FROM responses WHERE id = $1 AND owner = $2', [id, owner])) > 0;
  }

  async inputItems(id: string, owner: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined> {
    const record = await this.get(id, owner);
    return record === undefined ? undefined : pageInputItems(record.inputItems, query);
  }

  /**
   * Deletes expired rows, the oldest beyond `maxRows` and the oldest beyond `maxTotalBytes`; resolves with how many
   * went.
   */
  async prune(): Promise<number> {
    this.putsSincePrune = 0;
    const expired = await this.db.execute('DELETE FROM responses WHERE stored_at_ms <= $1', [
      this.retention.now() - this.retention.maxAgeMs,
    ]);
    const overflow = await this.db.execute(
      'DELETE FROM responses WHERE id IN (SELECT id FROM responses ORDER BY stored_at_ms DESC, id DESC OFFSET $1)',
      [this.retention.maxRows],
    );
    // Newest first, a running total of sizes: every row from the one that crosses the budget on goes.
    const oversize = await this.db.execute(
      'DELETE FROM responses WHERE id IN (SELECT id FROM (SELECT id, SUM(bytes) OVER (ORDER BY stored_at_ms DESC, id DESC) AS newer_bytes FROM responses) sized WHERE newer_bytes > $1)',
      [this.retention.maxTotalBytes],
    );
    return expired + overflow + oversize;
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
  }
}
