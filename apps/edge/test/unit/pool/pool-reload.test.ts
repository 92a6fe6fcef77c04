import { ConfigError } from '../../../src/config-error.js';
import { parsePoolConfig } from '../../../src/pool/pool-config.js';
import { compactChanges, diffPoolConfig } from '../../../src/pool/pool-reload.js';
import type { ProviderPool } from '../../../src/pool/provider-pool.js';
import { directConfig as direct, fakeStart, makePool, trackPools } from './fixtures.js';

const track = trackPools();

/** Prepares and applies `raw` as the new pool config. */
function reload(pool: ProviderPool, raw: Record<string, unknown>) {
  return pool.applyReload(pool.prepareReload(parsePoolConfig(raw)));
}

describe('diffPoolConfig', () => {
  it('names added, removed and changed groups, aliases, direct providers and settings', () => {
    const before = parsePoolConfig({
      modelGroups: [
        { name: 'a', aliases: ['a1', 'moved'], targets: [{ model: 'm' }] },
        { name: 'b', targets: [{ model: 'm' }] },
        { name: 'c', targets: [{ model: 'm' }] },
      ],
      directProviders: [direct('d1', ['m']), direct('d2', ['m'])],
    });
    const after = parsePoolConfig({
      modelGroups: [
        { name: 'a', aliases: ['a2'], targets: [{ model: 'm' }] },
        { name: 'b', aliases: ['moved'], targets: [{ model: 'm' }] },
        { name: 'c', targets: [{ model: 'm', weight: 3 }] },
        { name: 'd', targets: [{ model: 'n' }] },
      ],
      directProviders: [direct('d1', ['m'], { maxConcurrency: 2 }), direct('d3', ['n'])],
      outlier: { consecutiveFailures: 2 },
    });
    expect(diffPoolConfig(before, after)).toEqual({
      groupsAdded: ['d'],
      groupsRemoved: [],
      groupsChanged: ['b', 'c'],
      aliasesAdded: ['a2'],
      aliasesRemoved: ['a1'],
      directAdded: ['d3'],
      directRemoved: ['d2'],
      directChanged: ['d1'],
      settings: ['outlier'],
    });
    expect(compactChanges(diffPoolConfig(after, before))).toEqual({
      groupsRemoved: ['d'],
      groupsChanged: ['a', 'c'],
      aliasesAdded: ['a1'],
      aliasesRemoved: ['a2'],
      directAdded: ['d2'],
      directRemoved: ['d3'],
      directChanged: ['d1'],
      settings: ['outlier'],
    });
    expect(compactChanges(diffPoolConfig(before, before))).toEqual({});
  });
});

