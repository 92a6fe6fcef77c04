/**
 * Cache-aware routing through real processes (docs/decisions/007-cache-aware-routing.md): two
 * sims on the `gpu-h100-8b` profile publish their KV-cache events over ZMQ (vLLM's wire format,
 * with replay sockets); two agents, each in front of one sim and joined to both edges, follow
 * them and report which of the edges' prefix keys their caches hold. Prefix affinity is off on
 * the edges, so without residency the pool's P2C would split a session's turns between the
 * agents at random.
 */
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import OpenAI from 'openai';
import { sleep } from '@iop/core';
import { AgentMessageSchema, CONTROL_PATH, GrpcMessageReader, decodeEdgeMessage, grpcFrame } from '@iop/proto';
import {
  API_KEY,
  JOIN_TOKEN,
  eventually,
  metricSum,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type Proc,
  type SimHandle,
} from './harness';

const ADMIN_KEY = 'iop-admin-key-kv-routing-01';
const MODEL = 'sim-model';
const SMALL_MODEL = 'small-model';

afterAll(stopAll);

let edges: EdgeHandle[];
const sims = new Map<string, SimHandle>();
const agents = new Map<string, Proc>();

async function startKvSim(model = MODEL, extra: string[] = []): Promise<SimHandle> {
  return startSim([
    ...extra,
    '--models',
    model,
    '--profile',
    'gpu-h100-8b',
    '--time-scale',
    '0.01',
    '--output-tokens',
    '8',
    '--kv-events-endpoint',
    'tcp://127.0.0.1:*',
    '--kv-events-replay-endpoint',
    'tcp://127.0.0.1:*',
  ]);
}

async function startKvAgent(id: string, sim: SimHandle, model = MODEL): Promise<Proc> {
  const proc = await startAgent({
    tunnelPort: edges[0]!.tunnelPort,
    id,
    backendUrl: sim.url,
    models: [model],
    args: [
      '--edge',
      edges.map((edge) => `http://127.0.0.1:${edge.tunnelPort}`).join(','),
      '--kv-events-endpoint',
      String(sim.ready.kvEventsEndpoint),
      '--kv-events-replay-endpoint',
      String(sim.ready.kvEventsReplayEndpoint),
      '--reconnect-jitter-ms',
      '100',
    ],
  });
  agents.set(id, proc);
  return proc;
}

/**
 * Resident prefix keys (or their cached tokens) per registered agent id, as `GET /admin/agents` of `edge` shows them.
 */
async function residentPrefixes(
  edge: EdgeHandle,
  figure: 'residentPrefixes' | 'residentTokens' = 'residentPrefixes',
): Promise<Record<string, number>> {
  const response = await fetch(`${edge.url}/admin/agents`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  const agents = (
    (await response.json()) as { data: Array<{ id: string; residentPrefixes: number; residentTokens: number }> }
  ).data;
  return Object.fromEntries(agents.map((agent) => [agent.id, agent[figure]]));
}

/** Agent ids registered with `edge` (`GET /admin/agents`). */
async function registered(edge: EdgeHandle): Promise<string[]> {
  const response = await fetch(`${edge.url}/admin/agents`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  return ((await response.json()) as { data: Array<{ id: string }> }).data.map((agent) => agent.id);
}

async function agentMetric(agent: Proc, name: string, labels: Record<string, string> = {}): Promise<number> {
  const port = agent.lines.find((line) => line.event === 'ready')?.metricsPort as number;
  return metricSum(`http://127.0.0.1:${port}`, name, labels);
}

/** A system prompt of a few hundred tokens (many 16-token blocks), distinct per project. */
const systemPrompt = (project: string) =>
  `You are the coding agent of project ${project}. ` +
  Array.from({ length: 240 }, (_, i) => `rule${i} ${project}`).join(' ') +
  '.';

type Message = { role: 'system' | 'user' | 'assistant'; content: string };

/** One turn through `edge`: the serving agent's id and the assistant's answer. */
async function turn(edge: EdgeHandle, messages: Message[]): Promise<{ agent: string; answer: string }> {
  const openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  const { data, response } = await openai.chat.completions
    .create({ model: MODEL, max_tokens: 8, messages })
    .withResponse();
  return { agent: response.headers.get('x-iop-agent-id') ?? '', answer: data.choices[0]?.message.content ?? '' };
}

/** How long a finished run's prefix takes to be mapped and reported (coalesced every 150 ms), with margin, ms. */
const REPORT_WAIT_MS = 800;

/**
 * Runs a session of `turns` turns (each after the previous one's prompt had time to be reported) and returns the agent
 * of each turn.
 */
async function session(edge: EdgeHandle, project: string, name: string, turns: number): Promise<string[]> {
  const messages: Message[] = [{ role: 'system', content: systemPrompt(project) }];
  const served: string[] = [];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'user', content: question(name, i) });
    const { agent, answer } = await turn(edge, messages);
    served.push(agent);
    messages.push({ role: 'assistant', content: answer });
    await sleep(REPORT_WAIT_MS);
  }
  return served;
}

