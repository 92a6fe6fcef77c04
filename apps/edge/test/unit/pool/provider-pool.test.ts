import { IopError, type InferenceRequest } from '@iop/core';
import { affinityKey, chatAffinityKey } from '../../../src/pool/prefix-affinity.js';
import { PoolOverloadedError } from '../../../src/pool/provider-pool.js';
import { directConfig as direct, fakeStart, makePool, trackPools } from './fixtures.js';

const track = trackPools();

describe('ProviderPool', () => {
  it('resolves aliases to their group, unknown names to the served model of that name', () => {
    const { pool } = track(makePool({ modelGroups: [{ name: 'qwen', aliases: ['gpt-4o-mini'], targets: [{ model: 'Qwen/Qwen3-8B' }] }], directProviders: [direct('d1', ['Qwen/Qwen3-8B', 'other'])] }));
    expect(pool.resolve('gpt-4o-mini').name).toBe('qwen');
    expect(pool.resolve('other')).toMatchObject({ name: 'other', targets: [{ model: 'other' }] });
    expect(pool.pick(pool.resolve('gpt-4o-mini'))).toMatchObject({ provider: { id: 'd1' }, model: 'Qwen/Qwen3-8B' });
  });

  it('refuses a model nothing serves with 404 model_not_found', async () => {
    const { pool } = track(makePool({}));
    await expect(pool.acquire(pool.resolve('nope'), {}, fakeStart)).rejects.toMatchObject({ code: 'model_not_found', status: 404 });
    expect(pool.snapshot().groups).toEqual([]);
  });

  it('routes only to providers carrying the target labels', () => {
    const { pool } = track(makePool({ modelGroups: [{ name: 'g', targets: [{ model: 'm', agents: { labels: { gpu: 'l4' } } }] }], directProviders: [direct('a', ['m']), direct('b', ['m'], { labels: { gpu: 'l4' } })] }));
    for (let i = 0; i < 20; i++) expect(pool.pick(pool.resolve('g'))!.provider.id).toBe('b');
  });

  it('queues when every provider is busy and serves the waiter when a slot frees; refuses over maxQueued with PoolOverloadedError', async () => {
    const { pool } = track(makePool({ queue: { maxQueued: 1, maxWaitMs: 10_000 }, directProviders: [direct('a', ['m'], { maxConcurrency: 1 })] }));
    const group = pool.resolve('m');
    const first = await pool.acquire(group, {}, fakeStart);
    const waiting = pool.acquire(group, {}, fakeStart);
    expect(pool.snapshot().groups[0]!.queue).toEqual({ waiting: 1, maxQueued: 1, maxWaitMs: 10_000 });
    const refused = await pool.acquire(group, {}, fakeStart).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PoolOverloadedError);
    expect(refused).toMatchObject({ code: 'rate_limited', status: 429, retryAfterSeconds: 1 });
    (first.run as ReturnType<typeof fakeStart>).end();
    pool.queue.notify('m');
    await expect(waiting).resolves.toMatchObject({ pick: { provider: { id: 'a' } } });
  });

  it('sends a request to a fallback group at once when its own providers are all busy', async () => {
    const { pool } = track(makePool({ modelGroups: [{ name: 'small', targets: [{ model: 's' }], fallbacks: ['big'] }, { name: 'big', targets: [{ model: 'b' }] }], directProviders: [direct('s1', ['s'], { maxConcurrency: 1 }), direct('b1', ['b'])] }));
    await pool.acquire(pool.resolve('small'), {}, fakeStart);
    const second = await pool.acquire(pool.resolve('small'), {}, fakeStart);
    expect(second.group.name).toBe('big');
    expect(second.pick).toMatchObject({ provider: { id: 'b1' }, model: 'b' });
  });

  it('ejects a provider after consecutive failures, probes it after the ejection time, takes it back on success', async () => {
    const { pool, clock, metrics } = track(makePool({ outlier: { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectionMs: 5000 }, directProviders: [direct('a', ['m']), direct('b', ['m'])] }));
    const group = pool.resolve('m');
    pool.pick(group); // the group's providers become members of its outlier detector
    for (let i = 0; i < 2; i++) pool.report(group, { providerId: 'b', probe: false }, 'server_error');
    const b = () => pool.snapshot().groups[0]!.providers.find((provider) => provider.id === 'b')!;
    expect(b().outlier).toMatchObject({ state: 'ejected', ejections: 1 });
    expect(await metrics.getSingleMetricAsString('iop_pool_provider_ejected')).toContain('iop_pool_provider_ejected{group="m",provider="b"} 1');
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
    const { pool, metrics } = track(makePool({ directProviders: [direct('a', ['m']), direct('b', ['m']), direct('c', ['m'])] }));
    const group = pool.resolve('m');
    const served = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const acquired = await pool.acquire(group, { affinityKey: 12345 }, fakeStart);
      served.add(acquired.pick.provider.id);
      (acquired.run as ReturnType<typeof fakeStart>).end();
    }
    expect(served.size).toBe(1);
    expect(await metrics.getSingleMetricAsString('iop_prefix_affinity_hits_total')).toContain('iop_prefix_affinity_hits_total{group="m",result="warm"} 9');
    expect(pool.snapshot().groups[0]!.affinity).toEqual({ warm: 9, cold: 0, warmShare: 1 });
  });

  it('maps every acquire failure to an IopError', async () => {
    const { pool } = track(makePool({ queue: { maxQueued: 0, maxWaitMs: 0 }, directProviders: [direct('a', ['m'], { maxConcurrency: 1 })] }));
    await pool.acquire(pool.resolve('m'), {}, fakeStart);
    await expect(pool.acquire(pool.resolve('m'), {}, fakeStart)).rejects.toBeInstanceOf(IopError);
  });
});

describe('chatAffinityKey', () => {
  const hub = (messages: InferenceRequest['messages']): InferenceRequest => ({ model: 'm', messages, stream: false }) as InferenceRequest;

  it('gives a plain text conversation the same key as the hub request, on every turn', () => {
    const system = 'You are a helpful assistant.';
    const turn1 = { model: 'm', messages: [{ role: 'system', content: system }, { role: 'user', content: 'hi' }] };
    const turn2 = { model: 'm', messages: [...turn1.messages, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'more' }] };
    const key = chatAffinityKey(turn1, 2);
    expect(chatAffinityKey(turn2, 2)).toBe(key);
    expect(chatAffinityKey(turn2, 8)).toBe(key);
    expect(affinityKey(hub([{ role: 'system', content: [{ type: 'text', text: system }] }, { role: 'user', content: [{ type: 'text', text: 'hi' }] }] as InferenceRequest['messages']), 2)).toBe(key);
    expect(chatAffinityKey({ messages: [{ role: 'system', content: system }, { role: 'user', content: 'other' }] }, 2)).not.toBe(key);
  });

  it('uses prompt_cache_key when given', () => {
    expect(chatAffinityKey({ prompt_cache_key: 'conv-1', messages: [] }, 2)).toBe(chatAffinityKey({ prompt_cache_key: 'conv-1', messages: [{ role: 'user', content: 'x' }] }, 2));
  });
});