describe('ProviderPool reload', () => {
  it('applies a new alias and group at once; a removed group name is a 404 model_not_found', async () => {
    const { pool } = track(
      makePool({
        modelGroups: [{ name: 'old', targets: [{ model: 'm' }] }],
        directProviders: [direct('d1', ['m']), direct('d2', ['n'])],
      }),
    );
    expect(pool.resolve('old').name).toBe('old');
    const changes = reload(pool, {
      modelGroups: [{ name: 'new', aliases: ['fast'], targets: [{ model: 'n' }] }],
      directProviders: [direct('d1', ['m']), direct('d2', ['n'])],
    });
    expect(changes).toMatchObject({ groupsAdded: ['new'], groupsRemoved: ['old'], aliasesAdded: ['fast'] });
    expect(pool.pick(pool.resolve('fast'))).toMatchObject({ provider: { id: 'd2' }, model: 'n' });
    await expect(pool.acquire(pool.resolve('old'), {}, fakeStart)).rejects.toMatchObject({
      code: 'model_not_found',
      status: 404,
    });
    expect(pool.snapshot().groups.map((group) => group.name)).toEqual(['new']);
  });

  it('refuses an invalid pool (alias clash, fallback to an unknown group) with a ConfigError and keeps the running one', () => {
    const { pool } = track(
      makePool({
        modelGroups: [{ name: 'g', aliases: ['x'], targets: [{ model: 'm' }] }],
        directProviders: [direct('d1', ['m'])],
      }),
    );
    const clash = {
      modelGroups: [
        { name: 'g', targets: [{ model: 'm' }] },
        { name: 'h', aliases: ['g'], targets: [{ model: 'm' }] },
      ],
    };
    expect(() => pool.prepareReload(clash as never)).toThrow(ConfigError);
    expect(() => pool.prepareReload(clash as never)).toThrow(
      'modelGroups[1].aliases[0] `g` is already used by modelGroups[0]',
    );
    expect(() =>
      pool.prepareReload({ modelGroups: [{ name: 'g', targets: [{ model: 'm' }], fallbacks: ['nope'] }] } as never),
    ).toThrow('modelGroups[0].fallbacks[0] `nope` is not a model group name');
    expect(pool.resolve('x').name).toBe('g');
    expect(pool.direct.map((provider) => provider.id)).toEqual(['d1']);
  });

  it('refuses a prepared reload once another one was applied', () => {
    const { pool } = track(makePool({}));
    const first = pool.prepareReload(parsePoolConfig({ modelGroups: [{ name: 'a', targets: [{ model: 'm' }] }] }));
    const second = pool.prepareReload(parsePoolConfig({ modelGroups: [{ name: 'b', targets: [{ model: 'm' }] }] }));
    pool.applyReload(first);
    expect(() => pool.applyReload(second)).toThrow('no longer in service');
    pool.discardReload(second);
    expect(pool.resolver.names()).toEqual(['a']);
  });

  it('keeps unchanged direct providers (same instance, same load), retires removed and replaced ones', async () => {
    const { pool } = track(
      makePool({ directProviders: [direct('keep', ['m']), direct('gone', ['m']), direct('edit', ['m'])] }),
    );
    const [keep, gone, edit] = pool.direct;
    const running = await pool.acquire(pool.resolve('m'), { exclude: new Set(['keep', 'edit']) }, fakeStart);
    expect(running.pick.provider).toBe(gone);
    const changes = reload(pool, {
      directProviders: [direct('keep', ['m']), direct('edit', ['m'], { maxConcurrency: 1 }), direct('added', ['m'])],
    });
    expect(changes).toMatchObject({ directAdded: ['added'], directRemoved: ['gone'], directChanged: ['edit'] });
    expect(pool.direct[0]).toBe(keep);
    expect(pool.direct[1]).not.toBe(edit);
    expect(pool.direct[1]!.maxConcurrency).toBe(1);
    expect(gone!.accepting).toBe(false);
    expect(edit!.accepting).toBe(false);
    // The run in flight on the removed provider goes on; nothing new goes there.
    expect(running.run.isFinished).toBe(false);
    expect(gone!.inFlight).toBe(1);
    const ids = new Set<string>();
    for (let i = 0; i < 30; i++) ids.add(pool.pick(pool.resolve('m'))!.provider.id);
    expect([...ids].sort()).toEqual(['added', 'edit', 'keep']);
    expect(
      pool
        .snapshot()
        .groups[0]!.providers.map((provider) => provider.id)
        .sort(),
    ).toEqual(['added', 'edit', 'keep']);
    running.run.cancel('done');
  });

  it('keeps the outlier state of a group that stays and forgets removed providers', () => {
    const { pool } = track(
      makePool({
        outlier: { consecutiveFailures: 1, maxEjectedPercent: 100 },
        modelGroups: [{ name: 'g', targets: [{ model: 'm' }] }],
        directProviders: [direct('a', ['m']), direct('b', ['m']), direct('c', ['m'])],
      }),
    );
    const group = pool.resolve('g');
    pool.pick(group);
    pool.report(group, { providerId: 'a', probe: false }, 'server_error');
    pool.report(group, { providerId: 'b', probe: false }, 'server_error');
    const states = () =>
      Object.fromEntries(pool.snapshot().groups[0]!.providers.map((provider) => [provider.id, provider.outlier.state]));
    expect(states()).toEqual({ a: 'ejected', b: 'ejected', c: 'healthy' });
    reload(pool, {
      outlier: { consecutiveFailures: 1, maxEjectedPercent: 100 },
      modelGroups: [{ name: 'g', aliases: ['g2'], targets: [{ model: 'm' }] }],
      directProviders: [direct('a', ['m']), direct('c', ['m'])],
    });
    expect(states()).toEqual({ a: 'ejected', c: 'healthy' });
    for (let i = 0; i < 10; i++) expect(pool.pick(pool.resolve('g2'))!.provider.id).toBe('c');
  });

  it('routes a queued waiter of a group that stays by the new definition', async () => {
    const { pool } = track(
      makePool({
        modelGroups: [{ name: 'g', targets: [{ model: 'm' }], queue: { maxQueued: 4, maxWaitMs: 60_000 } }],
        directProviders: [direct('a', ['m'], { maxConcurrency: 1 })],
      }),
    );
    const group = pool.resolve('g');
    const first = await pool.acquire(group, {}, fakeStart);
    const waiting = pool.acquire(group, {}, fakeStart);
    expect(pool.queue.size('g')).toBe(1);
    reload(pool, {
      modelGroups: [{ name: 'g', targets: [{ model: 'n' }], queue: { maxQueued: 4, maxWaitMs: 60_000 } }],
      directProviders: [direct('a', ['m'], { maxConcurrency: 1 }), direct('b', ['n'])],
    });
    await expect(waiting).resolves.toMatchObject({
      pick: { provider: { id: 'b' }, model: 'n' },
      group: { name: 'g', targets: [{ model: 'n' }] },
    });
    expect(first.run.isFinished).toBe(false);
  });

  it('answers queued waiters of a removed group: resolved again by name (an alias now), else 404', async () => {
    const { pool } = track(
      makePool({
        modelGroups: [
          { name: 'g', targets: [{ model: 'm' }] },
          { name: 'k', targets: [{ model: 'm' }] },
        ],
        directProviders: [direct('a', ['m'], { maxConcurrency: 1 })],
      }),
    );
    await pool.acquire(pool.resolve('g'), {}, fakeStart);
    const toAlias = pool.acquire(pool.resolve('g'), {}, fakeStart);
    const toNothing = pool.acquire(pool.resolve('k'), {}, fakeStart);
    expect(pool.queue.stats().queued).toEqual({ g: 1, k: 1 });
    reload(pool, {
      modelGroups: [{ name: 'h', aliases: ['g'], targets: [{ model: 'n' }] }],
      directProviders: [direct('a', ['m'], { maxConcurrency: 1 }), direct('b', ['n'])],
    });
    await expect(toAlias).resolves.toMatchObject({ pick: { provider: { id: 'b' } }, group: { name: 'h' } });
    await expect(toNothing).rejects.toMatchObject({ code: 'model_not_found', status: 404 });
    expect(pool.queue.stats().queued).toEqual({});
  });

  it('applies new retry settings and keeps the retry budget window', () => {
    const { pool } = track(makePool({ retry: { maxAttempts: 3, budgetRatio: 0, minRetriesPerSecond: 0.1 } }));
    const budget = pool.retry.budget;
    expect(budget.tryRetry()).toBe(true);
    expect(budget.tryRetry()).toBe(false);
    reload(pool, { retry: { maxAttempts: 1, budgetRatio: 0, minRetriesPerSecond: 0.2 } });
    expect(pool.retry.budget).toBe(budget);
    // Window reserve 2 now, 1 already spent in the window.
    expect(budget.snapshot()).toEqual({ requests: 0, retries: 1, available: 1 });
    const attempts = pool.begin();
    attempts.record('a');
    expect(pool.retry.decide(attempts, { kind: 'connect_failed', detail: 'refused' })).toMatchObject({
      action: 'fail',
      reason: expect.stringContaining('after 1 attempts'),
    });
  });
});
