import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openaiResponses } from '@iop/dialects';
import { MemoryResponseStore, SqliteResponseStore, defaultDataDir, keepResponse, pageInputItems, type ResponseStore, type RetentionOptions, type StoredResponse } from '../../../src/responses-store/index.js';

function record(id: string, itemCount = 3): StoredResponse {
  const request = openaiResponses.decodeResponsesRequest({
    model: 'm',
    input: Array.from({ length: itemCount }, (_, i) => ({ id: `msg_${id}_${i}`, role: 'user', content: `turn ${i}` })),
  });
  const response = openaiResponses.encodeResponsesResponse(
    [{ type: 'text-delta', text: `answer ${id}` }, { type: 'finish', reason: 'stop', raw: 'stop' }],
    { requestId: 'r', model: 'm', request, createdAt: 1764500000 },
  );
  return { ...openaiResponses.storedResponseOf(request, response)!, id };
}

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
    await store.put(kept);
    expect(await store.get('resp_a')).toEqual(kept);
    expect(await store.get('resp_missing')).toBeUndefined();
    expect(await store.delete('resp_a')).toBe(true);
    expect(await store.delete('resp_a')).toBe(false);
    expect(await store.get('resp_a')).toBeUndefined();
    await store.close();
  });

  it('pages input items with after / limit / order (default newest first)', async () => {
    const store = open({});
    await store.put(record('resp_p', 5));
    const first = await store.inputItems('resp_p', { limit: 2 });
    expect(first).toMatchObject({ object: 'list', first_id: 'msg_resp_p_4', last_id: 'msg_resp_p_3', has_more: true });
    const next = await store.inputItems('resp_p', { limit: 2, after: first!.last_id! });
    expect(next!.data.map((item) => item.id)).toEqual(['msg_resp_p_2', 'msg_resp_p_1']);
    const ascending = await store.inputItems('resp_p', { order: 'asc', after: 'msg_resp_p_2' });
    expect(ascending).toMatchObject({ data: [{ id: 'msg_resp_p_3' }, { id: 'msg_resp_p_4' }], has_more: false });
    expect(await store.inputItems('resp_nope')).toBeUndefined();
    await store.close();
  });

  it('forgets records past maxAgeMs and the oldest beyond maxRows', async () => {
    let nowMs = 1_000_000;
    const store = open({ maxAgeMs: 60_000, maxRows: 2, now: () => nowMs });
    await store.put(record('resp_1'));
    nowMs += 61_000;
    expect(await store.get('resp_1')).toBeUndefined();
    await store.put(record('resp_2'));
    nowMs += 1;
    await store.put(record('resp_3'));
    nowMs += 1;
    await store.put(record('resp_4'));
    expect(await store.get('resp_2')).toBeUndefined();
    expect((await store.get('resp_3'))?.id).toBe('resp_3');
    expect((await store.get('resp_4'))?.id).toBe('resp_4');
    await store.close();
  });

  it('keepResponse stores a record and keeps nothing for store:false', async () => {
    const store = open({});
    expect(await keepResponse(store, record('resp_k'))).toBe(true);
    expect(await store.get('resp_k')).toBeDefined();
    const request = openaiResponses.decodeResponsesRequest({ model: 'm', input: 'x', store: false });
    const response = openaiResponses.encodeResponsesResponse([{ type: 'finish', reason: 'stop', raw: 'stop' }], { requestId: 'r', model: 'm', request, createdAt: 1 });
    expect(await keepResponse(store, openaiResponses.storedResponseOf(request, response))).toBe(false);
    expect(await store.get(response.id)).toBeUndefined();
    await store.close();
  });
});

describe('SQLite response store on disk', () => {
  it('persists across reopen in the data directory, in WAL mode', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iop-store-'));
    dirs.push(dir);
    const dataDir = join(dir, 'nested');
    const first = new SqliteResponseStore({ dataDir });
    await first.put(record('resp_disk'));
    expect(existsSync(join(dataDir, 'responses.sqlite-wal'))).toBe(true);
    await first.close();
    const second = new SqliteResponseStore({ dataDir });
    expect((await second.get('resp_disk'))?.response.output_text).toBe('answer resp_disk');
    await second.close();
  });

  it('reads IOP_DATA_DIR, default ./.iop-data, and validates its limits', () => {
    expect(defaultDataDir({ IOP_DATA_DIR: '/var/lib/iop' })).toBe('/var/lib/iop');
    expect(defaultDataDir({})).toBe('./.iop-data');
    expect(() => new SqliteResponseStore({ dataDir: ':memory:', maxRows: 0 })).toThrow('maxRows must be an integer >= 1, got 0');
    expect(() => pageInputItems([], { limit: 101 })).toThrow('limit must be an integer between 1 and 100, got 101');
  });
});
