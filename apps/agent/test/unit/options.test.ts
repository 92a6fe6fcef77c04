import { ConfigError, layerFromEnv, layerFromFlags, mergeConfigLayers } from '@iop/core';
import { resolveAgentOptions } from '../../src/options';
import { AGENT_BINDINGS, AGENT_CONFIG_SCHEMA } from '../../src/options-schema';
import { Backoff } from '../../src/backoff';

describe('resolveAgentOptions', () => {
  test('defaults', () => {
    const options = resolveAgentOptions({});
    expect(options).toMatchObject({
      edgeUrl: 'http://127.0.0.1:8081',
      backend: 'llamacpp',
      maxConcurrency: 4,
      gpu: 'auto',
      heartbeatMs: 5_000,
      shutdownDeadlineMs: 30_000,
      reconnectBaseMs: 250,
      reconnectCapMs: 10_000,
    });
    expect(resolveAgentOptions({ backend: 'openai', backendUrl: 'http://h:8000' }).maxConcurrency).toBe(16);
  });

  test("the embedded backend's model search, cache and probe, and the log format, from IOP_* variables", () => {
    const env = layerFromEnv(AGENT_BINDINGS, {
      IOP_MODELS_PATH: '/opt/models:/srv/gguf',
      IOP_MODEL_CACHE: '/var/cache/iop',
      IOP_DOWNLOAD_PROBE_TIMEOUT_MS: '1500',
      IOP_LOG_FORMAT: 'json',
    });
    expect(env.problems).toEqual([]);
    const options = resolveAgentOptions(env.values as Record<string, string>);
    expect(options).toMatchObject({
      modelsPath: '/opt/models:/srv/gguf',
      modelCache: '/var/cache/iop',
      downloadProbeTimeoutMs: 1500,
      logFormat: 'json',
    });
    expect(resolveAgentOptions({}).downloadProbeTimeoutMs).toBe(5_000);
    expect(() => resolveAgentOptions({ logFormat: 'xml' })).toThrow(/logFormat must be one of "json", "pretty"/);
  });

  test('parses strings from the CLI and env', () => {
    const options = resolveAgentOptions({
      backend: 'openai',
      backendUrl: 'http://h:8000',
      models: 'a, b',
      labels: 'zone=eu,gpu=a100',
      threads: '2',
      maxConcurrency: '8',
    });
    expect(options.models).toEqual(['a', 'b']);
    expect(options.labels).toEqual({ zone: 'eu', gpu: 'a100' });
    expect(options.threads).toBe(2);
    expect(options.maxConcurrency).toBe(8);
  });

  test('errors name the setting and its limits, all at once', () => {
    expect(() => resolveAgentOptions({ maxConcurrency: '0' })).toThrow(ConfigError);
    expect(() => resolveAgentOptions({ maxConcurrency: '0' })).toThrow(
      'invalid agent options: maxConcurrency must be >= 1',
    );
    expect(() => resolveAgentOptions({ threads: '1.5' })).toThrow('threads must be integer');
    expect(() => resolveAgentOptions({ backend: 'vllm' })).toThrow('backend must be one of "openai", "llamacpp"');
    expect(() => resolveAgentOptions({ backend: 'openai' })).toThrow(
      'backendUrl is required with backend openai (--backend-url)',
    );
    expect(() => resolveAgentOptions({ edgeUrl: 'grpc://x' })).toThrow('edgeUrls[0] must match pattern "^https?://"');
    expect(() => resolveAgentOptions({ labels: 'novalue' })).toThrow(
      'labels (--labels) must be k=v pairs separated by commas, got "novalue"',
    );
    expect(() => resolveAgentOptions({ gpu: 'tpu' })).toThrow(
      'gpu must be one of "auto", "none", "cuda", "vulkan", "metal"',
    );
    // Every problem in one message, each named by its setting.
    expect(() =>
      resolveAgentOptions({ maxConcurrency: '0', gpu: 'tpu', metricsPort: 70000, labels: { 'bad key': 'x' } }),
    ).toThrow(
      'invalid agent options: gpu must be one of "auto", "none", "cuda", "vulkan", "metal"; maxConcurrency must be >= 1; labels key "bad key" must match pattern "^[A-Za-z0-9][A-Za-z0-9_.\\-/]{0,62}$"; metricsPort must be <= 65535',
    );
  });

  test("the flags and variables come from the schema, with the edge's names for shared settings and the old names as aliases", () => {
    const byField = new Map(AGENT_BINDINGS.map((binding) => [binding.field, binding]));
    expect(byField.get('logLevel')).toMatchObject({ flag: '--log-level', env: 'IOP_LOG_LEVEL' });
    expect(byField.get('shutdownDeadlineMs')).toMatchObject({
      flag: '--shutdown-deadline-ms',
      env: 'IOP_SHUTDOWN_DEADLINE_MS',
    });
    expect(byField.get('edgeUrls')).toMatchObject({
      flag: '--edge-urls',
      env: 'IOP_EDGE_URLS',
      aliases: [{ flag: '--edge', env: 'IOP_EDGE_URL' }],
    });
    expect(byField.get('heartbeatMs')?.aliases).toEqual([
      { flag: '--heartbeat-interval-ms', env: 'IOP_HEARTBEAT_INTERVAL_MS' },
    ]);
    // Every setting of the schema has a flag and a variable.
    expect([...new Set([...byField.keys()].map((field) => field.split('.')[0]))].sort()).toEqual(
      Object.keys(AGENT_CONFIG_SCHEMA.properties).sort(),
    );
    expect(byField.get('kvEvents.replayEndpoint')).toMatchObject({
      flag: '--kv-events-replay-endpoint',
      env: 'IOP_KV_EVENTS_REPLAY_ENDPOINT',
    });
  });

  test('kvEvents: nested settings, strings read as the flags are, unset by default', () => {
    expect(resolveAgentOptions({}).kvEvents).toEqual({
      endpoint: undefined,
      replayEndpoint: undefined,
      topic: '',
      maxBlocks: 1_000_000,
      maxPrefixes: 10_000,
    });
    const options = resolveAgentOptions({
      kvEvents: { endpoint: 'tcp://127.0.0.1:5557', replayEndpoint: 'tcp://127.0.0.1:5558', maxBlocks: '5000' },
    });
    expect(options.kvEvents).toMatchObject({
      endpoint: 'tcp://127.0.0.1:5557',
      replayEndpoint: 'tcp://127.0.0.1:5558',
      maxBlocks: 5000,
    });
    expect(() => resolveAgentOptions({ kvEvents: { endpoint: 'http://127.0.0.1:5557' } })).toThrow(
      /kvEvents\.endpoint/,
    );
    expect(() => resolveAgentOptions({ kvEvents: { maxPrefixes: '0' } })).toThrow(/kvEvents\.maxPrefixes/);
  });

  test('env < flags, the rule name over its alias', () => {
    const env = layerFromEnv(AGENT_BINDINGS, {
      IOP_EDGE_URL: 'http://old:1',
      IOP_EDGE_URLS: 'http://a:1,http://b:2',
      IOP_MAX_CONCURRENCY: '8',
    });
    const flags = layerFromFlags(
      AGENT_BINDINGS,
      new Map([
        ['--max-concurrency', '12'],
        ['--metrics-port', 'off'],
        ['--labels', 'gpu=l4'],
      ]),
    );
    expect(flags.problems).toEqual([]);
    const options = resolveAgentOptions(mergeConfigLayers(env.values, flags.values));
    expect(options.edgeUrls).toEqual(['http://a:1', 'http://b:2']);
    expect(options.maxConcurrency).toBe(12);
    expect(options.metricsPort).toBeUndefined();
    expect(options.labels).toEqual({ gpu: 'l4' });
    expect(
      resolveAgentOptions(layerFromFlags(AGENT_BINDINGS, new Map([['--metrics-port', '9100']])).values).metricsPort,
    ).toBe(9100);
  });
});

describe('Backoff', () => {
  test('full jitter under an exponential ceiling capped at 10 s; reset goes back to the base', () => {
    const ceilings: number[] = [];
    const backoff = new Backoff({ random: () => 0.999999 });
    for (let attempt = 0; attempt < 8; attempt++) ceilings.push(backoff.next());
    expect(ceilings).toEqual([249, 499, 999, 1999, 3999, 7999, 9999, 9999]);
    backoff.reset();
    expect(backoff.next()).toBe(249);
    expect(new Backoff({ random: () => 0 }).next()).toBe(0);
  });
});
