/**
 * The Grafana dashboard (deploy/grafana/iop-dashboard.json) and the Prometheus alert rules
 * (deploy/prometheus/iop-alerts.yml) query only metrics that a running edge and agent export:
 * every metric selector in them (`name{…}`) is a `# TYPE` in the `/metrics` of a real edge or
 * agent (histograms by their `_bucket`, `_sum`, `_count` series). One streamed request then shows
 * the request series with their labels filled in, on both processes, and the agent's probe
 * endpoints answer. Request and token series say how each answer was produced: a plain chat
 * stream is relayed (`mode="passthrough"`, no gate policy), an Anthropic Messages request goes
 * through the stream gate (`mode="normalized"` with the default `evidence-tail` policy). After
 * a success and a failure, every label the queries select or group by is carried by the metrics
 * they query (a success has no `error_type` label: OpenTelemetry sets `error.type` only on errors),
 * and the GenAI series carry the required `gen_ai_provider_name`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { parse } from 'yaml';
import {
  API_KEY,
  ROOT,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type Proc,
  type SimHandle,
} from './harness';

let sim: SimHandle;
let edge: EdgeHandle;
let agent: Proc;
let agentUrl: string;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '8', '--ttft-ms', '30', '--itl-ms', '5']);
  // Per-key series on (the dashboard's per-key panels query them), bounded to 5 keys.
  edge = await startEdge({ args: ['--metrics-key-labels-enabled', 'true', '--metrics-key-labels-max-keys', '5'] });
  agent = await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-dash',
    backendUrl: sim.url,
    models: ['sim-model'],
  });
  const ready = await agent.ready();
  agentUrl = `http://127.0.0.1:${ready.metricsPort as number}`;
});

afterAll(stopAll);

/** Metric names of the `# TYPE` lines, with their type. */
function types(exposition: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(match[1]!, match[2]!);
  return out;
}

/** The dashboard's and the alert rules' PromQL expressions. */
function queries(): string[] {
  const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/iop-dashboard.json'), 'utf8')) as {
    panels: Array<{ targets: Array<{ expr: string }> }>;
  };
  const rules = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/iop-alerts.yml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ expr: string }> }>;
  };
  return [
    ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr)),
    ...rules.groups.flatMap((group) => group.rules.map((rule) => rule.expr)),
  ];
}

/** Labels of every series of `name` (histograms by their `_bucket`, `_sum`, `_count`) in an exposition. */
function seriesLabels(exposition: string, name: string): Set<string> {
  const base = name.replace(/_(bucket|sum|count)$/, '');
  const labels = new Set<string>();
  for (const match of exposition.matchAll(/^([a-z_:][a-z0-9_:]*)\{([^}]*)\}/gm)) {
    const series = match[1]!;
    if (series !== name && series.replace(/_(bucket|sum|count)$/, '') !== base) continue;
    for (const label of match[2]!.matchAll(/([a-z_][a-z0-9_]*)="/g)) labels.add(label[1]!);
  }
  return labels;
}

/** Every metric selector `name{` of iop's own series in PromQL expressions. */
function selectors(expressions: string[]): Set<string> {
  const names = new Set<string>();
  for (const expression of expressions)
    for (const match of expression.matchAll(/\b((?:iop|gen_ai)_[a-z0-9_]+)\{/g)) names.add(match[1]!);
  return names;
}

function exported(name: string, known: Map<string, string>): boolean {
  if (known.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && (known.get(base) === 'histogram' || known.get(base) === 'summary');
}

it('edge and agent log JSON lines with the same ISO 8601 UTC time format, and the agent names its backend first', async () => {
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
  expect(String(edge.proc.lines[0]!.time)).toMatch(iso);
  expect(String(agent.lines[0]!.time)).toMatch(iso);
  expect(agent.lines[0]).toMatchObject({ name: 'iop-agent', agentId: 'agent-dash' });
  const starting = agent.lines.find((line) => line.msg === 'agent starting')!;
  expect(starting).toMatchObject({
    backend: 'openai',
    backendUrl: sim.url,
    models: ['sim-model'],
    maxConcurrency: 16,
    edges: [`http://127.0.0.1:${edge.tunnelPort}`],
    metricsHost: '127.0.0.1',
  });
});

it('serves /healthz and /readyz on the agent port', async () => {
  const health = await fetch(`${agentUrl}/healthz`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'ok' });
  const ready = await fetch(`${agentUrl}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({
    status: 'ready',
    edges: [{ edge: `http://127.0.0.1:${edge.tunnelPort}`, registered: true }],
  });
  expect((await fetch(`${agentUrl}/nope`)).status).toBe(404);
  expect((await fetch(`${agentUrl}/metrics`, { method: 'POST' })).status).toBe(405);
});

it('every metric the dashboard and the alert rules query is exported by the edge or the agent', async () => {
  const known = new Map([
    ...types(await (await fetch(`${edge.url}/metrics`)).text()),
    ...types(await (await fetch(`${agentUrl}/metrics`)).text()),
  ]);
  const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/iop-dashboard.json'), 'utf8')) as {
    panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
  };
  const rules = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/iop-alerts.yml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
  };
  const panelExprs = dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr));
  const ruleExprs = rules.groups.flatMap((group) => group.rules.map((rule) => rule.expr));
  expect(dashboard.panels.length).toBeGreaterThanOrEqual(15);
  expect(rules.groups[0]!.rules.map((rule) => rule.alert)).toEqual(
    expect.arrayContaining([
      'IopNoHealthyAgent',
      'IopHighErrorRatio',
      'IopTtftP99High',
      'IopQueueSaturated',
      'IopProviderEjected',
    ]),
  );
  const queried = selectors([...panelExprs, ...ruleExprs]);
  expect(queried.size).toBeGreaterThanOrEqual(25);
  const missing = [...queried].filter((name) => !exported(name, known));
  expect(missing).toEqual([]);
});

