/**
 * The usage ledger: one row per request (`usage_ledger`, storage/migrations.ts), written off the
 * hot path. `record` only appends to a bounded in-memory queue; a timer (every `flushIntervalMs`)
 * or a full batch (`batchSize`) writes the queue with multi-row INSERTs. When the database is slow
 * or down the rows wait in the queue and are written once it answers again; past `maxQueued` new
 * rows are dropped and counted (`dropped`, the `iop_usage_ledger_dropped_total` metric) instead of
 * memory growing without bound. `close()` writes what is left (graceful shutdown), up to a deadline.
 * Retention: rows older than `maxAgeMs` are deleted at start and every `pruneIntervalMs`.
 */
import { sleep } from '@iop/core';
import type { SqlDatabase, SqlValue } from '../storage/sql-database.js';

export interface LedgerRow {
  tsMs: number;
  requestId: string;
  /** The key's id (`key_…`), `legacy:<hash prefix>` for a plain `apiKeys` entry, `open` without keys. */
  keyId: string;
  requestedModel: string;
  servedModel?: string;
  agentId?: string;
  dialect: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
  attempts: number;
  /** The tokens are the edge's estimate: the stream ended without the backend's usage (attempt/usage-recorder.ts). */
  tokensEstimated?: boolean;
  ttftMs?: number;
  durationMs: number;
  status: number;
  /** What the usage cost at the price table, USD (ledger/pricing.ts); 0 for a model without a price. */
  costUsd: number;
}

export interface UsageLedgerOptions {
  /** Rows per INSERT. Default 200. */
  batchSize?: number;
  /** Longest a row waits before a write, ms. Default 1,000. */
  flushIntervalMs?: number;
  /** Rows kept while the database is slow or down; beyond, new rows are dropped and counted. Default 50,000. */
  maxQueued?: number;
  /** Called when rows are dropped or a write fails (metrics, logs). */
  onDrop?: (count: number) => void;
  onWriteError?: (error: unknown) => void;
  /** Rows older than this are deleted, ms; 0 keeps every row. Default 0. */
  maxAgeMs?: number;
  /** How often old rows are deleted, ms. Default one hour. */
  pruneIntervalMs?: number;
}

const COLUMNS = [
  'ts_ms',
  'request_id',
  'key_id',
  'requested_model',
  'served_model',
  'agent_id',
  'dialect',
  'input_tokens',
  'output_tokens',
  'cached_tokens',
  'reasoning_tokens',
  'attempts',
  'ttft_ms',
  'duration_ms',
  'status',
  'tokens_estimated',
  'cost_usd',
];

function values(row: LedgerRow): SqlValue[] {
  return [
    row.tsMs,
    row.requestId,
    row.keyId,
    row.requestedModel,
    row.servedModel ?? null,
    row.agentId ?? null,
    row.dialect,
    row.inputTokens,
    row.outputTokens,
    row.cachedTokens,
    row.reasoningTokens,
    row.attempts,
    row.ttftMs ?? null,
    row.durationMs,
    row.status,
    row.tokensEstimated === true ? 1 : 0,
    row.costUsd,
  ];
}

export class UsageLedger {
  private queue: LedgerRow[] = [];
  private readonly batchSize: number;
  /** The INSERT of each piece size (pieceSize). */
  private readonly insertSql = new Map<number, string>();
  private readonly maxQueued: number;
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> | undefined;
  private closed = false;
  /** Rows dropped because the queue was full. */
  dropped = 0;
  /** Rows written since start. */
  written = 0;

  constructor(
    private readonly db: SqlDatabase,
    private readonly options: UsageLedgerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 200;
    this.maxQueued = options.maxQueued ?? 50_000;
    const flushIntervalMs = options.flushIntervalMs ?? 1_000;
    if (!Number.isSafeInteger(this.batchSize) || this.batchSize < 1 || this.batchSize > 1000)
      throw new RangeError(`batchSize must be 1..1000, got ${this.batchSize}`);
    if (!Number.isSafeInteger(this.maxQueued) || this.maxQueued < this.batchSize)
      throw new RangeError(`maxQueued must be an integer >= batchSize (${this.batchSize}), got ${this.maxQueued}`);
    this.timer = setInterval(() => void this.flush(), flushIntervalMs);
    this.timer.unref();
    const maxAgeMs = options.maxAgeMs ?? 0;
    if (maxAgeMs > 0) {
      void this.prune(maxAgeMs).catch(() => {});
      this.pruneTimer = setInterval(
        () => void this.prune(maxAgeMs).catch(() => {}),
        options.pruneIntervalMs ?? 3_600_000,
      );
      this.pruneTimer.unref();
    }
  }

  private readonly pruneTimer: NodeJS.Timeout | undefined;

  /** Deletes rows older than `maxAgeMs`; resolves with how many went. */
  prune(maxAgeMs: number, now = Date.now()): Promise<number> {
    return this.db.execute('DELETE FROM usage_ledger WHERE ts_ms < $1', [now - maxAgeMs]);
  }

  /** Rows waiting to be written. */
  get queued(): number {
    return this.queue.length;
  }

  /** Queues a row (never blocks, never throws). */
  record(row: LedgerRow): void {
    if (this.closed || this.queue.length >= this.maxQueued) {
      this.dropped++;
      this.options.onDrop?.(1);
      return;
    }
    this.queue.push(row);
    if (this.queue.length >= this.batchSize && this.writing === undefined) void this.flush();
  }

  /** Writes every queued row, one batch at a time; stops at the first failed write (rows kept). */
  flush(): Promise<void> {
    if (this.writing !== undefined) return this.writing;
    if (this.queue.length === 0) return Promise.resolve();
    const writing = this.drain().finally(() => {
      if (this.writing === writing) this.writing = undefined;
    });
    this.writing = writing;
    return writing;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, this.pieceSize(this.queue.length));
      try {
        await this.insert(batch);
      } catch (error) {
        this.options.onWriteError?.(error);
        return;
      }
      this.queue.splice(0, batch.length);
      this.written += batch.length;
    }
  }

  /**
   * Rows in the next INSERT: `batchSize`, or below it the largest power of two. Every INSERT then
   * has one of ~9 shapes, so SQLite keeps ~9 prepared statements, not one per queue length (up to
   * `batchSize` statements of up to 3 400 parameters each, held in native memory).
   */
  private pieceSize(queued: number): number {
    return queued >= this.batchSize ? this.batchSize : 2 ** Math.floor(Math.log2(queued));
  }

  private async insert(batch: readonly LedgerRow[]): Promise<void> {
    const params: SqlValue[] = [];
    for (const row of batch) params.push(...values(row));
    let sql = this.insertSql.get(batch.length);
    if (sql === undefined) {
      const tuples = batch.map(
        (_, row) => `(${COLUMNS.map((_column, index) => `$${row * COLUMNS.length + index + 1}`).join(', ')})`,
      );
      sql = `INSERT INTO usage_ledger (${COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}`;
      this.insertSql.set(batch.length, sql);
    }
    await this.db.execute(sql, params);
  }

  /** Stops taking rows and writes what is queued, retrying until `deadlineMs` has passed. */
  async close(deadlineMs = 5_000): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    clearInterval(this.pruneTimer);
    const until = Date.now() + deadlineMs;
    for (;;) {
      await this.flush();
      if (this.queue.length === 0 || Date.now() >= until) break;
      await sleep(200);
    }
    if (this.queue.length > 0) {
      this.dropped += this.queue.length;
      this.options.onDrop?.(this.queue.length);
      this.queue = [];
    }
  }
}
