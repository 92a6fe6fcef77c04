import { AgentRegistry } from '../../../src/tunnel/agent-registry.js';
import { listModels } from '../../../src/pool/model-list.js';
import { parsePoolConfig } from '../../../src/pool/pool-config.js';
import type { ProviderPool } from '../../../src/pool/provider-pool.js';
import { agentSession, directConfig as direct, makePool } from './fixtures.js';

const pools: ProviderPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

function setUp(raw: Record<string, unknown>) {
  const registry = new AgentRegistry();
  const { pool } = makePool(raw, { registry });
  pools.push(pool);
  return { pool, registry };
}

describe('listModels (GET /v1/models)', () => {
  it('lists groups and aliases that a provider serves now, then served models, each name once', () => {
    const { pool, registry } = setUp({
      modelGroups: [
        { name: 'chat', aliases: ['gpt-4o-mini', 'served-a'], targets: [{ model: 'served-a' }] },
        { name: 'idle', aliases: ['idle-alias'], targets: [{ model: 'nobody-serves-this' }] },
        { name: 'spill', targets: [{ model: 'nobody-serves-this' }], fallbacks: ['chat'] },
        { name: 'remote', targets: [{ model: 'direct-m' }] },
      ],
      directProviders: [direct('d1', ['direct-m', 'direct-only'])],
    });
    registry.add(agentSession('agent-1', [{ id: 'served-a', contextLength: 8192 }, 'served-b']));
    registry.add(agentSession('agent-2', ['served-b', 'idle']));
    const listed = listModels(pool.catalog);
    expect(listed.map((model) => model.id)).toEqual([
      'chat',
      'gpt-4o-mini',
      'served-a',
      'spill',
      'remote',
      'served-b',
      'direct-m',
      'direct-only',
    ]);
    expect(listed[0]).toEqual({ id: 'chat', created: 0, contextLength: 8192, providers: 1, apis: null });
    expect(listed.find((model) => model.id === 'served-b')).toEqual({
      id: 'served-b',
      created: 0,
      contextLength: null,
      providers: 2,
      apis: null,
    });
    expect(listed.find((model) => model.id === 'remote')).toMatchObject({ providers: 1, contextLength: null });
    // `idle` is a configured group nobody serves: agent-2's served model of that name does not make it routable.
    expect(listed.map((model) => model.id)).not.toContain('idle');
  });

  it('lists the APIs the providers register for a model (their union), null when none tells', () => {
    const { pool, registry } = setUp({ modelGroups: [{ name: 'g', targets: [{ model: 'embed' }] }] });
    registry.add(
      agentSession('agent-1', [
        { id: 'embed', apis: ['embeddings'] },
        { id: 'gen', apis: ['completions', 'chat'] },
        'quiet',
      ]),
    );
    registry.add(agentSession('agent-2', [{ id: 'embed', apis: ['rerank', 'embeddings'] }]));
    const apis = Object.fromEntries(listModels(pool.catalog).map((model) => [model.id, model.apis]));
    expect(apis).toEqual({
      g: ['embeddings', 'rerank'],
      embed: ['embeddings', 'rerank'],
      gen: ['chat', 'completions'],
      quiet: null,
    });
  });

  it('leaves out providers that are draining or gone, and follows a reload at once', () => {
    const { pool, registry } = setUp({ modelGroups: [{ name: 'g', targets: [{ model: 'm' }] }] });
    const session = agentSession('agent-1', ['m']);
    registry.add(session);
    expect(listModels(pool.catalog).map((model) => model.id)).toEqual(['g', 'm']);
    session.draining = true;
    expect(listModels(pool.catalog)).toEqual([]);
    session.draining = false;
    pool.applyReload(
      pool.prepareReload(
        parsePoolConfig({
          modelGroups: [{ name: 'h', aliases: ['fast'], targets: [{ model: 'm' }] }],
          directProviders: [direct('d1', ['other'])],
        }),
      ),
    );
    expect(listModels(pool.catalog).map((model) => model.id)).toEqual(['h', 'fast', 'm', 'other']);
    expect(listModels(pool.catalog)[0]!.providers).toBe(1);
    pool.applyReload(pool.prepareReload(parsePoolConfig({})));
    expect(listModels(pool.catalog).map((model) => model.id)).toEqual(['m']);
    registry.remove(session);
    expect(listModels(pool.catalog)).toEqual([]);
  });
});
