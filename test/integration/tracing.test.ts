/**
 * OpenTelemetry tracing end to end: an in-process OTLP/HTTP collector (JSON, `POST /v1/traces`)
 * receives the spans of a real edge and agent started with the standard `OTEL_*` variables. One
 * request whose first attempt gets a 500 from the backend is retried; its trace is one tree:
 *
 *   chat sim-model (edge, SERVER; parent: the client's traceparent)
 *   ├─ iop.attempt 1 ─ iop.queue, iop.pool.pick, iop.tunnel.run ─ iop.agent.run (agent) ─ iop.backend.request
 *   └─ iop.attempt 2 ─ (the same)
 *
 * and the backend received the traceparent of its own `iop.backend.request` span. Log lines of
 * the request carry its trace_id. The request span carries the OpenTelemetry GenAI attributes of
 * its answer: `gen_ai.provider.name` (the agent's label), `gen_ai.usage.*` equal to the usage the
 * client saw, and `gen_ai.response.finish_reasons`, on the relayed and the normalized path.
 */
import Anthropic from '@anthropic-ai/sdk';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import {
  API_KEY,
  eventually,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type Proc,
  type SimHandle,
} from './harness';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{
    key: string;
    value: {
      stringValue?: string;
      intValue?: string | number;
      boolValue?: boolean;
      arrayValue?: { values?: Array<{ stringValue?: string }> };
    };
  }>;
}
interface CollectedSpan extends OtlpSpan {
  service: string;
}

const spans: CollectedSpan[] = [];
let collector: http.Server;
let edge: EdgeHandle;
let sim: SimHandle;
let agent: Proc;
const savedEnv = { ...process.env };

function attribute(span: OtlpSpan, key: string): string | number | boolean | string[] | undefined {
  const value = span.attributes?.find((entry) => entry.key === key)?.value;
  if (value === undefined) return undefined;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map((item) => String(item.stringValue));
  return value.stringValue ?? (value.intValue === undefined ? value.boolValue : Number(value.intValue));
}

beforeAll(async () => {
  collector = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{
            resource: { attributes: OtlpSpan['attributes'] };
            scopeSpans: Array<{ spans: OtlpSpan[] }>;
          }>;
        };
        for (const resourceSpans of body.resourceSpans) {
          const service = String(
            resourceSpans.resource.attributes?.find((entry) => entry.key === 'service.name')?.value.stringValue,
          );
          for (const scope of resourceSpans.scopeSpans)
            for (const span of scope.spans) spans.push({ ...span, service });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  // Inherited by the processes the harness starts: the standard variables turn tracing on.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '5']);
  edge = await startEdge({ args: ['--max-body-bytes', '1048576'] });
  // What serves it, named as OpenTelemetry's gen_ai.provider.name (the sim stands in for vLLM).
  agent = await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-traced',
    backendUrl: sim.url,
    models: ['sim-model'],
    args: ['--labels', 'gen_ai.provider.name=vllm'],
  });
});

afterAll(async () => {
  process.env = savedEnv;
  await stopAll();
  collector.close();
});

