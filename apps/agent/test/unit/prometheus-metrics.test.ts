import { parseVllmMetrics } from '../../src/backends/prometheus-metrics';

describe('parseVllmMetrics', () => {
  test('reads KV-cache usage (old and new names) and waiting requests; tolerates absence', () => {
    const text = [
      '# HELP vllm:num_requests_waiting Number of requests waiting.',
      '# TYPE vllm:num_requests_waiting gauge',
      'vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 2.0',
      'vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-8B"} 1.0',
      'vllm:gpu_cache_usage_perc{model_name="Qwen/Qwen3-8B"} 0.42',
      'vllm:num_requests_running{model_name="Qwen/Qwen3-8B"} 5.0',
    ].join('\n');
    expect(parseVllmMetrics(text)).toEqual({ waiting: 3, kvCacheUsage: 0.42 });
    expect(parseVllmMetrics('vllm:kv_cache_usage_perc 0.1\n')).toEqual({ kvCacheUsage: 0.1 });
    expect(parseVllmMetrics('process_cpu_seconds_total 12\n')).toEqual({});
  });
});
