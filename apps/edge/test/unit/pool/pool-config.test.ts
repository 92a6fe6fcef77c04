import { ConfigError } from '../../../src/config.js';
import { ModelResolver } from '../../../src/pool/model-resolver.js';
import { parsePoolConfig } from '../../../src/pool/pool-config.js';

const example = {
  modelGroups: [
    {
      name: 'qwen3-8b',
      aliases: ['gpt-4o-mini'],
      targets: [{ model: 'Qwen/Qwen3-8B', agents: { labels: { gpu: 'l4' } } }],
      fallbacks: ['qwen3-32b'],
      contextFallback: 'qwen3-8b-128k',
      queue: { maxQueued: 256, maxWaitMs: 30000 },
      gate: { validate: 'json' },
    },
    { name: 'qwen3-32b', targets: [{ model: 'Qwen/Qwen3-32B', weight: 2 }] },
    { name: 'qwen3-8b-128k', targets: [{ model: 'Qwen/Qwen3-8B-128k' }] },
  ],
  directProviders: [
    { id: 'vllm-a', baseUrl: 'http://10.0.0.5:8000/v1', models: ['Qwen/Qwen3-8B'], maxConcurrency: 64, weight: 1 },
  ],
  retry: { maxAttempts: 4 },
};

describe('parsePoolConfig', () => {
  it('accepts the example and fills in every default', () => {
    const config = parsePoolConfig(example);
    expect(config.retry).toEqual({
      maxAttempts: 4,
      budgetRatio: 0.2,
      minRetriesPerSecond: 5,
      baseBackoffMs: 50,
      overloadBackoffBaseMs: 500,
      maxBackoffMs: 2000,
    });
    expect(config.outlier).toEqual({
      consecutiveFailures: 5,
      baseEjectionMs: 10_000,
      maxEjectionMs: 300_000,
      maxEjectedPercent: 50,
    });
    expect(config.affinity).toEqual({ enabled: true, prefixMessages: 2, loadFactor: 1.25, prefillTokensPerS: 10_000 });
    expect(config.queue).toEqual({ maxQueued: 256, maxWaitMs: 30_000 });
    expect(config.modelGroups[0]!.targets[0]).toEqual({
      model: 'Qwen/Qwen3-8B',
      agents: { labels: { gpu: 'l4' } },
      weight: 1,
    });
    expect(config.modelGroups[1]).toEqual({
      name: 'qwen3-32b',
      aliases: [],
      targets: [{ model: 'Qwen/Qwen3-32B', weight: 2 }],
      fallbacks: [],
      queue: { maxQueued: 256, maxWaitMs: 30_000 },
    });
    expect(config.modelGroups[0]!.gate).toEqual({ validate: 'json' });
    expect(config.directProviders[0]!.labels).toEqual({});
    expect(example.retry).toEqual({ maxAttempts: 4 }); // input untouched
  });

  it('accepts an absent section as all defaults', () => {
    expect(parsePoolConfig(undefined).modelGroups).toEqual([]);
  });

  it('names every invalid field and its limit', () => {
    const bad = { ...example, retry: { maxAttempts: 0, budgetRatio: -1 }, affinity: { loadFactor: 0.5 }, extra: true };
    expect(() => parsePoolConfig(bad)).toThrow(ConfigError);
    expect(() => parsePoolConfig(bad)).toThrow(
      'invalid pool config: extra is not a known setting; retry.maxAttempts must be >= 1; retry.budgetRatio must be >= 0; affinity.loadFactor must be >= 1',
    );
    expect(() => parsePoolConfig({ modelGroups: [{ name: 'x', targets: [] }] })).toThrow(
      'modelGroups[0].targets must NOT have fewer than 1 items',
    );
    expect(() => parsePoolConfig({ directProviders: [{ id: 'a', baseUrl: 'ftp://x', models: ['m'] }] })).toThrow(
      'directProviders[0].baseUrl must match pattern',
    );
  });

  it('refuses duplicate names and aliases, and fallbacks to unknown groups', () => {
    const groups = [
      { name: 'a', aliases: ['b'], targets: [{ model: 'm' }], fallbacks: ['nope'] },
      { name: 'b', targets: [{ model: 'm' }], contextFallback: 'b' },
    ];
    expect(() => parsePoolConfig({ modelGroups: groups })).toThrow(
      'invalid pool config: modelGroups[1].name `b` is already used by modelGroups[0]; modelGroups[0].fallbacks[0] `nope` is not a model group name; modelGroups[1].contextFallback names its own group',
    );
    expect(() => parsePoolConfig({ retry: { baseBackoffMs: 500, maxBackoffMs: 100 } })).toThrow(
      'retry.maxBackoffMs must be >= retry.baseBackoffMs',
    );
  });
});

describe('ModelResolver', () => {
  const resolver = new ModelResolver(parsePoolConfig(example));

  it('resolves a group by name or alias', () => {
    const byName = resolver.resolveModel('qwen3-8b');
    expect(byName.implicit).toBe(false);
    expect(byName.targets.map((target) => target.model)).toEqual(['Qwen/Qwen3-8B']);
    expect(resolver.resolveModel('gpt-4o-mini').group).toBe(byName.group);
    expect(byName.group.contextFallback).toBe('qwen3-8b-128k');
  });

  it('falls through to the served model of the same name', () => {
    expect(resolver.resolveModel('llama3.2:1b')).toEqual({
      group: {
        name: 'llama3.2:1b',
        aliases: [],
        targets: [{ model: 'llama3.2:1b', weight: 1 }],
        fallbacks: [],
        queue: { maxQueued: 256, maxWaitMs: 30_000 },
      },
      targets: [{ model: 'llama3.2:1b', weight: 1 }],
      implicit: true,
    });
  });

  it('finds groups by name only, and lists every client-facing name', () => {
    expect(resolver.group('qwen3-32b')?.name).toBe('qwen3-32b');
    expect(resolver.group('gpt-4o-mini')).toBeUndefined();
    expect(resolver.names()).toEqual(['qwen3-8b', 'gpt-4o-mini', 'qwen3-32b', 'qwen3-8b-128k']);
  });
});
