import { resolveAgentOptions } from '../../src/options';
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

  test('parses strings from the CLI and env', () => {
    const options = resolveAgentOptions({ backend: 'openai', backendUrl: 'http://h:8000', models: 'a, b', labels: 'zone=eu,gpu=a100', threads: '2', maxConcurrency: '8' });
    expect(options.models).toEqual(['a', 'b']);
    expect(options.labels).toEqual({ zone: 'eu', gpu: 'a100' });
    expect(options.threads).toBe(2);
    expect(options.maxConcurrency).toBe(8);
  });

  test('errors name the flag and its exact limits', () => {
    expect(() => resolveAgentOptions({ maxConcurrency: '0' })).toThrow('--max-concurrency must be an integer in [1, 1024], got "0"');
    expect(() => resolveAgentOptions({ threads: '1.5' })).toThrow('--threads must be an integer in [1, 256], got "1.5"');
    expect(() => resolveAgentOptions({ backend: 'vllm' })).toThrow('--backend must be one of openai, llamacpp, got "vllm"');
    expect(() => resolveAgentOptions({ backend: 'openai' })).toThrow('--backend-url is required with --backend openai');
    expect(() => resolveAgentOptions({ edgeUrl: 'grpc://x' })).toThrow('--edge must be an http:// or https:// URL, got "grpc://x"');
    expect(() => resolveAgentOptions({ labels: 'novalue' })).toThrow('--labels must be k=v pairs separated by commas, got "novalue"');
    expect(() => resolveAgentOptions({ gpu: 'tpu' })).toThrow('--gpu must be one of auto, none, cuda, vulkan, metal, got "tpu"');
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
