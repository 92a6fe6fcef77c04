import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import { ConfigError, configFromEnv, configFromFlags, readConfigFile, resolveConfig } from '../../src/config';
import { EDGE_BINDINGS, edgeJsonSchema } from '../../src/config-schema';
import { agentJsonSchema } from '../../../agent/src/options-schema';

const ROOT = join(__dirname, '../../../..');
const messageOf = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('edge config schema', () => {
  it('names every problem at once, each with its path', () => {
    const message = messageOf(() =>
      resolveConfig({
        port: 70000,
        tunnel: { unauthenticated: { maxUnauthenticatedStreams: 0 } },
        logLevel: 'loud',
        bogus: 1,
        gate: {
          models: {
            qwen3: { filters: ['nope'] },
            'Qwen/Qwen3-8B': { filters: [{ name: 'text-tool-calls', options: { formats: ['zz'] } }] },
          },
        },
        pool: {
          modelGroups: [{ name: 'g', targets: [{ model: 'm' }], fallbacks: ['missing'] }],
          retry: { budgetRatio: -1 },
        },
      }),
    );
    expect(message).toMatch(/^invalid edge config: /);
    expect(message).toContain('port must be <= 65535');
    expect(message).toContain('tunnel.unauthenticated.maxUnauthenticatedStreams must be >= 1');
    expect(message).toContain('logLevel must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"');
    expect(message).toContain('bogus is not a known setting');
    expect(message).toContain('gate.models.qwen3.filters[0] must be one of "reasoning"');
    expect(message).toContain('pool.retry.budgetRatio must be >= 0');
    // Filter options (checked by building the gate) and the pool's references, in the same message.
    const crossChecked = messageOf(() =>
      resolveConfig({
        gate: { models: { 'Qwen/Qwen3-8B': { filters: [{ name: 'text-tool-calls', options: { formats: ['zz'] } }] } } },
        pool: { modelGroups: [{ name: 'g', targets: [{ model: 'm' }], fallbacks: ['missing'] }] },
        responsesStore: { maxResponseBytes: 4096, maxTotalBytes: 2048 },
      }),
    );
    expect(crossChecked).toContain('gate.models["Qwen/Qwen3-8B"].filters[0]: unknown text tool-call format "zz"');
    expect(crossChecked).toContain('pool.modelGroups[0].fallbacks[0] `missing` is not a model group name');
    expect(crossChecked).toContain(
      'responsesStore.maxResponseBytes (4096) must not exceed responsesStore.maxTotalBytes (2048)',
    );
  });

  it('names the variable or flag a bad value came from, and values it cannot read', () => {
    const message = messageOf(() =>
      resolveConfig(
        {},
        configFromEnv({ IOP_PORT: '70000', IOP_POOL_MODEL_GROUPS: '[{' }),
        configFromFlags(new Map([['--tunnel-port', 'abc']])),
      ),
    );
    expect(message).toContain('port must be <= 65535 (from IOP_PORT)');
    expect(message).toContain('pool.modelGroups (IOP_POOL_MODEL_GROUPS) must be JSON');
    expect(message).toContain('tunnel.port (--tunnel-port) must be a number, got "abc"');
  });

  it('layers defaults < file < env < flags field by field; the rule name wins over an old alias', () => {
    const config = resolveConfig(
      { port: 9000, tunnel: { port: 9001 }, pool: { retry: { budgetRatio: 0.5 } } },
      configFromEnv({
        IOP_PORT: '9100',
        IOP_TLS_CERT: '/old.pem',
        IOP_TUNNEL_TLS_CERT_FILE: '/new.pem',
        IOP_POOL_RETRY_MAX_BACKOFF_MS: '3000',
        IOP_STORAGE_POSTGRES_URL: 'postgres://db/iop',
      }),
      configFromFlags(
        new Map([
          ['--port', '9200'],
          ['--pool-affinity-enabled', 'false'],
          ['--tunnel-register-timeout-ms', '2000'],
        ]),
      ),
    );
    expect(config.port).toBe(9200);
    expect(config.tunnel).toMatchObject({
      port: 9001,
      tlsCertFile: '/new.pem',
      unauthenticated: { registerTimeoutMs: 2000 },
    });
    expect(config.pool.retry).toMatchObject({ budgetRatio: 0.5, maxBackoffMs: 3000 });
    expect(config.pool.affinity.enabled).toBe(false);
    expect(config.storage.sql).toEqual({ kind: 'postgres', url: 'postgres://db/iop' });
  });

  it('binds every setting to a flag and a variable by the naming rule', () => {
    const byField = new Map(EDGE_BINDINGS.map((binding) => [binding.field, binding]));
    expect(byField.get('tunnel.port')).toMatchObject({ flag: '--tunnel-port', env: 'IOP_TUNNEL_PORT', kind: 'number' });
    expect(byField.get('logLevel')).toMatchObject({ flag: '--log-level', env: 'IOP_LOG_LEVEL' });
    expect(byField.get('pool.modelGroups')).toMatchObject({
      flag: '--pool-model-groups',
      env: 'IOP_POOL_MODEL_GROUPS',
      kind: 'json',
    });
    expect(byField.get('responsesStore.dataDir')?.aliases).toEqual([{ flag: '--data-dir', env: 'IOP_DATA_DIR' }]);
    const names = EDGE_BINDINGS.flatMap((binding) => [
      binding.flag,
      binding.env,
      ...binding.aliases.flatMap((alias) => [alias.flag, alias.env]),
    ]).filter((name) => name !== undefined);
    expect(new Set(names).size).toBe(names.length);
  });

  it('reads YAML and JSON config files the same way', () => {
    const dir = mkdtempSync(join(tmpdir(), 'iop-config-'));
    const yaml = join(dir, 'edge.yaml');
    writeFileSync(
      yaml,
      [
        '# yaml-language-server: $schema=../schema/iop-edge.schema.json',
        'port: 9000',
        'apiKeys: [sk-team-0123456789]',
        'gate:',
        '  models:',
        '    qwen3:',
        '      filters: [reasoning, text-tool-calls]',
        'pool:',
        '  modelGroups:',
        '    - name: qwen3',
        '      targets: [{ model: Qwen/Qwen3-8B }]',
        '',
      ].join('\n'),
    );
    const json = join(dir, 'edge.json');
    writeFileSync(
      json,
      JSON.stringify({
        $schema: '../schema/iop-edge.schema.json',
        port: 9000,
        apiKeys: ['sk-team-0123456789'],
        gate: { models: { qwen3: { filters: ['reasoning', 'text-tool-calls'] } } },
        pool: { modelGroups: [{ name: 'qwen3', targets: [{ model: 'Qwen/Qwen3-8B' }] }] },
      }),
    );
    const fromYaml = resolveConfig(readConfigFile(yaml));
    expect(fromYaml).toEqual(resolveConfig(readConfigFile(json)));
    expect(fromYaml.gate.models.qwen3?.filters).toEqual(['reasoning', 'text-tool-calls']);
    expect(fromYaml.pool.modelGroups[0]?.targets[0]).toEqual({ model: 'Qwen/Qwen3-8B', weight: 1 });
    const duplicate = join(dir, 'dup.yml');
    writeFileSync(duplicate, 'port: 1\nport: 2\n');
    expect(() => readConfigFile(duplicate)).toThrow(ConfigError);
    const list = join(dir, 'list.yaml');
    writeFileSync(list, '- 1\n');
    expect(() => readConfigFile(list)).toThrow('it must hold an object of settings');
  });

  it('publishes JSON Schemas that are fresh (npm run generate:schema) and accept a config file', () => {
    const edge = edgeJsonSchema();
    const agent = agentJsonSchema();
    expect(JSON.parse(readFileSync(join(ROOT, 'schema/iop-edge.schema.json'), 'utf8'))).toEqual(edge);
    expect(JSON.parse(readFileSync(join(ROOT, 'schema/iop-agent.schema.json'), 'utf8'))).toEqual(agent);
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validateEdge = ajv.compile(edge);
    expect(
      validateEdge({
        $schema: './iop-edge.schema.json',
        port: 8080,
        pool: { modelGroups: [{ name: 'g', targets: [{ model: 'm' }] }] },
      }),
    ).toBe(true);
    expect(validateEdge({ port: 'x', nope: 1 })).toBe(false);
    expect(
      ajv.compile(agent)({
        edgeUrls: ['http://edge:8081'],
        backend: 'openai',
        backendUrl: 'http://127.0.0.1:8000',
        labels: { gpu: 'l4' },
      }),
    ).toBe(true);
  });
});