const question = (name: string, i: number) =>
  `${name} asks question ${i}: ` + Array.from({ length: 40 }, (_, j) => `word${j}${name}${i}`).join(' ');

beforeAll(async () => {
  const edgeArgs = ['--admin-keys', ADMIN_KEY];
  const env = { IOP_POOL_AFFINITY_ENABLED: 'false' };
  edges = [await startEdge({ args: edgeArgs, env }), await startEdge({ args: edgeArgs, env })];
  for (const id of ['kv-a', 'kv-b']) {
    const sim = await startKvSim();
    sims.set(id, sim);
    await startKvAgent(id, sim);
  }
  // A third agent on a small cache (48 blocks of 16 tokens) serving its own model: evictions.
  const small = await startKvSim(SMALL_MODEL, ['--num-gpu-blocks', '48']);
  sims.set('kv-small', small);
  await startKvAgent('kv-small', small, SMALL_MODEL);
  for (const edge of edges) await eventually(async () => (await registered(edge)).length === 3, 20_000);
}, 60_000);

it('keeps every later turn of a session on the agent whose cache holds its prefix, and both edges see it', async () => {
  // One after the other: the bounded load (c = 1.25) would spill concurrent sessions off a busy agent.
  const sessions: string[][] = [];
  for (const [i, name] of ['s1', 's2', 's3', 's4'].entries()) sessions.push(await session(edges[0]!, `p${i}`, name, 3));
  for (const served of sessions) expect(served.slice(1)).toEqual([served[0], served[0]]);
  // Without residency P2C splits first turns at random; with it, later turns never move: 8 of 8.
  const picked = await metricSum(edges[0]!.url, 'iop_residency_picks_total', { result: 'resident' });
  expect(picked).toBeGreaterThanOrEqual(8);
  // The agents report to both edges: the second edge sends a session's next turn to its holder too.
  const [a, b] = [await residentPrefixes(edges[0]!), await residentPrefixes(edges[1]!)];
  expect(b).toEqual(a);
  const owner = sessions[0]![0]!;
  const messages: Message[] = [
    { role: 'system', content: systemPrompt('p0') },
    { role: 'user', content: question('s1', 0) },
  ];
  expect((await turn(edges[1]!, messages)).agent).toBe(owner);
}, 120_000);

it('forgets an agent’s residency when its cache is cleared (AllBlocksCleared)', async () => {
  const before = await residentPrefixes(edges[0]!);
  const [id] = Object.entries(before).find(([, count]) => count > 0)!;
  const reset = await fetch(`${sims.get(id)!.url}/reset_prefix_cache`, { method: 'POST' });
  expect(reset.status).toBe(200);
  for (const edge of edges) await eventually(async () => (await residentPrefixes(edge))[id] === 0, 10_000);
  // The other agent's residency is untouched.
  const other = id === 'kv-a' ? 'kv-b' : 'kv-a';
  expect((await residentPrefixes(edges[0]!))[other]).toBe(before[other]);
}, 30_000);

