import { SqliteDatabase, type SqlDatabase } from '../../../src/storage/sql-database.js';
import { MIGRATIONS, migrate } from '../../../src/storage/migrations.js';
import { UsageLedger, type LedgerRow } from '../../../src/ledger/usage-ledger.js';
import { queryUsage, usedSince } from '../../../src/ledger/usage-query.js';

const row = (overrides: Partial<LedgerRow> = {}): LedgerRow => ({
  tsMs: Date.UTC(2026, 0, 1, 10),
  requestId: 'req_1',
  keyId: 'key_a',
  requestedModel: 'm',
  servedModel: 'm-served',
  agentId: 'agent-1',
  dialect: 'openai-chat',
  inputTokens: 5,
  outputTokens: 10,
  cachedTokens: 1,
  reasoningTokens: 0,
  attempts: 1,
  ttftMs: 12.5,
  durationMs: 40,
  status: 200,
  costUsd: 0.25,
  ...overrides,
});

/** A database whose writes fail while `down` is true. */
function flaky(db: SqlDatabase): SqlDatabase & { down: boolean } {
  const wrapper = {
    kind: db.kind,
    down: false,
    query: db.query.bind(db),
    execute: (sql: string, params?: readonly (string | number | null)[]) =>
      wrapper.down ? Promise.reject(new Error('database down')) : db.execute(sql, params),
    transaction: db.transaction.bind(db),
    close: db.close.bind(db),
  };
  return wrapper as SqlDatabase & { down: boolean };
}

describe('migrations (SQLite)', () => {
  it('applies every version once and refuses a newer schema', async () => {
    const db = new SqliteDatabase(':memory:');
    expect(await migrate(db)).toEqual(MIGRATIONS.map((migration) => migration.version));
    expect(await migrate(db)).toEqual([]);
    await db.execute('INSERT INTO iop_schema_migrations (version, name, applied_at_ms) VALUES (99, $1, 0)', ['future']);
    await expect(migrate(db)).rejects.toThrow(
      `the database schema is at version 99, newer than this edge's ${MIGRATIONS.at(-1)!.version}`,
    );
    await db.close();
  });
});

