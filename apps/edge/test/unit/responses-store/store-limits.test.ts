import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeResponsesRequest, encodeResponsesResponse, storedResponseOf } from '@iop/dialects';
import Database from 'better-sqlite3';
import { IopError } from '@iop/core';
import {
  MemoryResponseStore,
  SqliteResponseStore,
  resolveRetention,
  type ResponseStore,
  type RetentionOptions,
  type StoredResponse,
} from '../../../src/responses-store/index.js';

const KiB = 1024;

const made = new Map<string, StoredResponse>();

/**
 * A real stored record (through the Responses dialect) whose input is `inputBytes` of text; the same object for the
 * same arguments.
 */
function record(id: string, inputBytes: number): StoredResponse {
  const key = `${id}:${inputBytes}`;
  const known = made.get(key);
  if (known !== undefined) return known;
  const request = decodeResponsesRequest({ model: 'm', input: 'q'.repeat(inputBytes) });
  const response = encodeResponsesResponse(
    [
      { type: 'text-delta', text: `answer ${id}` },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ],
    { requestId: 'r', model: 'm', request, createdAt: 1764500000 },
  );
  const stored = { ...storedResponseOf(request, response)!, id };
  made.set(key, stored);
  return stored;
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
      const dir = mkdtempSync(join(tmpdir(), 'iop-limits-'));
      dirs.push(dir);
      return new SqliteResponseStore({ ...options, dataDir: dir, pruneIntervalMs: 0 });
    },
  ],
];

describe.each(IMPLEMENTATIONS)('%s store byte limits', (_name, make) => {
  it('refuses a record over maxResponseBytes with request_too_large (413), keeping nothing', async () => {
    const store = make({ maxResponseBytes: 64 * KiB, maxTotalBytes: 1024 * KiB });
    const error = await store.put(record('resp_big', 80 * KiB), '').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IopError);
    expect((error as IopError).status).toBe(413);
    expect((error as IopError).message).toContain('the limit is 65536 bytes per stored response');
    expect(await store.get('resp_big', '')).toBeUndefined();
    // The input is stored once: a 40 KiB input fits a 64 KiB limit (twice it would not).
    await store.put(record('resp_fits', 40 * KiB), '');
    expect((await store.get('resp_fits', ''))?.inputItems).toEqual(record('resp_fits', 40 * KiB).inputItems);
    await store.close();
  });

  it('drops the oldest records beyond maxTotalBytes', async () => {
    const store = make({ maxResponseBytes: 64 * KiB, maxTotalBytes: 100 * KiB });
    for (let index = 0; index < 5; index++) await store.put(record(`resp_${index}`, 30 * KiB), '');
    const kept = await Promise.all(
      [0, 1, 2, 3, 4].map(async (index) => (await store.get(`resp_${index}`, '')) !== undefined),
    );
    expect(kept).toEqual([false, false, true, true, true]);
    // Replacing a record counts its new size only.
    await store.put(record('resp_4', 30 * KiB), '');
    expect(await store.get('resp_2', '')).toBeDefined();
    await store.close();
  });
});

describe('sqlite store sizes', () => {
  it('fills the bytes column of a file from before it, and counts those rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iop-legacy-'));
    dirs.push(dir);
    const legacy = new Database(join(dir, 'responses.sqlite'));
    legacy.exec(
      "CREATE TABLE responses (id TEXT PRIMARY KEY, stored_at_ms INTEGER NOT NULL, record TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '')",
    );
    const old = JSON.stringify(record('resp_old', 50 * KiB));
    legacy.prepare('INSERT INTO responses VALUES (?, ?, ?, ?)').run('resp_old', Date.now() - 1000, old, '');
    legacy.close();
    const store = new SqliteResponseStore({
      dataDir: dir,
      pruneIntervalMs: 0,
      maxResponseBytes: 64 * KiB,
      maxTotalBytes: 120 * KiB,
    });
    expect((await store.get('resp_old', ''))?.inputItems).toEqual(record('resp_old', 50 * KiB).inputItems);
    // 100 KiB of the old row (input twice) + 50 KiB new > 120 KiB: the old row goes.
    await store.put(record('resp_new', 50 * KiB), '');
    expect(await store.get('resp_old', '')).toBeUndefined();
    expect(await store.get('resp_new', '')).toBeDefined();
    await store.close();
  });
});

describe('resolveRetention', () => {
  it('refuses a per-response limit over the total limit', () => {
    expect(() => resolveRetention({ maxResponseBytes: 2048, maxTotalBytes: 1024 })).toThrow(
      'maxResponseBytes must be an integer from 1 to maxTotalBytes (1024), got 2048',
    );
  });
});
