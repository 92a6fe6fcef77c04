import type { IopError } from '@iop/core';
import { AgentRegistry } from '../../../src/tunnel/agent-registry.js';
import { providersWithoutApi } from '../../../src/passthrough/served-apis.js';
import type { ProviderPool } from '../../../src/pool/provider-pool.js';
import { agentSession, directConfig, makePool } from '../pool/fixtures.js';

const pools: ProviderPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

function setUp(raw: Record<string, unknown> = {}) {
  const registry = new AgentRegistry();
  const { pool } = makePool(raw, { registry });
  pools.push(pool);
  return { pool, registry };
}

function refusal(run: () => unknown): IopError {
  try {
    run();
  } catch (error) {
    return error as IopError;
  }
  throw new Error('no refusal');
}

describe('providersWithoutApi', () => {
  it('leaves out the providers that say they do not serve the API; refuses when none does', () => {
    const { pool, registry } = setUp();
    registry.add(agentSession('embedder', [{ id: 'm', apis: ['embeddings'] }]));
    expect([...providersWithoutApi(pool, 'm', 'embeddings')]).toEqual([]);
    const refused = refusal(() => providersWithoutApi(pool, 'm', 'completions'));
    expect(refused).toMatchObject({ code: 'invalid_request', status: 400, param: 'model' });
    expect(refused.message).toBe(
      'The model `m` does not serve text completions (POST /v1/completions); it serves embeddings (POST /v1/embeddings).',
    );
    // An agent joins that serves it: the answer follows at once.
    registry.add(agentSession('generator', [{ id: 'm', apis: ['chat', 'completions'] }]));
    expect([...providersWithoutApi(pool, 'm', 'completions')]).toEqual(['embedder']);
  });

  it('a provider that does not tell (no apis, a direct provider) may serve anything; a model nothing serves is the pool’s to answer', () => {
    const { pool, registry } = setUp({ directProviders: [directConfig('d1', ['remote'])] });
    registry.add(agentSession('quiet', ['m']));
    expect([...providersWithoutApi(pool, 'm', 'rerank')]).toEqual([]);
    expect([...providersWithoutApi(pool, 'remote', 'embeddings')]).toEqual([]);
    expect([...providersWithoutApi(pool, 'nobody', 'embeddings')]).toEqual([]);
  });

  it('the refusal names the model as the client asked for it (group or alias)', () => {
    const { pool, registry } = setUp({ modelGroups: [{ name: 'g', aliases: ['alias'], targets: [{ model: 'm' }] }] });
    registry.add(agentSession('embedder', [{ id: 'm', apis: ['embeddings'] }]));
    expect(refusal(() => providersWithoutApi(pool, 'g', 'chat')).message).toContain('`g`');
    expect(refusal(() => providersWithoutApi(pool, 'alias', 'chat')).message).toContain('`alias`');
  });
});
