import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeResponsesRequest, encodeResponsesResponse, storedResponseOf } from '@iop/dialects';
import Database from 'better-sqlite3';
import { ownerOfKey } from '../../../src/http/auth.js';
import {
  MemoryResponseStore,
  SqliteResponseStore,
  defaultDataDir,
  keepResponse,
  pageInputItems,
  type ResponseStore,
  type RetentionOptions,
  type StoredResponse,
} from '../../../src/responses-store/index.js';

function record(id: string, itemCount = 3): StoredResponse {
  const request = decodeResponsesRequest({
    model: 'm',
    input: Array.from({ length: itemCount }, (_, i) => ({ id: `msg_${id}_${i}`, role: 'user', content: `turn ${i}` })),
  });
  const response = encodeResponsesResponse(
    [
      { type: 'text-delta', text: `answer ${id}` },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ],
    { requestId: 'r', model: 'm', request, createdAt: 1764500000 },
  );
  return { ...storedResponseOf(request, response)!, id };
}

/** Owners as the edge derives them: SHA-256 hex of a client key; '' for an open edge. */
const ALICE = ownerOfKey('sk-alice');
const BOB = ownerOfKey('sk-bob');
const OPEN = '';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const IMPLEMENTATIONS: [string, (options: RetentionOptions) => ResponseStore][] = [
  ['memory', (options) => new MemoryResponseStore(options)],
  [
    'sqlite',
    (options) => {
      const dir = mkdtempSync(join(tmpdir(), 'iop-store-'));
      dirs.push(dir);
      return new SqliteResponseStore({ ...options, dataDir: dir, pruneIntervalMs: 0, pruneEveryPuts: 1 });
    },
  ],
];

describe.each(IMPLEMENTATIONS)('%s response store', (_name, open) => {
  it('puts, gets (round trip of the whole record), deletes', async () => {
    const store = open({});
    const kept = record('resp_a');
    await store.put(kept, ALICE);
    expect(await store.get('resp_a', ALICE)).toEqual(kept);
    expect(await store.get('resp_missing', ALICE)).toBeUndefined();
    expect(await store.delete('resp_a', ALICE)).toBe(true);
    expect(await store.delete('resp_a', ALICE)).toBe(false);
    expect(await store.get('resp_a', ALICE)).toBeUndefined();
    await store.close();
  });

  it('pages input items with after / limit / order (default newest first)', async () => {
    const store = open({});
    await store.put(record('resp_p', 5), ALICE);
    const first = await store.inputItems('resp_p', ALICE, { limit: 2 });
    expect(first).toMatchObject({ object: 'list', first_id: 'msg_resp_p_4', last_id: 'msg_resp_p_3', has_more: true });
    const next = await store.inputItems('resp_p', ALICE, { limit: 2, after: first!.last_id! });
    expect(next!.data.map((item) => item.id)).toEqual(['msg_resp_p_2', 'msg_resp_p_1']);
    const ascending = await store.inputItems('resp_p', ALICE, { order: 'asc', after: 'msg_resp_p_2' });
    expect(ascending).toMatchObject({ data: [{ id: 'msg_resp_p_3' }, { id: 'msg_resp_p_4' }], has_more: false });
    expect(await store.inputItems('resp_nope', ALICE)).toBeUndefined();
    await store.close();
  });

  it('forgets records past maxAgeMs and the oldest beyond maxRows', async () => {
    let nowMs = 1_000_000;
    const store = open({ maxAgeMs: 60_000, maxRows: 2, now: () => nowMs });
    await store.put(record('resp_1'), OPEN);
    nowMs += 61_000;
    expect(await store.get('resp_1', OPEN)).toBeUndefined();
    await store.put(record('resp_2'), OPEN);
    nowMs += 1;
    await store.put(record('resp_3'), OPEN);
    nowMs += 1;
    await store.put(record('resp_4'), OPEN);
    expect(await store.get('resp_2', OPEN)).toBeUndefined();
    expect((await store.get('resp_3', OPEN))?.id).toBe('resp_3');
    expect((await store.get('resp_4', OPEN))?.id).toBe('resp_4');
    await store.close();
  });

  it('keepResponse stores a record and keeps nothing for store:false', async () => {
    const store = open({});
    expect(await keepResponse(store, record('resp_k'), ALICE)).toBe(true);
    expect(await store.get('resp_k', ALICE)).toBeDefined();
    expect(await store.get('resp_k', BOB)).toBeUndefined();
    const request = decodeResponsesRequest({ model: 'm', input: 'x', store: false });
    const response = encodeResponsesResponse([{ type: 'finish', reason: 'stop', raw: 'stop' }], {
      requestId: 'r',
      model: 'm',
      request,
      createdAt: 1,
    });
    expect(await keepResponse(store, storedResponseOf(request, response), ALICE)).toBe(false);
    expect(await store.get(response.id, ALICE)).toBeUndefined();
    await store.close();
  });

  it("scopes records to their owner: another owner's get, inputItems and delete answer as for an unknown id", async () => {
    const store = open({});
    const alices = record('resp_alice');
    await store.put(alices, ALICE);
    await store.put(record('resp_open'), OPEN);
    expect(await store.get('resp_alice', BOB)).toBeUndefined();
    expect(await store.get('resp_alice', OPEN)).toBeUndefined();
    expect(await store.inputItems('resp_alice', BOB)).toBeUndefined();
    expect(await store.delete('resp_alice', BOB)).toBe(false);
    // Bob's failed delete removed nothing: Alice still has the whole record.
    expect(await store.get('resp_alice', ALICE)).toEqual(alices);
    expect((await store.inputItems('resp_alice', ALICE))?.data.map((item) => item.id)).toEqual([
      'msg_resp_alice_2',
      'msg_resp_alice_1',
      'msg_resp_alice_0',
    ]);
    // An open edge's record ('') is not readable with a key, and a key's record not without one.
    expect(await store.get('resp_open', ALICE)).toBeUndefined();
    expect((await store.get('resp_open', OPEN))?.id).toBe('resp_open');
    expect(await store.delete('resp_alice', ALICE)).toBe(true);
    expect(await store.get('resp_alice', ALICE)).toBeUndefined();
    await store.close();
  });
});

