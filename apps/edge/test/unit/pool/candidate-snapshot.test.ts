import { AgentRegistry } from '../../../src/tunnel/agent-registry.js';
import { agentSession, fakeStart, makePool, trackPools } from './fixtures.js';

const track = trackPools();

describe('CandidateSnapshot (one per request)', () => {
  it('builds each group candidate set once per acquire, with a fallback group', async () => {
    const registry = new AgentRegistry();
    const { pool } = track(
      makePool(
        {
          modelGroups: [
            { name: 'g', targets: [{ model: 'm' }], fallbacks: ['h'] },
            { name: 'h', targets: [{ model: 'n' }] },
          ],
        },
        { registry },
      ),
    );
    registry.add(agentSession('a1', ['m'], 1));
    registry.add(agentSession('a2', ['n'], 1));
    const group = pool.resolve('g');
    const spy = jest.spyOn(pool.catalog, 'candidates');
    const first = await pool.acquire(group, {}, fakeStart);
    expect(first.group.name).toBe('g');
    expect(spy).toHaveBeenCalledTimes(1); // g only: serving, accepting and the pick share it
    spy.mockClear();
    const second = await pool.acquire(group, {}, fakeStart); // g is full: the fallback serves
    expect(second.group.name).toBe('h');
    expect(spy).toHaveBeenCalledTimes(2); // g and h, once each
  });

  it('is read again when an agent joins while a request waits', async () => {
    const registry = new AgentRegistry();
    const { pool } = track(makePool({ modelGroups: [{ name: 'g', targets: [{ model: 'm' }] }] }, { registry }));
    registry.add(agentSession('a1', ['m'], 1));
    const group = pool.resolve('g');
    const held = await pool.acquire(group, {}, fakeStart);
    const waiting = pool.acquire(group, {}, fakeStart);
    registry.add(agentSession('a2', ['m'], 1)); // served at once by the registry listener
    expect((await waiting).pick.provider.id).toBe('a2');
    (held.run as ReturnType<typeof fakeStart>).end();
  });
});