it('lowers a prefix’s residency when the engine evicts its blocks (BlockRemoved)', async () => {
  const openai = new OpenAI({ apiKey: API_KEY, baseURL: edges[0]!.baseURL, maxRetries: 0 });
  const messages: Message[] = [
    { role: 'system', content: systemPrompt('small') }, // ~500 tokens: ~31 of the 48 blocks
    { role: 'user', content: question('evicted', 0) },
  ];
  await openai.chat.completions.create({ model: SMALL_MODEL, max_tokens: 8, messages });
  await eventually(async () => ((await residentPrefixes(edges[0]!, 'residentTokens'))['kv-small'] ?? 0) >= 480, 10_000);
  const before = (await residentPrefixes(edges[0]!, 'residentTokens'))['kv-small']!;
  // Another prompt of ~40 blocks, straight to the sim: the free blocks of the first go, last block first.
  await fetch(`${sims.get('kv-small')!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: SMALL_MODEL,
      max_tokens: 4,
      messages: [{ role: 'user', content: 'other '.repeat(600) }],
    }),
  });
  for (const edge of edges)
    await eventually(async () => (await residentPrefixes(edge, 'residentTokens'))['kv-small']! < before / 2, 10_000);
}, 30_000);

it('repairs a dropped event batch from the replay socket, without a resync', async () => {
  const agent = 'kv-a';
  const sim = sims.get(agent)!;
  const replayedBefore = await agentMetric(agents.get(agent)!, 'iop_agent_kv_event_batches_total', {
    result: 'replayed',
  });
  const resyncsBefore = await agentMetric(agents.get(agent)!, 'iop_agent_kv_event_resyncs_total');
  const replayed = async () =>
    agentMetric(agents.get(agent)!, 'iop_agent_kv_event_batches_total', { result: 'replayed' });
  // A drop lands on the next batch the sim publishes, which may be one already under way (an
  // eviction of an earlier test): up to three rounds of drop + runs until a replay is seen.
  for (let round = 0; round < 3 && (await replayed()) === replayedBefore; round++) {
    const dropped = await fetch(`${sim.url}/_sim/kv-events/drop`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"count":1}',
    });
    expect(dropped.ok).toBe(true);
    // Runs straight on that sim publish batches: the first is dropped, the next shows the gap.
    for (let i = 0; i < 3; i++) {
      await fetch(`${sim.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          max_tokens: 4,
          messages: [{ role: 'user', content: `direct ${round} ${i} ` + 'tokens '.repeat(64) }],
        }),
      });
    }
    await eventually(async () => (await replayed()) > replayedBefore, 5_000).catch(() => undefined);
  }
  expect(await replayed()).toBeGreaterThan(replayedBefore);
  expect(await agentMetric(agents.get(agent)!, 'iop_agent_kv_event_resyncs_total')).toBe(resyncsBefore);
}, 30_000);

