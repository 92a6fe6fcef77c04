import { SqliteDatabase } from '../../../src/storage/sql-database.js';
import { migrate } from '../../../src/storage/migrations.js';
import { KeyStore } from '../../../src/keys/key-store.js';
import { KeyDirectory } from '../../../src/keys/key-directory.js';
import { hashKey, modelAllowed, unusableReason } from '../../../src/keys/api-key.js';
import { recordsOfConfigKeys } from '../../../src/keys/config-keys.js';
import { createLogger } from '../../../src/logger.js';

describe('KeyStore (SQLite)', () => {
  let db: SqliteDatabase;
  let store: KeyStore;
  beforeEach(async () => {
    db = new SqliteDatabase(':memory:');
    await migrate(db);
    store = new KeyStore(db);
  });
  afterEach(() => db.close());

  it('stores only the hash of a created key and finds it by that hash', async () => {
    const { key, record } = await store.create({
      name: 'ci',
      owner: 'team-a',
      models: ['qwen*'],
      limits: { requestsPerMinute: 5 },
    });
    expect(key).toMatch(/^sk-iop-[A-Za-z0-9_-]{43}$/);
    const rows = await db.query<Record<string, unknown>>('SELECT * FROM api_keys');
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(rows[0]!.key_hash).toBe(hashKey(key));
    expect(await store.byHash(hashKey(key))).toEqual(record);
    expect(record).toMatchObject({
      name: 'ci',
      owner: 'team-a',
      models: ['qwen*'],
      limits: { requestsPerMinute: 5 },
      source: 'admin',
    });
  });

  it('updates, rotates (same id, new secret) and revokes', async () => {
    const { key, record } = await store.create({ name: 'ci' });
    expect((await store.update(record.id, { limits: { tokensPerMinute: 10 } }))?.limits).toEqual({
      tokensPerMinute: 10,
    });
    const rotated = (await store.rotate(record.id))!;
    expect(rotated.record.id).toBe(record.id);
    expect(await store.byHash(hashKey(key))).toBeUndefined();
    expect((await store.byHash(hashKey(rotated.key)))?.limits).toEqual({ tokensPerMinute: 10 });
    expect(await store.revoke(record.id)).toBe(true);
    const revoked = (await store.byId(record.id))!;
    expect(unusableReason(revoked, Date.now())).toBe('this API key has been revoked');
    expect(await store.rotate(record.id)).toBeUndefined();
    expect(await store.hasActiveKeys()).toBe(false);
  });

  it('KeyDirectory caches lookups for cacheTtlMs and forgets a hash on invalidate', async () => {
    let clock = 1_000;
    const directory = new KeyDirectory({
      store,
      cacheTtlMs: 2_000,
      failureMode: 'open',
      logger: createLogger('silent'),
      now: () => clock,
    });
    const { key, record } = await store.create({ name: 'ci' });
    expect((await directory.lookup(key))?.revokedAtMs).toBeUndefined();
    await store.revoke(record.id);
    expect((await directory.lookup(key))?.revokedAtMs).toBeUndefined(); // cached
    clock += 2_000;
    expect((await directory.lookup(key))?.revokedAtMs).toEqual(expect.any(Number));
    const other = await store.create({ name: 'other' });
    await directory.lookup(other.key);
    await store.revoke(other.record.id);
    directory.invalidate(hashKey(other.key));
    expect((await directory.lookup(other.key))?.revokedAtMs).toEqual(expect.any(Number));
  });
});

describe('key policy', () => {
  it('matches allowed models by name, group and glob', () => {
    expect(modelAllowed({}, ['anything'])).toBe(true);
    expect(modelAllowed({ models: ['qwen3-*'] }, ['qwen3-8b'])).toBe(true);
    expect(modelAllowed({ models: ['qwen3-*'] }, ['gpt-4o-mini', 'qwen3-8b'])).toBe(true); // an alias of the group
    expect(modelAllowed({ models: ['qwen3-?b'] }, ['qwen3-32b'])).toBe(false);
    expect(modelAllowed({ models: ['a.b'] }, ['axb'])).toBe(false);
  });

  it('reads config keys by key or hash and refuses repeats and bad expiry times', () => {
    const [byKey, byHash] = recordsOfConfigKeys([
      { id: 'ci', name: 'CI', key: 'sk-config-0001', expiresAt: '2030-01-01T00:00:00Z' },
      { id: 'ops', name: 'Ops', keyHash: hashKey('sk-config-0002') },
    ]);
    expect(byKey).toMatchObject({ id: 'ci', keyHash: hashKey('sk-config-0001'), expiresAtMs: Date.UTC(2030, 0, 1) });
    expect(JSON.stringify(byKey)).not.toContain('sk-config-0001');
    expect(byHash!.keyHash).toBe(hashKey('sk-config-0002'));
    expect(() =>
      recordsOfConfigKeys([
        { id: 'a', name: 'A', key: 'sk-config-0001' },
        { id: 'b', name: 'B', key: 'sk-config-0001' },
      ]),
    ).toThrow('repeats a key');
    expect(() => recordsOfConfigKeys([{ id: 'a', name: 'A', key: 'sk-config-0001', expiresAt: 'soon' }])).toThrow(
      'not an RFC 3339 time',
    );
    expect(unusableReason({ ...byKey!, expiresAtMs: 1000 }, 2000)).toBe(
      'this API key expired at 1970-01-01T00:00:01.000Z',
    );
  });
});
