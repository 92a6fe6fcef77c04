/**
 * The PostgreSQL Responses store against a real server (`IOP_TEST_PG_URL`; skipped without it):
 * the retention limits a shared store keeps, and the migration that gave rows their size.
 */
import { decodeResponsesRequest, encodeResponsesResponse, storedResponseOf } from '@iop/dialects';
import { PostgresDatabase } from '../../../src/storage/sql-database.js';
import { MIGRATIONS, migrate } from '../../../src/storage/migrations.js';
import { SqlResponseStore } from '../../../src/responses-store/sql-store.js';
import { encodeRecord } from '../../../src/responses-store/record-codec.js';
import type { StoredResponse } from '../../../src/responses-store/index.js';
import {
  describeWithSharedState,
  dropIsolation,
  isolation,
  PG_URL,
} from '../../../../../test/integration/shared-state-helpers';

/** A stored Response of `id` whose answer text is `size` characters long. */
function record(id: string, size: number): StoredResponse {
  const request = decodeResponsesRequest({
    model: 'm',
    input: [{ id: `msg_${id}`, role: 'user', content: 'hi' }],
  });
  const response = encodeResponsesResponse(
    [
      { type: 'text-delta', text: 'x'.repeat(size) },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ],
    { requestId: 'r', model: 'm', request, createdAt: 1764500000 },
  );
  return { ...storedResponseOf(request, response)!, id };
}

describeWithSharedState(
  'PostgreSQL response store',
  () => {
    const isolated = isolation('responses');
    let db: PostgresDatabase;
    beforeAll(async () => {
      db = new PostgresDatabase({ url: PG_URL, schema: isolated.schema });
      await migrate(db);
    });
    afterAll(async () => {
      await db.close();
      await dropIsolation(isolated, PG_URL, '');
    });
    beforeEach(async () => {
      await db.execute('DELETE FROM responses');
    });

    it('keeps the newest rows within maxTotalBytes at each prune, and at most maxRows', async () => {
      let nowMs = 1_000_000;
      const size = Buffer.byteLength(encodeRecord(record('resp_0', 10_000)));
      // Room for two records and a half: the third newest goes.
      const store = new SqlResponseStore(db, {
        maxTotalBytes: Math.floor(size * 2.5),
        maxResponseBytes: size,
        maxRows: 10,
        now: () => nowMs,
        pruneIntervalMs: 0,
        pruneEveryPuts: 1,
      });
      for (const id of ['resp_1', 'resp_2', 'resp_3', 'resp_4']) {
        await store.put(record(id, 10_000), '');
        await store.prune();
        nowMs += 1;
      }
      const rows = await db.query<{ id: string; bytes: string }>(
        'SELECT id, bytes FROM responses ORDER BY stored_at_ms',
      );
      expect(rows.map((row) => row.id)).toEqual(['resp_3', 'resp_4']);
      expect(rows.map((row) => Number(row.bytes))).toEqual([size, size]);
      expect(await store.get('resp_2', '')).toBeUndefined();
      expect((await store.get('resp_4', ''))?.id).toBe('resp_4');

      const small = new SqlResponseStore(db, { maxRows: 1, now: () => nowMs, pruneIntervalMs: 0 });
      await small.put(record('resp_5', 10), '');
      expect(await small.prune()).toBe(2);
      expect((await db.query<{ id: string }>('SELECT id FROM responses')).map((row) => row.id)).toEqual(['resp_5']);
      await store.close();
      await small.close();
    });

    it('migrates a table from before sizes: existing rows get the size of their record', async () => {
      const old = isolation('responses_v3');
      const before = new PostgresDatabase({ url: PG_URL, schema: old.schema });
      try {
        await migrate(
          before,
          MIGRATIONS.filter((migration) => migration.version <= 3),
        );
        const text = encodeRecord(record('resp_old', 100));
        await before.execute('INSERT INTO responses (id, owner, stored_at_ms, record) VALUES ($1, $2, $3, $4)', [
          'resp_old',
          '',
          Date.now(),
          text,
        ]);
        expect(await migrate(before)).toEqual(
          MIGRATIONS.map((migration) => migration.version).filter((version) => version > 3),
        );
        const [row] = await before.query<{ bytes: string }>('SELECT bytes FROM responses WHERE id = $1', ['resp_old']);
        expect(Number(row!.bytes)).toBe(Buffer.byteLength(text));
        expect((await new SqlResponseStore(before, { pruneIntervalMs: 0 }).get('resp_old', ''))?.id).toBe('resp_old');
      } finally {
        await before.close();
        await dropIsolation(old, PG_URL, '');
      }
    });
  },
  { pg: true },
);
