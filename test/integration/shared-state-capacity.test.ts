/**
 * Capacity across edges: one agent (max concurrency 4) joined to two edges. Each edge counts the
 * runs the agent holds for the other (the agent reports its load on every change), so together
 * they never ask for more than 4 at once, and overload queues at an edge until a slot frees —
 * never a 503.
 * - Without a shared store (the embedded default): 16 concurrent streams, 8 per edge.
 * - With the edges sharing PostgreSQL and Redis (IOP_TEST_PG_URL, IOP_TEST_REDIS_URL): 24 streams
 *   of ~1.5 s through both SDKs under a managed key, the backend never above 4, the shared ledger's
 *   totals equal to what the clients saw; and a key's `maxConcurrentStreams` held across the edges
 *   through Redis (the third stream on either edge is a 429 in its dialect with Retry-After).
 */
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  edgeReady,
  eventually,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  API_KEY,
  type EdgeHandle,
  type SimHandle,
} from './harness';
import { admin, describeWithSharedState, dropIsolation, startSharedEdges, isolation } from './shared-state-helpers';
import { sleep } from '@iop/core';

describe('capacity across two edges without a shared store', () => {
  let sim: SimHandle;
  let edges: EdgeHandle[];

  beforeAll(async () => {
    // ~0.3 s to the first token, 20 tokens at 20 ms: each stream holds its slot about 0.7 s.
    sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--ttft-ms', '300', '--itl-ms', '20']);
    edges = await Promise.all([
      startEdge({ env: { IOP_DATA_DIR: ':memory:' } }),
      startEdge({ env: { IOP_DATA_DIR: ':memory:' } }),
    ]);
    await startAgent({
      tunnelPort: edges[0]!.tunnelPort,
      id: 'agent-4',
      backendUrl: sim.url,
      args: ['--edge', edges.map((edge) => `http://127.0.0.1:${edge.tunnelPort}`).join(','), '--max-concurrency', '4'],
    });
    await edgeReady(edges[1]!);
  }, 60_000);

  afterAll(stopAll);

  it('an agent joined to two edges is never asked for more than its max concurrency, and overload queues instead of failing', async () => {
    let maxInFlight = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const stats = (await (await fetch(`${sim.url}/_sim/stats`)).json()) as { inFlight: number };
        maxInFlight = Math.max(maxInFlight, stats.inFlight);
        await sleep(20);
      }
    })();
    const clients = edges.map(
      (edge) => new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0, timeout: 60_000 }),
    );
    const started = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        try {
          const stream = await clients[i % 2]!.chat.completions.create({
            model: 'sim-model',
            stream: true,
            messages: [{ role: 'user', content: `story ${i}` }],
          });
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
});

/**
 * Highest number of chat completions the sim held at once, from its request log (receivedAt … completedAt/abortedAt).
 */
function peakOverlap(
  records: Array<{ path: string; receivedAt: number; completedAt: number | null; abortedAt: number | null }>,
): number {
  const events = records
    .filter((record) => record.path === '/v1/chat/completions')
    .flatMap((record) => [
      [record.receivedAt, 1],
      [record.completedAt ?? record.abortedAt ?? Number.POSITIVE_INFINITY, -1],
    ])
    // At equal times an end comes before a start: a slot freed and retaken in the same millisecond is not an overlap.
    .sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let open = 0;
  let peak = 0;
  for (const [, delta] of events) peak = Math.max(peak, (open += delta!));
  return peak;
}

