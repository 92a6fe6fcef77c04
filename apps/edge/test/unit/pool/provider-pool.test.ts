import { IopError, type InferenceRequest } from '@iop/core';
import { affinityKey, chatAffinityKey } from '../../../src/pool/prefix-affinity.js';
import { QueueRefusal } from '../../../src/pool/admission-queue.js';
import { AgentRegistry } from '../../../src/tunnel/agent-registry.js';
import { parsePoolConfig } from '../../../src/pool/pool-config.js';
import { ServedNames } from '../../../src/pool/served-names.js';
import { agentSession, directConfig as direct, fakeStart, makePool, trackPools } from './fixtures.js';

const track = trackPools();

describe('ProviderPool', () => {
  it('resolves aliases to their group, unknown names to the served model of that name', () => {
    const { pool } = track(
      makePool({
        modelGroups: [{ name: 'qwen', aliases: ['gpt-4o-mini'], targets: [{ model: 'Qwen/Qwen3-8B' }] }],
        directProviders: [direct('d1', ['Qwen/Qwen3-8B', 'other'])],
      }),
    );
    expect(pool.resolve('gpt-4o-mini').name).toBe('qwen');
    expect(pool.resolve('other')).toMatchObject({ name: 'other', targets: [{ model: 'other' }] });
    expect(pool.pick(pool.resolve('gpt-4o-mini'))).toMatchObject({ provider: { id: 'd1' }, model: 'Qwen/Qwen3-8B' });
  });

  it('refuses a model nothing serves with 404 model_not_found', async () => {
    const { pool } = track(makePool({}));
    await expect(pool.acquire(pool.resolve('nope'), {}, fakeStart)).rejects.toMatchObject({
      code: 'model_not_found',
      status: 404,
    });
    expect(pool.snapshot().groups).toEqual([]);
  });

  it('answers a known name without a connected provider with 503 no_capacity + Retry-After, an unknown one with 404', async () => {
    const registry = new AgentRegistry();
    const { pool } = track(
      makePool(
        { modelGroups: [{ name: 'qwen', aliases: ['gpt-4o-mini'], targets: [{ model: 'Qwen/Qwen3-8B' }] }] },
        { registry },
      ),
    );
    const session = agentSession('agent-1', ['Qwen/Qwen3-8B', 'llama']);
    registry.add(session);
    expect(pool.pick(pool.resolve('llama'))).toMatchObject({ provider: { id: 'agent-1' }, model: 'llama' });
    registry.remove(session); // the only agent restarts
    const unavailable = { code: 'no_capacity', status: 503, retryAfterSeconds: 1 };
    for (const name of ['llama', 'Qwen/Qwen3-8B', 'qwen', 'gpt-4o-mini']) {
      expect(pool.knows(name)).toBe(true);
      await expect(pool.acquire(pool.resolve(name), {}, fakeStart)).rejects.toMatchObject(unavailable);
    }
    expect(pool.knows('never-served')).toBe(false);
    await expect(pool.acquire(pool.resolve('never-served'), {}, fakeStart)).rejects.toMatchObject({
      code: 'model_not_found',
      status: 404,
      param: 'model',
    });
    // The agent is back: the same names are served again.
    registry.add(agentSession('agent-1', ['Qwen/Qwen3-8B', 'llama']));
    expect((await pool.acquire(pool.resolve('gpt-4o-mini'), {}, fakeStart)).pick).toMatchObject({
      provider: { id: 'agent-1' },
      model: 'Qwen/Qwen3-8B',
    });
  });

  it('within startupGraceMs of start answers any name no provider serves with 503 no_capacity, a 404 after it', async () => {
    const { pool, clock } = track(makePool({}, { startupGraceMs: 15_000 }));
    const early = await pool
      .acquire(pool.resolve('not-yet-registered'), {}, fakeStart)
      .catch((error: unknown) => error);
    expect(early).toMatchObject({ code: 'no_capacity', status: 503, retryAfterSeconds: 1 });
    clock.advance(15_000);
    await expect(pool.acquire(pool.resolve('not-yet-registered'), {}, fakeStart)).rejects.toMatchObject({
      code: 'model_not_found',
      status: 404,
    });
  });

  it('knows the served models of direct providers, also of one added by a reload', () => {
    const { pool } = track(makePool({ directProviders: [direct('d1', ['a'])] }));
    expect(pool.knows('a')).toBe(true);
    expect(pool.knows('b')).toBe(false);
    pool.applyReload(
      pool.prepareReload(parsePoolConfig({ directProviders: [direct('d1', ['a']), direct('d2', ['b'])] })),
    );
    expect(pool.knows('b')).toBe(true);
  });

  it('is not accepting once its only provider is ejected as an outlier (so no retry is attempted on it)', () => {
    const { pool, clock } = track(
      makePool({
        outlier: { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectedPercent: 100 },
        directProviders: [direct('a', ['m'])],
      }),
    );
    const group = pool.resolve('m');
    expect(pool.pick(group)!.provider.id).toBe('a'); // `a` becomes a member of the group's outlier detector
    expect(pool.accepting(group)).toBe(true);
    pool.report(group, { providerId: 'a', probe: false }, 'server_error');
    expect(pool.accepting(group)).toBe(true);
    expect(pool.canRoute(group, new Set(['a']))).toBe(false); // no OTHER provider: a retry goes to `a` itself
    pool.report(group, { providerId: 'a', probe: false }, 'server_error');
    expect(pool.accepting(group)).toBe(false);
    clock.advance(1000);
    expect(pool.accepting(group)).toBe(true); // its probe may go
  });

  it('routes only to providers carrying the target labels', () => {
    const { pool } = track(
      makePool({
        modelGroups: [{ name: 'g', targets: [{ model: 'm', agents: { labels: { gpu: 'l4' } } }] }],
        directProviders: [direct('a', ['m']), direct('b', ['m'], { labels: { gpu: 'l4' } })],
      }),
    );
    for (let i = 0; i < 20; i++) expect(pool.pick(pool.resolve('g'))!.provider.id).toBe('b');
  });

  it('queues when every provider is busy and serves the waiter when a slot frees; refuses over maxQueued with overloaded (QueueRefusal)', async () => {
    const { pool } = track(
      makePool({
        queue: { maxQueued: 1, maxWaitMs: 10_000 },
        directProviders: [direct('a', ['m'], { maxConcurrency: 1 })],
      }),
    );
    const group = pool.resolve('m');
    const first = await pool.acquire(group, {}, fakeStart);
    const waiting = pool.acquire(group, {}, fakeStart);
    expect(pool.snapshot().groups[0]!.queue).toEqual({ waiting: 1, maxQueued: 1, maxWaitMs: 10_000 });
    const refused = await pool.acquire(group, {}, fakeStart).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(QueueRefusal);
    expect(refused).toMatchObject({ code: 'overloaded', status: 429, reason: 'full', retryAfterSeconds: 1 });
    (first.run as ReturnType<typeof fakeStart>).end();
    pool.queue.notify('m');
    await expect(waiting).resolves.toMatchObject({ pick: { provider: { id: 'a' } } });
  });

  it('a retry (exclude non-empty: its provider failed) is served before first attempts already waiting, even with the queue full', async () => {
    const { pool } = track(
      makePool({
        queue: { maxQueued: 1, maxWaitMs: 10_000 },
        directProviders: [direct('a', ['m'], { maxConcurrency: 1 }), direct('b', ['m'], { maxConcurrency: 1 })],
      }),
    );
    const group = pool.resolve('m');
    const onA = await pool.acquire(group, { exclude: new Set(['b']) }, fakeStart);
    const onB = await pool.acquire(group, { exclude: new Set(['a']) }, fakeStart);
    const order: string[] = [];
    const firstAttempt = pool.acquire(group, {}, fakeStart).then(() => order.push('first attempt'));
    // b's run failed: its request is retried while the first attempt waits in a full queue.
    (onB.run as ReturnType<typeof fakeStart>).end();
    const retry = pool.acquire(group, { exclude: new Set(['b']) }, fakeStart).then((acquired) => {
      order.push('retry');
      return acquired;
    });
    // b's slot was free and a's was not: the retry took b's at once (exclude is set aside when no other provider has a
    // free slot).
    await expect(retry).resolves.toMatchObject({ pick: { provider: { id: 'b' } } });
    const retryOnA = pool.acquire(group, { exclude: new Set(['b']) }, fakeStart).then((acquired) => {
      order.push('second retry');
      return acquired;
    });
    expect(pool.queue.size('m')).toBe(2);
    (onA.run as ReturnType<typeof fakeStart>).end();
    pool.queue.notify('m');
    const second = await retryOnA;
    // The first attempt is served by the next slot that frees.
    (second.run as ReturnType<typeof fakeStart>).end();
    pool.queue.notify('m');
    await firstAttempt;
    expect(order).toEqual(['retry', 'second retry', 'first attempt']);
  });

  it('answers a waiting request with 503 no_capacity as soon as its last provider leaves or drains, not at the end of its wait', async () => {
    const registry = new AgentRegistry();
    const { pool } = track(makePool({ queue: { maxQueued: 4, maxWaitMs: 30_000 } }, { registry }));
    const agent = agentSession('agent-1', ['m'], 1);
    registry.add(agent);
    const group = pool.resolve('m');
    await pool.acquire(group, {}, fakeStart); // the agent's only slot
    const waiters = [pool.acquire(group, {}, fakeStart), pool.acquire(group, {}, fakeStart)].map((waiting) =>
      waiting.catch((error: unknown) => error),
    );
    expect(pool.queue.size('m')).toBe(2);
    registry.remove(agent); // the agent restarts: no clock advance, no queue timeout
    const unavailable = { code: 'no_capacity', status: 503, retryAfterSeconds: 1 };
    for (const answer of await Promise.all(waiters)) {
      expect(answer).toBeInstanceOf(IopError);
      expect(answer).not.toBeInstanceOf(QueueRefusal);
      expect(answer).toMatchObject(unavailable);
    }
    expect(pool.queue.size('m')).toBe(0);

    // Draining: the waiter is answered at the next notify (a run ending, the pool's 200 ms tick).
    const second = agentSession('agent-2', ['m'], 1);
    registry.add(second);
    const busy = await pool.acquire(group, {}, fakeStart);
    const waiting = pool.acquire(group, {}, fakeStart).catch((error: unknown) => error);
    second.draining = true;
    (busy.run as ReturnType<typeof fakeStart>).end();
    pool.queue.notify('m');
    await expect(waiting).resolves.toMatchObject(unavailable);
  });

  it('sends a request to a fallback group at once when its own providers are all busy', async () => {
    const { pool } = track(
      makePool({
        modelGroups: [
          { name: 'small', targets: [{ model: 's' }], fallbacks: ['big'] },
          { name: 'big', targets: [{ model: 'b' }] },
        ],
        directProviders: [direct('s1', ['s'], { maxConcurrency: 1 }), direct('b1', ['b'])],
      }),
    );
    await pool.acquire(pool.resolve('small'), {}, fakeStart);
    const second = await pool.acquire(pool.resolve('small'), {}, fakeStart);
    expect(second.group.name).toBe('big');
    expect(second.pick).toMatchObject({ provider: { id: 'b1' }, model: 'b' });
  });

  it('ejects a provider after consecutive failures, probes it after the ejection time, takes it back on success', async () => {
    const { pool, clock, metrics } = track(
      makePool({
        outlier: { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectionMs: 5000 },
        directProviders: [direct('a', ['m']), direct('b', ['m'])],
      }),
    );
    const group = pool.resolve('m');
    pool.pick(group); // the group's providers become members of its outlier detector
    for (let i = 0; i < 2; i++) pool.report(group, { providerId: 'b', probe: false }, 'server_error');
    const b = () => pool.snapshot().groups[0]!.providers.find((provider) => provider.id === 'b')!;
    expect(b().outlier).toMatchObject({ state: 'ejected', ejections: 1 });
    expect(await metrics.getSingleMetricAsString('iop_pool_provider_ejected')).toContain(
      'iop_pool_provider_ejected{group="m",provider="b"} 1',
    );
    for (let i = 0; i < 20; i++) expect(pool.pick(group)!.provider.id).toBe('a');
    clock.advance(1000);
    let ticket;
    for (let i = 0; i < 40 && ticket === undefined; i++) {
      const acquired = await pool.acquire(group, {}, fakeStart);
      (acquired.run as ReturnType<typeof fakeStart>).end();
      if (acquired.ticket.probe) ticket = acquired.ticket;
    }
    expect(ticket).toEqual({ providerId: 'b', probe: true });
    expect(b().outlier.state).toBe('probing');
    pool.report(group, ticket!, 'success');
    expect(b().outlier.state).toBe('healthy');
  });

  it('prefix affinity sends one key to one provider and counts warm hits', async () => {
    const { pool, metrics } = track(
      makePool({ directProviders: [direct('a', ['m']), direct('b', ['m']), direct('c', ['m'])] }),
    );
    const group = pool.resolve('m');
    const served = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const acquired = await pool.acquire(group, { affinityKey: 12345 }, fakeStart);
      served.add(acquired.pick.provider.id);
      (acquired.run as ReturnType<typeof fakeStart>).end();
    }
    expect(served.size).toBe(1);
    expect(await metrics.getSingleMetricAsString('iop_prefix_affinity_hits_total')).toContain(
      'iop_prefix_affinity_hits_total{group="m",result="warm"} 9',
    );
    expect(pool.snapshot().groups[0]!.affinity).toEqual({ warm: 9, cold: 0, warmShare: 1 });
  });

  it('maps every acquire failure to an IopError', async () => {
    const { pool } = track(
      makePool({ queue: { maxQueued: 0, maxWaitMs: 0 }, directProviders: [direct('a', ['m'], { maxConcurrency: 1 })] }),
    );
    await pool.acquire(pool.resolve('m'), {}, fakeStart);
    await expect(pool.acquire(pool.resolve('m'), {}, fakeStart)).rejects.toBeInstanceOf(IopError);
  });
});