it('fills the request series of edge and agent for a streamed request', async () => {
  const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  const stream = await openai.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
    stream: true,
    stream_options: { include_usage: true },
  });
  let completionTokens = 0;
  for await (const chunk of stream) if (chunk.usage) completionTokens = chunk.usage.completion_tokens;
  expect(completionTokens).toBe(8);

  const edgeText = await (await fetch(`${edge.url}/metrics`)).text();
  expect(edgeText).toContain(
    'iop_requests_total{dialect="openai-chat",model="sim-model",served_model="sim-model",agent="agent-dash",status="200",mode="passthrough",policy="none"} 1',
  );
  expect(edgeText).toMatch(
    /^gen_ai_server_time_to_first_token_seconds_count\{gen_ai_operation_name="chat",gen_ai_provider_name="openai_compatible",gen_ai_request_model="sim-model",gen_ai_response_model="sim-model"\} 1$/m,
  );
  // 8 tokens 5 ms apart: about 5 ms per output token. The sim keeps an absolute schedule (a token
  // late on a loaded machine is followed by the ones already due at once), so only the order of
  // magnitude is certain: more than 1 ms, less than 50.
  const tpot = /^iop_time_per_output_token_seconds_sum\{dialect="openai-chat",model="sim-model"\} (\S+)$/m.exec(
    edgeText,
  );
  expect(Number(tpot?.[1])).toBeGreaterThan(0.001);
  expect(Number(tpot?.[1])).toBeLessThan(0.05);
  expect(edgeText).toMatch(/^gen_ai_client_token_usage_sum\{[^}]*gen_ai_token_type="output"\} 8$/m);
  expect(edgeText).toMatch(/^iop_agents\{state="healthy"\} 1$/m);
  expect(edgeText).toMatch(/^iop_pool_agent_max_concurrency\{agent="agent-dash"\} 16$/m);
  expect(edgeText).toMatch(/^iop_tunnel_frames_total\{kind="end"\} [1-9]/m);
  expect(edgeText).toMatch(/^iop_requests_in_flight\{dialect="openai-chat",model="sim-model"\} 0$/m);

  const agentText = await (await fetch(`${agentUrl}/metrics`)).text();
  expect(agentText).toMatch(/^iop_agent_backend_requests_total\{model="sim-model",status="200"\} 1$/m);
  expect(agentText).toMatch(/^iop_agent_backend_request_duration_seconds_count\{model="sim-model"\} 1$/m);
  expect(agentText).toMatch(/^iop_agent_edge_registered\{edge="http:\/\/127\.0\.0\.1:\d+"\} 1$/m);
  expect(agentText).toMatch(/^iop_agent_max_concurrency 16$/m);
});