describeWithSharedState('capacity across two edges sharing PostgreSQL and Redis', () => {
  const isolated = isolation('capacity');
  let sim: SimHandle;
  let edges: EdgeHandle[];

  async function createKey(policy: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const created = await admin(edges[0]!.url, 'POST', '/admin/keys', policy);
    expect(created.status).toBe(201);
    return { id: created.body.id as string, key: created.body.key as string };
  }

  beforeAll(async () => {
    // ~0.6 s to the first token, 30 tokens at 30 ms: each stream holds its slot about 1.5 s.
    sim = await startSim(['--models', 'sim-model', '--output-tokens', '30', '--ttft-ms', '600', '--itl-ms', '30']);
    edges = await startSharedEdges(isolated, { id: 'agent-4', simUrl: sim.url, args: ['--max-concurrency', '4'] });
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await dropIsolation(isolated);
  });

  it('24 streams over both edges and both SDKs: the agent never holds more than 4, none fails, and the ledger matches the clients', async () => {
    // A per-key stream limit far above the load: counted in Redis by both edges, never the bottleneck.
    const { id, key } = await createKey({ name: 'load', limits: { maxConcurrentStreams: 64 } });
    await fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' });
    let maxInFlight = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const stats = (await (await fetch(`${sim.url}/_sim/stats`)).json()) as { inFlight: number };
        maxInFlight = Math.max(maxInFlight, stats.inFlight);
        await sleep(20);
      }
    })();
    let input = 0;
    let output = 0;
    const started = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const edge = edges[i % 2]!;
        try {
          if (i % 4 < 2) {
            const stream = await new OpenAI({
              apiKey: key,
              baseURL: edge.baseURL,
              maxRetries: 0,
              timeout: 60_000,
            }).chat.completions.create({
              model: 'sim-model',
              stream: true,
              stream_options: { include_usage: true },
              messages: [{ role: 'user', content: `story ${i}` }],
            });
            let text = '';
            for await (const chunk of stream) {
              text += chunk.choices[0]?.delta.content ?? '';
              if (chunk.usage) {
                input += chunk.usage.prompt_tokens;
                output += chunk.usage.completion_tokens;
              }
            }
            return { ok: text.length > 0, status: 200 };
          }
          const message = await new Anthropic({
            apiKey: key,
            baseURL: edge.url,
            maxRetries: 0,
            timeout: 60_000,
          }).messages
            .stream({ model: 'sim-model', max_tokens: 64, messages: [{ role: 'user', content: `story ${i}` }] })
            .finalMessage();
          input += message.usage.input_tokens;
          output += message.usage.output_tokens;
          return { ok: message.content.length > 0 && message.stop_reason === 'end_turn', status: 200 };
        } catch (error) {
          return { ok: false, status: (error as { status?: number }).status ?? 0, message: (error as Error).message };
        }
      }),
    );
    const wallMs = performance.now() - started;
    sampling = false;
    await sampler;
    expect(outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
    expect(output).toBe(24 * 30);
    // Both views of the backend: its live gauge, sampled, and the overlap of its logged requests.
    const log = (await (await fetch(`${sim.url}/_sim/requests`)).json()) as { data: Parameters<typeof peakOverlap>[0] };
    expect(log.data.filter((record) => record.path === '/v1/chat/completions')).toHaveLength(24);
    expect(peakOverlap(log.data)).toBeLessThanOrEqual(4);
    expect(maxInFlight).toBeLessThanOrEqual(4);
    expect(maxInFlight).toBeGreaterThanOrEqual(3); // the slots were used, not idle
    // 24 streams of ~1.5 s through 4 slots take at least 6 rounds.
    expect(wallMs).toBeGreaterThan(6 * 1_300);
    const rejected = edges.flatMap((edge) => edge.proc.lines.filter((line) => line.failure === 'rejected'));
    expect(rejected).toEqual([]);

    // Each edge wrote its own rows to the shared ledger; either edge reads the totals.
    let total = { status: 0, body: {} as Record<string, unknown> };
    await eventually(
      async () => {
        await admin(edges[0]!.url, 'GET', '/admin/usage?flush=true');
        await admin(edges[1]!.url, 'GET', '/admin/usage?flush=true');
        total = await admin(edges[1]!.url, 'GET', `/admin/usage?key=${id}`);
        return (total.body.data as Array<{ requests: number }>)[0]?.requests === 24;
      },
      10_000,
      100,
    ).catch(() => {});
    expect(total.body.data).toEqual([
      {
        requests: 24,
        input_tokens: input,
        output_tokens: output,
        cached_tokens: 0,
        reasoning_tokens: 0,
        errors: 0,
        estimated_requests: 0,
        cost_usd: 0,
      },
    ]);
  }, 60_000);

  it("a key's maxConcurrentStreams holds across edges: the third stream on either edge is a 429 in its dialect", async () => {
    const { key } = await createKey({ name: 'two streams', limits: { maxConcurrentStreams: 2 } });
    // Two long streams (about 3 s each), one per edge: each edge alone holds only one.
    const slow = { headers: { 'x-sim-itl-ms': '100' } };
    const holders = await Promise.all(
      edges.map((edge, i) =>
        new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions.create(
          { model: 'sim-model', stream: true, messages: [{ role: 'user', content: `hold ${i}` }] },
          slow,
        ),
      ),
    );
    const refused = await new OpenAI({ apiKey: key, baseURL: edges[0]!.baseURL, maxRetries: 0 }).chat.completions
      .create({ model: 'sim-model', stream: true, messages: [{ role: 'user', content: 'third' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    const openaiError = refused as InstanceType<typeof OpenAI.RateLimitError>;
    expect(openaiError.code).toBe('rate_limit_exceeded');
    expect(openaiError.message).toContain('concurrency limit reached: key "two streams" allows 2 concurrent streams');
    expect(Number(openaiError.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const refusedAnthropic = await new Anthropic({ apiKey: key, baseURL: edges[1]!.url, maxRetries: 0 }).messages
      .create({ model: 'sim-model', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'third' }] })
      .catch((error: unknown) => error);
    expect(refusedAnthropic).toBeInstanceOf(Anthropic.RateLimitError);
    const anthropicError = refusedAnthropic as InstanceType<typeof Anthropic.RateLimitError>;
    expect((anthropicError.error as { error: { type: string } }).error.type).toBe('rate_limit_error');
    expect(Number(anthropicError.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // The refusals took no slot, and the holders finish untouched; then their slots are free again, on both edges.
    for (const stream of holders) {
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text.length).toBeGreaterThan(0);
    }
    await eventually(
      async () => {
        const [one, two] = await Promise.all(
          edges.map((edge) =>
            new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 }).chat.completions
              .create({ model: 'sim-model', messages: [{ role: 'user', content: 'after' }] })
              .then(
                () => true,
                () => false,
              ),
          ),
        );
        return one! && two!;
      },
      10_000,
      200,
    );
  }, 30_000);
});
