/**
 * EdgeMetrics.recordRequest: one call fills iop's request series and the OpenTelemetry GenAI ones
 * (gen-ai-metrics: time per output token = (duration − TTFT) / (output tokens − 1), the required
 * `gen_ai.provider.name`); a failed request records only its duration with `error_type`, a
 * successful one has no `error_type` label at all (`error.type` is set only on errors). Per-key
 * series exist only when enabled, with a bounded `key` label.
 */
import { EdgeMetrics } from '../../src/metrics';

const base = {
  dialect: 'openai-chat',
  model: 'house',
  servedModel: 'Qwen/Qwen3-8B',
  agent: 'gpu-1',
  providerName: 'vllm',
  keyId: 'key_a',
  status: 200,
  response: { mode: 'normalized' as const, policy: 'evidence-tail' },
};
const success = {
  ...base,
  durationSeconds: 1.1,
  ttftSeconds: 0.1,
  usage: { inputTokens: 30, outputTokens: 11 },
  errorType: undefined,
};
const genAi =
  'gen_ai_operation_name="chat",gen_ai_provider_name="vllm",gen_ai_request_model="house",gen_ai_response_model="Qwen/Qwen3-8B"';

it('derives the time per output token from duration, TTFT and completion tokens', async () => {
  const metrics = new EdgeMetrics();
  metrics.recordRequest(success);
  const text = await metrics.registry.metrics();
  expect(text).toContain(
    'iop_requests_total{dialect="openai-chat",model="house",served_model="Qwen/Qwen3-8B",agent="gpu-1",status="200",mode="normalized",policy="evidence-tail"} 1',
  );
  expect(text).toContain('iop_time_per_output_token_seconds_sum{dialect="openai-chat",model="house"} 0.1');
  expect(text).toContain(`gen_ai_server_time_per_output_token_seconds_sum{${genAi}} 0.1`);
  expect(text).toContain(`gen_ai_server_time_to_first_token_seconds_sum{${genAi}} 0.1`);
  expect(text).toContain(`gen_ai_client_token_usage_sum{${genAi},gen_ai_token_type="input"} 30`);
  expect(text).toContain(`gen_ai_client_token_usage_sum{${genAi},gen_ai_token_type="output"} 11`);
  expect(text).toContain(`gen_ai_server_request_duration_seconds_count{${genAi}} 1`);
  expect(text).not.toContain('error_type');
  expect(text).toContain('iop_request_duration_seconds_sum{dialect="openai-chat",model="house"} 1.1');
  // Off by default: no per-key series.
  expect(text).not.toContain('iop_key_');
});

it('records a failed request with error_type and no latency or token series', async () => {
  const metrics = new EdgeMetrics();
  metrics.recordRequest({
    ...base,
    servedModel: undefined,
    agent: undefined,
    providerName: undefined,
    status: 503,
    durationSeconds: 0.01,
    ttftSeconds: undefined,
    usage: undefined,
    errorType: 'no_capacity',
    response: { mode: 'none', policy: 'none' },
  });
  const text = await metrics.registry.metrics();
  expect(text).toContain(
    'iop_requests_total{dialect="openai-chat",model="house",served_model="none",agent="none",status="503",mode="none",policy="none"} 1',
  );
  expect(text).toContain(
    'gen_ai_server_request_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="none",gen_ai_request_model="house",gen_ai_response_model="none",error_type="no_capacity"} 1',
  );
  expect(text).not.toMatch(/^gen_ai_server_time_to_first_token_seconds_count/m);
  expect(text).not.toMatch(/^gen_ai_client_token_usage_count/m);
});

it('labels requests and tokens by key when enabled: the first maxKeys keys by id, the rest "other"', async () => {
  const metrics = new EdgeMetrics({ keyLabels: { enabled: true, keys: [], maxKeys: 2 } });
  for (const keyId of ['key_a', 'key_b', 'key_c', 'key_a', 'key_d']) metrics.recordRequest({ ...success, keyId });
  const text = await metrics.registry.metrics();
  expect(text).toContain('iop_key_requests_total{key="key_a",model="house",status="200"} 2');
  expect(text).toContain('iop_key_requests_total{key="key_b",model="house",status="200"} 1');
  expect(text).toContain('iop_key_requests_total{key="other",model="house",status="200"} 2');
  expect(text).toContain('iop_key_tokens_total{key="other",model="house",kind="prompt"} 60');
  expect(text).toContain('iop_key_tokens_total{key="key_a",model="house",kind="completion"} 22');
  expect(text).not.toContain('key_c');
});

it('labels only the allow-listed keys when a list is given', async () => {
  const metrics = new EdgeMetrics({ keyLabels: { enabled: true, keys: ['key_c'], maxKeys: 100 } });
  for (const keyId of ['key_a', 'key_b', 'key_c']) metrics.recordRequest({ ...success, keyId });
  const text = await metrics.registry.metrics();
  expect(text).toContain('iop_key_requests_total{key="key_c",model="house",status="200"} 1');
  expect(text).toContain('iop_key_requests_total{key="other",model="house",status="200"} 2');
  expect(text.match(/^iop_key_requests_total\{/gm)).toHaveLength(2);
});
