import pino from 'pino';
import { applyConfigReload } from '../../../src/admin/config-reload.js';
import { ConfigError, resolveConfig, type EdgeConfig } from '../../../src/config.js';
import type { EdgeContext } from '../../../src/edge-context.js';
import type { GateRegistry } from '../../../src/gate/gate-registry.js';
import type { ProviderPool } from '../../../src/pool/provider-pool.js';
import { directConfig as direct, makePool } from '../pool/fixtures.js';

const pools: ProviderPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

const file = (pool: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  resolveConfig({ port: 0, tunnel: { port: 0 }, pool, ...extra });

function edgeWith(config: EdgeConfig): EdgeContext {
  const { pool } = makePool(config.pool as unknown as Record<string, unknown>);
  pools.push(pool);
  const gates = { name: 'gates' } as unknown as GateRegistry;
  return { config, pool, gates, logger: pino({ level: 'silent' }) } as unknown as EdgeContext;
}

const buildGates = () => ({ name: 'new gates' }) as unknown as GateRegistry;

describe('applyConfigReload: the pool section', () => {
  const before = {
    modelGroups: [{ name: 'old', aliases: ['legacy'], targets: [{ model: 'm' }] }],
    directProviders: [direct('d1', ['m'])],
  };

  it('applies pool changes and reports them in `changed` and `pool`', () => {
    const edge = edgeWith(file(before));
    const result = applyConfigReload(
      edge,
      file(
        {
          modelGroups: [{ name: 'new', aliases: ['fast'], targets: [{ model: 'm' }] }],
          directProviders: [direct('d1', ['m'])],
        },
        { port: 1 },
      ),
      buildGates,
    );
    expect(result).toEqual({
      changed: ['pool'],
      restartRequired: ['port'],
      pool: { groupsAdded: ['new'], groupsRemoved: ['old'], aliasesAdded: ['fast'], aliasesRemoved: ['legacy'] },
    });
    expect(edge.config.port).toBe(0);
    expect(edge.config.pool.modelGroups.map((group) => group.name)).toEqual(['new']);
    expect(edge.pool.config).toBe(edge.config.pool);
    expect(edge.pool.resolve('fast').name).toBe('new');
  });

  it('refuses an invalid pool section and changes nothing (gates included)', () => {
    const edge = edgeWith(file(before));
    const config = edge.config;
    const bad = {
      ...file(before, { apiKeys: ['sk-new-key-0001'], gate: { default: { filters: [] } } }),
      pool: { modelGroups: [{ name: 'a', targets: [{ model: 'm' }], fallbacks: ['missing'] }] },
    } as unknown as EdgeConfig;
    expect(() => applyConfigReload(edge, bad, buildGates)).toThrow(ConfigError);
    expect(() => applyConfigReload(edge, bad, buildGates)).toThrow(
      'modelGroups[0].fallbacks[0] `missing` is not a model group name',
    );
    expect(edge.config).toBe(config);
    expect(edge.gates).toEqual({ name: 'gates' });
    expect(edge.pool.resolve('legacy').name).toBe('old');
  });

  it('a top-level maxAttempts change reaches pool.retry without being reported as a pool change', () => {
    const edge = edgeWith(file(before));
    const result = applyConfigReload(edge, file(before, { maxAttempts: 1 }), buildGates);
    expect(result).toEqual({ changed: ['maxAttempts'], restartRequired: [] });
    expect(edge.pool.config.retry.maxAttempts).toBe(1);
  });

  it('an unchanged pool keeps the pool state as it is', () => {
    const edge = edgeWith(file(before));
    const direct1 = edge.pool.direct[0];
    expect(applyConfigReload(edge, file(before, { apiKeys: ['sk-new-key-0001'] }), buildGates)).toEqual({
      changed: ['apiKeys'],
      restartRequired: [],
    });
    expect(edge.pool.direct[0]).toBe(direct1);
  });
});

describe('applyConfigReload: the price table and metrics', () => {
  const pool = { modelGroups: [{ name: 'g', targets: [{ model: 'm' }] }] };

  it('applies a new price table; a metrics change needs a restart', () => {
    const edge = edgeWith(file(pool));
    const result = applyConfigReload(
      edge,
      file(pool, {
        pricing: { models: { g: { input: 0.1, output: 0.4 } } },
        metrics: { keyLabels: { enabled: true } },
      }),
      buildGates,
    );
    expect(result).toEqual({ changed: ['pricing'], restartRequired: ['metrics'] });
    expect(edge.config.pricing.models).toEqual({ g: { input: 0.1, output: 0.4 } });
    expect(edge.config.metrics.keyLabels.enabled).toBe(false);
  });

  it('refuses a negative price or an unknown price field', () => {
    expect(() => file(pool, { pricing: { models: { g: { input: -1, output: 0 } } } })).toThrow(ConfigError);
    expect(() => file(pool, { pricing: { models: { g: { input: 1, output: 1, cached: 0.5 } } } })).toThrow(
      /pricing\.models\.g/,
    );
  });
});