it('refuses a malformed or oversized residency report with a reason and a metric, and keeps serving', async () => {
  const session = http2.connect(`http://127.0.0.1:${edges[0]!.tunnelPort}`);
  session.on('error', () => undefined);
  try {
    const stream = session.request({
      ':method': 'POST',
      ':path': CONTROL_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => undefined);
    const reader = new GrpcMessageReader();
    const seen: string[] = [];
    stream.on('data', (chunk: Buffer) =>
      reader.push(chunk, (message) => seen.push(String(decodeEdgeMessage(message.payload).message.case))),
    );
    const send = (message: Parameters<typeof create<typeof AgentMessageSchema>>[1]) =>
      stream.write(grpcFrame(toBinary(AgentMessageSchema, create(AgentMessageSchema, message))));
    send({
      message: {
        case: 'register',
        value: {
          agentId: 'kv-rogue',
          joinToken: JOIN_TOKEN,
          models: [{ id: 'other-model' }],
          maxConcurrency: 1,
          capabilities: ['kv-events'],
        },
      },
    });
    await eventually(() => seen.includes('registered'), 5_000);
    send({
      message: {
        case: 'residency',
        value: { prefixes: Array.from({ length: 5_000 }, (_, i) => ({ key: BigInt(i + 1), cachedTokens: 16 })) },
      },
    });
    send({ message: { case: 'residency', value: { prefixes: [{ key: 2n ** 60n, cachedTokens: 16 }] } } });
    send({ message: { case: 'residency', value: { prefixes: [{ key: 7n, cachedTokens: 4_000_000_000 }] } } });
    for (const reason of ['too_many_prefixes', 'bad_key', 'absurd_tokens']) {
      await eventually(
        async () => (await metricSum(edges[0]!.url, 'iop_residency_reports_refused_total', { reason })) === 1,
        5_000,
      );
      expect(
        edges[0]!.proc.lines.some(
          (line) => line.msg === 'residency report refused' && line.reason === reason && line.agentId === 'kv-rogue',
        ),
      ).toBe(true);
    }
    // A valid report is written under its own session only, and goes with it.
    const others = await residentPrefixes(edges[0]!);
    send({ message: { case: 'residency', value: { prefixes: [{ key: 99n, cachedTokens: 64 }] } } });
    await eventually(async () => (await residentPrefixes(edges[0]!))['kv-rogue'] === 1, 5_000);
    const after = await residentPrefixes(edges[0]!);
    expect({ 'kv-a': after['kv-a'], 'kv-b': after['kv-b'] }).toEqual({
      'kv-a': others['kv-a'],
      'kv-b': others['kv-b'],
    });
  } finally {
    session.destroy();
  }
  await eventually(async () => !('kv-rogue' in (await residentPrefixes(edges[0]!))), 10_000);
  const openai = new OpenAI({ apiKey: API_KEY, baseURL: edges[0]!.baseURL, maxRetries: 0 });
  const answer = await openai.chat.completions.create({
    model: MODEL,
    max_tokens: 4,
    messages: [{ role: 'user', content: 'still there?' }],
  });
  expect(answer.choices[0]?.message.content).toBeTruthy();
}, 30_000);

it('clears an agent’s residency when it restarts', async () => {
  const messages: Message[] = [
    { role: 'system', content: systemPrompt('restart') },
    { role: 'user', content: 'a question before the restart' },
  ];
  const { agent } = await turn(edges[0]!, messages);
  for (const edge of edges) await eventually(async () => ((await residentPrefixes(edge))[agent] ?? 0) > 0, 10_000);
  await agents.get(agent)!.kill();
  for (const edge of edges) await eventually(async () => !(await registered(edge)).includes(agent), 20_000);
  await startKvAgent(agent, sims.get(agent)!);
  for (const edge of edges) await eventually(async () => (await registered(edge)).includes(agent), 20_000);
  // The new process knows no block the old one saw: nothing is reported until it serves again.
  await sleep(REPORT_WAIT_MS);
  for (const edge of edges) expect((await residentPrefixes(edge))[agent]).toBe(0);
}, 60_000);

it('gives an edge that restarts the whole residency again when the agents reconnect', async () => {
  const expected = await residentPrefixes(edges[0]!);
  expect(Object.values(expected).some((count) => count > 0)).toBe(true);
  const old = edges[1]!;
  await old.proc.kill();
  edges[1] = await startEdge({
    port: old.port,
    tunnelPort: old.tunnelPort,
    args: ['--admin-keys', ADMIN_KEY],
    env: { IOP_POOL_AFFINITY_ENABLED: 'false' },
  });
  await eventually(async () => (await registered(edges[1]!)).length === 3, 20_000);
  const sorted = (figures: Record<string, number>) => JSON.stringify(Object.entries(figures).sort());
  await eventually(async () => sorted(await residentPrefixes(edges[1]!)) === sorted(expected), 10_000);
  expect(await residentPrefixes(edges[1]!)).toEqual(expected);
}, 60_000);