it('traces a retried request as one tree across edge, agent and backend', async () => {
  await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fault: '500', count: 1, 'retry-after': 0 }),
  });
  const clientTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const clientSpanId = '00f067aa0ba902b7';
  const openai = new OpenAI({
    apiKey: API_KEY,
    baseURL: edge.baseURL,
    maxRetries: 0,
    defaultHeaders: { traceparent: `00-${clientTraceId}-${clientSpanId}-01` },
  });
  const completion = await openai.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 5,
  });
  expect(completion.choices[0]?.finish_reason).toBe('stop');
  expect(completion.usage?.completion_tokens).toBe(5);

  const ofTrace = () => spans.filter((span) => span.traceId === clientTraceId);
  await eventually(
    () =>
      ofTrace().filter((span) => span.name === 'iop.backend.request').length >= 2 &&
      ofTrace().some((span) => span.name === 'chat sim-model'),
    15_000,
    100,
  );
  const trace = ofTrace();
  const byId = new Map(trace.map((span) => [span.spanId, span]));
  const children = (parent: OtlpSpan, name?: string) =>
    trace.filter((span) => span.parentSpanId === parent.spanId && (name === undefined || span.name === name));

  const root = trace.find((span) => span.name === 'chat sim-model')!;
  expect(root.service).toBe('iop-edge');
  expect(root.parentSpanId).toBe(clientSpanId);
  expect(root.kind).toBe(2); // SERVER
  expect(attribute(root, 'gen_ai.operation.name')).toBe('chat');
  expect(attribute(root, 'gen_ai.request.model')).toBe('sim-model');
  expect(attribute(root, 'http.response.status_code')).toBe(200);
  expect(attribute(root, 'gen_ai.provider.name')).toBe('vllm');
  expect(attribute(root, 'gen_ai.usage.input_tokens')).toBe(completion.usage!.prompt_tokens);
  expect(attribute(root, 'gen_ai.usage.output_tokens')).toBe(5);
  expect(attribute(root, 'gen_ai.response.finish_reasons')).toEqual(['stop']);
  expect(attribute(root, 'error.type')).toBeUndefined();

  const attempts = children(root, 'iop.attempt').sort(
    (a, b) => Number(attribute(a, 'iop.attempt')) - Number(attribute(b, 'iop.attempt')),
  );
  expect(attempts.map((span) => attribute(span, 'iop.attempt'))).toEqual([1, 2]);
  for (const attempt of attempts) {
    expect(attribute(attempt, 'iop.provider.id')).toBe('agent-traced');
    expect(attribute(attempt, 'gen_ai.provider.name')).toBe('vllm');
    expect(children(attempt, 'iop.queue')).toHaveLength(1);
    expect(children(attempt, 'iop.pool.pick')).toHaveLength(1);
    const [tunnel] = children(attempt, 'iop.tunnel.run');
    expect(tunnel).toBeDefined();
    expect(tunnel!.kind).toBe(3); // CLIENT
    const [run] = children(tunnel!, 'iop.agent.run');
    expect(run?.service).toBe('iop-agent');
    const [backend] = children(run!, 'iop.backend.request');
    expect(backend?.service).toBe('iop-agent');
  }
  const statuses = attempts.map((attempt) =>
    attribute(
      children(children(children(attempt, 'iop.tunnel.run')[0]!, 'iop.agent.run')[0]!, 'iop.backend.request')[0]!,
      'http.response.status_code',
    ),
  );
  expect(statuses).toEqual([500, 200]);

  // The backend saw the traceparent of its own call's span, one per attempt.
  const received = (await simRequests(sim))
    .slice(-2)
    .map((request) => (request.headers as Record<string, string>).traceparent);
  for (const traceparent of received) {
    const [, traceId, parentId] = traceparent!.split('-');
    expect(traceId).toBe(clientTraceId);
    expect(byId.get(parentId!)?.name).toBe('iop.backend.request');
  }

  // Log lines within the request carry its trace id (edge and agent).
  // (Log lines leave at the end of each process's event-loop turn: the answer may arrive first.)
  const edgeLine = await edge.proc.waitFor(
    (line) => line.msg === 'request completed' && line.trace_id === clientTraceId,
    5_000,
  );
  expect(edgeLine).toBeDefined();
  await agent.waitFor((line) => line.trace_id === clientTraceId, 5_000);
});

it('the request span carries the usage and finish reasons of streamed answers, relayed and normalized', async () => {
  const rootOf = async (traceId: string) => {
    await eventually(
      () => spans.some((span) => span.traceId === traceId && span.name === 'chat sim-model'),
      15_000,
      100,
    );
    return spans.find((span) => span.traceId === traceId && span.name === 'chat sim-model')!;
  };
  const traceparent = (traceId: string) => ({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` });

  // Relayed (passthrough): cut at max_tokens, finish_reason "length".
  const relayedTrace = '5bf92f3577b34da6a3ce929d0e0e4737';
  const openai = new OpenAI({
    apiKey: API_KEY,
    baseURL: edge.baseURL,
    maxRetries: 0,
    defaultHeaders: traceparent(relayedTrace),
  });
  const stream = await openai.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hello there' }],
    max_tokens: 3,
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage: OpenAI.CompletionUsage | undefined;
  const reasons: string[] = [];
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) if (choice.finish_reason) reasons.push(choice.finish_reason);
  }
  expect(reasons).toEqual(['length']);
  const relayed = await rootOf(relayedTrace);
  expect(attribute(relayed, 'gen_ai.response.finish_reasons')).toEqual(['length']);
  expect(attribute(relayed, 'gen_ai.usage.input_tokens')).toBe(usage!.prompt_tokens);
  expect(attribute(relayed, 'gen_ai.usage.output_tokens')).toBe(3);
  expect(attribute(relayed, 'gen_ai.provider.name')).toBe('vllm');

  // Normalized (Anthropic Messages through the gate): end_turn to the client, "stop" in OpenTelemetry's terms.
  const normalizedTrace = '6bf92f3577b34da6a3ce929d0e0e4738';
  const anthropic = new Anthropic({
    apiKey: API_KEY,
    baseURL: edge.url,
    maxRetries: 0,
    defaultHeaders: traceparent(normalizedTrace),
  });
  const message = await anthropic.messages
    .stream({ model: 'sim-model', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] })
    .finalMessage();
  expect(message.stop_reason).toBe('end_turn');
  const normalized = await rootOf(normalizedTrace);
  expect(attribute(normalized, 'gen_ai.response.finish_reasons')).toEqual(['stop']);
  expect(attribute(normalized, 'gen_ai.usage.input_tokens')).toBe(message.usage.input_tokens);
  expect(attribute(normalized, 'gen_ai.usage.output_tokens')).toBe(message.usage.output_tokens);
  expect(attribute(normalized, 'gen_ai.provider.name')).toBe('vllm');
});