describe('UsageLedger', () => {
  let db: SqliteDatabase;
  beforeEach(async () => {
    db = new SqliteDatabase(':memory:');
    await migrate(db);
  });
  afterEach(() => db.close());

  it('writes any queue length with INSERTs of a few shapes (batchSize, or powers of two below it)', async () => {
    const shapes = new Map<string, number[]>();
    const counting = flaky(db);
    const execute = counting.execute;
    counting.execute = (sql, params) => {
      const rows = (params?.length ?? 0) / 17; // columns per row
      shapes.set(sql, [...(shapes.get(sql) ?? []), rows]);
      return execute(sql, params);
    };
    const ledger = new UsageLedger(counting, { batchSize: 200, flushIntervalMs: 60_000, maxQueued: 1_000 });
    let recorded = 0;
    for (const queued of [1, 3, 150, 199, 200, 201, 457, 77]) {
      for (let i = 0; i < queued; i++) ledger.record(row({ requestId: `req_${recorded++}` }));
      await ledger.flush();
    }
    const [count] = await db.query<{ n: number; d: number }>(
      'SELECT COUNT(*) AS n, COUNT(DISTINCT request_id) AS d FROM usage_ledger',
    );
    expect(count).toEqual({ n: recorded, d: recorded });
    expect(ledger.written).toBe(recorded);
    // 150 = 128 + 16 + 4 + 2, 457 = 200 + 200 + 32 + 16 + 8 + 1 ...: every INSERT has 1, 2, 4, ..., 128 or 200 rows.
    const sizes = [...shapes.values()].map((list) => list[0] ?? 0).sort((a, b) => a - b);
    expect(sizes).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 200]);
    for (const list of shapes.values()) expect(new Set(list).size).toBe(1);
    await ledger.close();
  });

  it('writes queued rows in batches and sums them by group and time range', async () => {
    const ledger = new UsageLedger(db, { batchSize: 2, flushIntervalMs: 60_000, maxQueued: 10 });
    ledger.record(row());
    ledger.record(
      row({
        requestId: 'req_2',
        keyId: 'key_b',
        dialect: 'anthropic-messages',
        inputTokens: 7,
        status: 429,
        outputTokens: 0,
        costUsd: 0,
      }),
    );
    ledger.record(row({ requestId: 'req_3', tsMs: Date.UTC(2026, 0, 2, 1), tokensEstimated: true }));
    expect(ledger.queued).toBeGreaterThanOrEqual(1); // a full batch went at once; the rest waits
    await ledger.close();
    expect(ledger.written).toBe(3);
    expect(await queryUsage(db, { groupBy: [] })).toEqual([
      {
        requests: 3,
        input_tokens: 17,
        output_tokens: 20,
        cached_tokens: 3,
        reasoning_tokens: 0,
        errors: 1,
        estimated_requests: 1,
        cost_usd: 0.5,
      },
    ]);
    // One request per key and day: key_a's 5 + 10 tokens on two days (the second estimated), key_b's refused one.
    const single = { requests: 1, cached_tokens: 1, reasoning_tokens: 0 };
    const keyA = { ...single, key: 'key_a', input_tokens: 5, output_tokens: 10, errors: 0, cost_usd: 0.25 };
    expect(await queryUsage(db, { groupBy: ['key', 'day'] })).toEqual([
      { ...keyA, day: '2026-01-01', estimated_requests: 0 },
      { ...keyA, day: '2026-01-02', estimated_requests: 1 },
      {
        ...single,
        key: 'key_b',
        day: '2026-01-01',
        input_tokens: 7,
        output_tokens: 0,
        errors: 1,
        estimated_requests: 0,
        cost_usd: 0,
      },
    ]);
    expect(await queryUsage(db, { groupBy: ['model'], fromMs: Date.UTC(2026, 0, 2) })).toMatchObject([
      { model: 'm', requests: 1 },
    ]);
    expect(await usedSince(db, 'key_a', Date.UTC(2026, 0, 1, 12))).toEqual({ tokens: 15, costUsd: 0.25 });
  });

  it('writes rows queued after a flush of an empty queue (an idle timer never wedges the writer)', async () => {
    const ledger = new UsageLedger(db, { batchSize: 10, flushIntervalMs: 60_000, maxQueued: 100 });
    await ledger.flush();
    ledger.record(row());
    await ledger.flush();
    expect(ledger.written).toBe(1);
    ledger.record(row({ requestId: 'req_2' }));
    await ledger.flush();
    expect(ledger.written).toBe(2);
    await ledger.close();
  });

  it('deletes rows older than maxAgeMs', async () => {
    const ledger = new UsageLedger(db, { batchSize: 10, flushIntervalMs: 60_000, maxQueued: 100 });
    ledger.record(row({ tsMs: 1_000 }));
    ledger.record(row({ tsMs: 9_000 }));
    await ledger.flush();
    expect(await ledger.prune(5_000, 10_000)).toBe(1);
    expect((await queryUsage(db, { groupBy: [] }))[0]!.requests).toBe(1);
    await ledger.close();
  });

  it('keeps rows while the database is down, writes them once it is back, and counts drops past maxQueued', async () => {
    const database = flaky(db);
    const errors: unknown[] = [];
    const ledger = new UsageLedger(database, {
      batchSize: 2,
      flushIntervalMs: 60_000,
      maxQueued: 4,
      onWriteError: (error) => errors.push(error),
    });
    database.down = true;
    for (let i = 0; i < 6; i++) ledger.record(row({ requestId: `req_${i}` }));
    await ledger.flush();
    expect(errors.length).toBeGreaterThan(0);
    expect(ledger.queued).toBe(4);
    expect(ledger.dropped).toBe(2);
    database.down = false;
    await ledger.flush();
    expect(ledger.queued).toBe(0);
    expect((await queryUsage(db, { groupBy: [] }))[0]!.requests).toBe(4);
    await ledger.close();
  });

  it('counts the rows still queued when the database stays down past the shutdown deadline as dropped', async () => {
    const database = flaky(db);
    const ledger = new UsageLedger(database, { batchSize: 2, flushIntervalMs: 60_000, maxQueued: 10 });
    database.down = true;
    ledger.record(row());
    await ledger.close(300);
    expect(ledger.dropped).toBe(1);
    ledger.record(row());
    expect(ledger.dropped).toBe(2); // closed: takes no more rows
  });
});