it('labels request and token series with the response mode and the gate policy', async () => {
  const anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
  const message = await anthropic.messages.create({
    model: 'sim-model',
    max_tokens: 8,
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(message.usage.output_tokens).toBe(8);

  const edgeText = await (await fetch(`${edge.url}/metrics`)).text();
  expect(edgeText).toContain(
    'iop_requests_total{dialect="anthropic-messages",model="sim-model",served_model="sim-model",agent="agent-dash",status="200",mode="normalized",policy="evidence-tail"} 1',
  );
  expect(edgeText).toContain(
    'iop_requests_total{dialect="openai-chat",model="sim-model",served_model="sim-model",agent="agent-dash",status="200",mode="passthrough",policy="none"} 1',
  );
  // One 8-token answer on each path.
  expect(edgeText).toContain(
    'iop_tokens_total{model="sim-model",kind="completion",attempt="answer",mode="normalized",policy="evidence-tail"} 8',
  );
  expect(edgeText).toContain(
    'iop_tokens_total{model="sim-model",kind="completion",attempt="answer",mode="passthrough",policy="none"} 8',
  );
});

it('every label the dashboard and the alert rules select or group by is on the metrics they query', async () => {
  const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  await openai.chat.completions.create({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 4,
  });
  // A failure: the only requests whose series carry error_type.
  await expect(
    openai.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
  ).rejects.toMatchObject({ status: 404 });
  const exposition = `${await (await fetch(`${edge.url}/metrics`)).text()}\n${await (await fetch(`${agentUrl}/metrics`)).text()}`;
  // Added by Prometheus at scrape time, or the histogram bucket bound.
  const scraped = new Set(['job', 'instance', 'le']);
  const missing: string[] = [];
  let checked = 0;
  for (const expression of queries()) {
    const names = [...expression.matchAll(/\b((?:iop|gen_ai)_[a-z0-9_]+)\{([^}]*)\}/g)];
    // Only series that have samples show their labels (no queue rejection or ejection happened here).
    const observed = names.filter(([, name]) => seriesLabels(exposition, name!).size > 0);
    if (observed.length === 0) continue;
    checked++;
    const onAny = new Set(observed.flatMap(([, name]) => [...seriesLabels(exposition, name!)]));
    for (const [, name, matchers] of observed)
      for (const [, label] of matchers!.matchAll(/([a-z_][a-z0-9_]*)\s*(?:=~|!~|!=|=)/g))
        if (!scraped.has(label!) && !seriesLabels(exposition, name!).has(label!)) missing.push(`${name}{${label}}`);
    if (observed.length < names.length) continue; // a `by` may name a label of the series not observed
    for (const [, grouped] of expression.matchAll(/\bby \(([^)]*)\)/g))
      for (const label of grouped!.split(',').map((part) => part.trim()))
        if (!scraped.has(label) && !onAny.has(label)) missing.push(`by (${label}) in ${expression}`);
  }
  expect(missing).toEqual([]);
  expect(checked).toBeGreaterThanOrEqual(30);
  // Successes carry no error_type (not even an empty one); the failure does; all carry the provider.
  expect(exposition).not.toContain('error_type=""');
  expect(exposition).toMatch(
    /^gen_ai_server_request_duration_seconds_count\{gen_ai_operation_name="chat",gen_ai_provider_name="openai_compatible",gen_ai_request_model="sim-model",gen_ai_response_model="sim-model"\} [1-9]/m,
  );
  expect(exposition).toMatch(
    /^gen_ai_server_request_duration_seconds_count\{gen_ai_operation_name="chat",gen_ai_provider_name="none",gen_ai_request_model="unknown",gen_ai_response_model="none",error_type="model_not_found"\} 1$/m,
  );
  // Per key: the harness's one plain API key (`legacy:<hash prefix>`).
  expect(exposition).toMatch(/^iop_key_requests_total\{key="legacy:[0-9a-f]+",model="sim-model",status="200"\} [1-9]/m);
  expect(exposition).toMatch(
    /^iop_key_tokens_total\{key="legacy:[0-9a-f]+",model="sim-model",kind="completion"\} [1-9]/m,
  );
});