describe('SQLite response store on disk', () => {
  it('persists across reopen in the data directory, in WAL mode', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iop-store-'));
    dirs.push(dir);
    const dataDir = join(dir, 'nested');
    const first = new SqliteResponseStore({ dataDir });
    await first.put(record('resp_disk'), ALICE);
    expect(existsSync(join(dataDir, 'responses.sqlite-wal'))).toBe(true);
    await first.close();
    const second = new SqliteResponseStore({ dataDir });
    expect((await second.get('resp_disk', ALICE))?.response.output_text).toBe('answer resp_disk');
    expect(await second.get('resp_disk', BOB)).toBeUndefined();
    await second.close();
  });

  it("migrates a database file from before owners: adds the owner column, old rows belong to the open edge ('')", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iop-store-'));
    dirs.push(dir);
    const old = record('resp_old');
    // The schema and a row exactly as the store wrote them before owners existed.
    const legacy = new Database(join(dir, 'responses.sqlite'));
    legacy.pragma('journal_mode = WAL');
    legacy.exec(
      'CREATE TABLE responses (id TEXT PRIMARY KEY, stored_at_ms INTEGER NOT NULL, record TEXT NOT NULL); CREATE INDEX responses_stored_at ON responses (stored_at_ms);',
    );
    legacy
      .prepare('INSERT INTO responses (id, stored_at_ms, record) VALUES (?, ?, ?)')
      .run('resp_old', Date.now(), JSON.stringify(old));
    legacy.close();

    const store = new SqliteResponseStore({ dataDir: dir, pruneIntervalMs: 0 });
    expect(await store.get('resp_old', ALICE)).toBeUndefined();
    expect(await store.delete('resp_old', ALICE)).toBe(false);
    expect(await store.get('resp_old', OPEN)).toEqual(old);
    await store.put(record('resp_new'), ALICE);
    expect((await store.get('resp_new', ALICE))?.id).toBe('resp_new');
    await store.close();

    const check = new Database(join(dir, 'responses.sqlite'), { readonly: true });
    const columns = check
      .prepare<[], { name: string; type: string; notnull: number; dflt_value: string }>(
        'SELECT name, type, "notnull", dflt_value FROM pragma_table_info(\'responses\')',
      )
      .all();
    expect(columns.find((column) => column.name === 'owner')).toEqual({
      name: 'owner',
      type: 'TEXT',
      notnull: 1,
      dflt_value: "''",
    });
    expect(check.prepare('SELECT id, owner FROM responses ORDER BY id').all()).toEqual([
      { id: 'resp_new', owner: ALICE },
      { id: 'resp_old', owner: '' },
    ]);
    check.close();

    // Opening a migrated file again leaves it as it is.
    const reopened = new SqliteResponseStore({ dataDir: dir, pruneIntervalMs: 0 });
    expect((await reopened.get('resp_new', ALICE))?.id).toBe('resp_new');
    await reopened.close();
  });

  it('reads IOP_DATA_DIR, default ./.iop-data, and validates its limits', () => {
    expect(defaultDataDir({ IOP_DATA_DIR: '/var/lib/iop' })).toBe('/var/lib/iop');
    expect(defaultDataDir({})).toBe('./.iop-data');
    expect(() => new SqliteResponseStore({ dataDir: ':memory:', maxRows: 0 })).toThrow(
      'maxRows must be an integer >= 1, got 0',
    );
    expect(() => pageInputItems([], { limit: 101 })).toThrow('limit must be an integer between 1 and 100, got 101');
  });
});
