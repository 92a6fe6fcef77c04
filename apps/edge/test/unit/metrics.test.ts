/**
 * EdgeMetrics.recordRequest: one call fills iop's request series and the OpenTelemetry GenAI ones
 * (gen-ai-metrics: time per output token = (duration − TTFT) / (output tokens − 1)); a failed
 * request records only its duration with `error_type`.
 */
import { EdgeMetrics } from '../../src/metrics';

const base = {
  dialect: 'openai-chat',
  model: 'house',
  servedModel: 'Qwen/Qwen3-8B',
  agent: 'gpu-1',
  status: 200,
  response: { mode: 'normalized' as const, policy: 'evidence-tail' },
};

it('derives the time per output token from duration, TTFT and completion tokens', async () => {
  const metrics = new EdgeMetrics();
  metrics.recordRequest({ ...base, durationSeconds: 1.1, ttftSeconds: 0.1, usage: { inputTokens: 30, outputTokens: 11 }, errorType: undefined });
  const text = await metrics.registry.metrics();
  expect(text).toContain(
    'iop_requests_total{dialect="openai-chat",model="house",served_model="Qwen/Qwen3-8B",agent="gpu-1",status="200",mode="normalized",policy="evidence-tail"} 1',
  );
  expect(text).toContain('iop_time_per_output_token_seconds_sum{dialect="openai-chat",model="house"} 0.1');
  expect(text).toContain(
    'gen_ai_server_time_per_output_token_seconds_sum{gen_ai_operation_name="chat",gen_ai_request_model="house",gen_ai_response_model="Qwen/Qwen3-8B"} 0.1',
  );
  expect(text).toContain(
    'gen_ai_server_time_to_first_token_seconds_sum{gen_ai_operation_name="chat",gen_ai_request_model="house",gen_ai_response_model="Qwen/Qwen3-8B"} 0.1',
  );
  expect(text).toContain(
    'gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_request_model="house",gen_ai_response_model="Qwen/Qwen3-8B",gen_ai_token_type="input"} 30',
  );
  expect(text).toContain(
    'gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_request_model="house",gen_ai_response_model="Qwen/Qwen3-8B",gen_ai_token_type="output"} 11',
  );
  expect(text).toContain(
    'gen_ai_server_request_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_request_model="house",gen_ai_response_model="Qwen/Qwen3-8B",error_type=""} 1',
  );
  expect(text).toContain('iop_request_duration_seconds_sum{dialect="openai-chat",model="house"} 1.1');
});

it('records a failed request with error_type and no latency or token series', async () => {
  const metrics = new EdgeMetrics();
  metrics.recordRequest({
    ...base,
    servedModel: undefined,
    agent: undefined,
    status: 503,
    durationSeconds: 0.01,
    ttftSeconds: undefined,
    usage: undefined,
    errorType: 'no_capacity',
    response: { mode: 'none', policy: 'none' },
  });
  const text = await metrics.registry.metrics();
  expect(text).toContain('iop_requests_total{dialect="openai-chat",model="house",served_model="none",agent="none",status="503",mode="none",policy="none"} 1');
  expect(text).toContain(
    'gen_ai_server_request_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_request_model="house",gen_ai_response_model="none",error_type="no_capacity"} 1',
  );
  expect(text).not.toMatch(/^gen_ai_server_time_to_first_token_seconds_count/m);
  expect(text).not.toMatch(/^gen_ai_client_token_usage_count/m);
});
