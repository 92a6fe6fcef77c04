/**
 * Capacity across edges: one agent (max concurrency 4) joined to two edges. Each edge counts the
 * runs the agent holds for the other (the agent reports its load on every change), so together
 * they never ask for more than 4 at once: under a load of 16 concurrent streams (8 per edge) the
 * backend never sees more than 4, and every request is answered — queued at its edge until a
 * slot frees, never a 503. Needs no shared store.
 */
import OpenAI from 'openai';
import { startAgent, startEdge, startSim, stopAll, API_KEY, type EdgeHandle, type SimHandle } from './harness';

let sim: SimHandle;
let edges: EdgeHandle[];

beforeAll(async () => {
  // ~0.3 s to the first token, 20 tokens at 20 ms: each stream holds its slot about 0.7 s.
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--ttft-ms', '300', '--itl-ms', '20']);
  edges = await Promise.all([startEdge({ env: { IOP_DATA_DIR: ':memory:' } }), startEdge({ env: { IOP_DATA_DIR: ':memory:' } })]);
  await startAgent({ tunnelPort: edges[0]!.tunnelPort, id: 'agent-4', backendUrl: sim.url, args: ['--edge', edges.map((edge) => `http://127.0.0.1:${edge.tunnelPort}`).join(','), '--max-concurrency', '4'] });
  await edges[1]!.proc.waitFor((line) => line.msg === 'agent registered', 30_000);
}, 60_000);

afterAll(stopAll);

it('an agent joined to two edges is never asked for more than its max concurrency, and overload queues instead of failing', async () => {
  let maxInFlight = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const stats = (await (await fetch(`${sim.url}/_sim/stats`)).json()) as { inFlight: number };
      maxInFlight = Math.max(maxInFlight, stats.inFlight);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const clients = edges.map((edge) => new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0, timeout: 60_000 }));
  const started = performance.now();
  const outcomes = await Promise.all(
    Array.from({ length: 16 }, async (_, i) => {
      try {
        const stream = await clients[i % 2]!.chat.completions.create({ model: 'sim-model', stream: true, messages: [{ role: 'user', content: `story ${i}` }] });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        return { ok: text.length > 0, status: 200 };
      } catch (error) {
        return { ok: false, status: (error as { status?: number }).status ?? 0 };
      }
    }),
  );
  const wallMs = performance.now() - started;
  sampling = false;
  await sampler;
  expect(outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
  expect(maxInFlight).toBeLessThanOrEqual(4);
  expect(maxInFlight).toBeGreaterThanOrEqual(3); // the slots were used, not idle
  // 16 streams of ~0.7 s through 4 slots take at least 4 rounds.
  expect(wallMs).toBeGreaterThan(4 * 600);
  // No attempt was lost to a rejection: an edge that raced another for the last slot waited at the agent.
  const rejected = edges.flatMap((edge) => edge.proc.lines.filter((line) => line.failure === 'rejected'));
  expect(rejected).toEqual([]);
}, 90_000);