describe('chatAffinityKey', () => {
  const hub = (messages: InferenceRequest['messages']): InferenceRequest =>
    ({ model: 'm', messages, stream: false }) as InferenceRequest;

  it('gives a plain text conversation the same key as the hub request, on every turn', () => {
    const system = 'You are a helpful assistant.';
    const turn1 = {
      model: 'm',
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'hi' },
      ],
    };
    const turn2 = {
      model: 'm',
      messages: [...turn1.messages, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'more' }],
    };
    const key = chatAffinityKey(turn1, 2);
    expect(chatAffinityKey(turn2, 2)).toBe(key);
    expect(chatAffinityKey(turn2, 8)).toBe(key);
    expect(
      affinityKey(
        hub([
          { role: 'system', content: [{ type: 'text', text: system }] },
          { role: 'user', content: [{ type: 'text', text: 'hi' }] },
        ] as InferenceRequest['messages']),
        2,
      ),
    ).toBe(key);
    expect(
      chatAffinityKey(
        {
          messages: [
            { role: 'system', content: system },
            { role: 'user', content: 'other' },
          ],
        },
        2,
      ),
    ).not.toBe(key);
  });

  it('uses prompt_cache_key when given', () => {
    expect(chatAffinityKey({ prompt_cache_key: 'conv-1', messages: [] }, 2)).toBe(
      chatAffinityKey({ prompt_cache_key: 'conv-1', messages: [{ role: 'user', content: 'x' }] }, 2),
    );
  });
});

describe('ServedNames', () => {
  it('keeps the most recently registered names up to its capacity', () => {
    const names = new ServedNames(2);
    names.add('a');
    names.add('b');
    names.add('a'); // refreshed: b is now the oldest
    names.add('c');
    expect([names.has('a'), names.has('b'), names.has('c'), names.size]).toEqual([true, false, true, 2]);
    expect(() => new ServedNames(0)).toThrow(RangeError);
  });
});
