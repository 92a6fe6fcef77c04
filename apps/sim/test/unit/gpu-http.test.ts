/**
 * The GPU profile through a real HTTP socket: ITL that follows the batch, queueing beyond
 * max_num_seqs visible in /metrics, a client abort that frees its slot, non-stream headers that
 * come only at the end. Time-scaled so each case takes about a second; assertions are orderings
 * and generous ratios, not tight milliseconds.
 */
import { request } from 'node:http';
import { startSim, type SimServer } from '../../src/index.js';
import { waitFor } from './sim-fixture.js';

const MESSAGES = [{ role: 'user', content: 'Tell me a long story about the sea.' }];

function body(maxTokens: number, stream: boolean): string {
  return JSON.stringify({ model: 'sim-model', messages: MESSAGES, max_tokens: maxTokens, stream });
}

/** Streams one completion; resolves with the ms from sending to the last byte. */
async function timedStream(sim: SimServer, maxTokens: number): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(maxTokens, true),
  });
  const text = await response.text();
  expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  return performance.now() - started;
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(`${name}{`) || entry.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function metrics(sim: SimServer): Promise<string> {
  return (await fetch(`${sim.url}/metrics`)).text();
}

interface SimStatsJson {
  completionsInFlight: number;
  completionsAborted: number;
  gpu: { running: number; waiting: number; prefixCacheQueries: number; prefixCacheHits: number } | null;
}

async function stats(sim: SimServer): Promise<SimStatsJson> {
  return (await (await fetch(`${sim.url}/_sim/stats`)).json()) as SimStatsJson;
}

describe('GPU profile over HTTP', () => {
  let sim: SimServer | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('decodes a batch of 64 slower per token than a batch of 1, as the model says (12.17 vs 6.5 ms)', async () => {
    // time-scale 10: ITL 65 ms alone, 121.7 ms in a batch of 64; 20 tokens each.
    sim = await startSim({ profile: 'gpu-h100-8b', timeScale: 10 });
    const alone = await timedStream(sim, 20);
    const batch = await Promise.all(Array.from({ length: 64 }, () => timedStream(sim!, 20)));
    const batchMedian = batch.sort((a, b) => a - b)[32]!;
    // Expected: 0.15 s prefill + 19 × 65 ms ≈ 1.4 s alone; 0.15–0.47 s of batched prefill + 19 × 121.7 ms ≈ 2.6 s in
    // the batch (ratio ≈ 1.85).
    expect(alone).toBeGreaterThan(19 * 65 * 0.95);
    expect(batchMedian / alone).toBeGreaterThan(1.35);
    expect(batchMedian / alone).toBeLessThan(3);
    const text = await metrics(sim);
    expect(metric(text, 'vllm:request_success_total')).toBe(65);
    expect(metric(text, 'vllm:generation_tokens_total')).toBe(65 * 20);
    expect(metric(text, 'vllm:num_requests_running')).toBe(0);
  });

  it('queues beyond max_num_seqs, shows it in /metrics, and frees the slot of a client that leaves', async () => {
    sim = await startSim({ profile: 'gpu-h100-8b', profileOverrides: { maxNumSeqs: 4 }, timeScale: 1 });
    const running = sim;
    const controllers = Array.from({ length: 6 }, () => new AbortController());
    // 600 tokens at ~6.8 ms: each stream runs ~4 s, so the 5th and 6th wait.
    const streams = controllers.map((controller) =>
      fetch(`${running.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(600, true),
        signal: controller.signal,
      })
        .then((response) => response.text())
        .catch(() => 'aborted'),
    );
    await waitFor(async () => (await stats(running)).completionsInFlight === 6, 5_000);
    let text = await metrics(running);
    expect(metric(text, 'vllm:num_requests_running')).toBe(4);
    expect(metric(text, 'vllm:num_requests_waiting')).toBe(2);
    expect(metric(text, 'vllm:kv_cache_usage_perc')).toBeGreaterThan(0);
    expect(metric(text, 'vllm:gpu_cache_usage_perc')).toBe(metric(text, 'vllm:kv_cache_usage_perc'));

    controllers[0]!.abort(); // a running client leaves: its slot goes to the first waiting request
    await waitFor(async () => (await stats(running)).completionsAborted === 1, 5_000);
    const after = await stats(running);
    expect(after.gpu).toMatchObject({ running: 4, waiting: 1 });
    expect(after.completionsInFlight).toBe(5);
    text = await metrics(running);
    expect(metric(text, 'iop_sim_requests_aborted_total')).toBe(1);
    expect(metric(text, 'iop_sim_requests_in_flight')).toBe(5);
    expect(text).toContain('vllm:request_success_total{model_name="sim-model",finished_reason="abort"} 1');

    for (const controller of controllers) controller.abort();
    await Promise.all(streams);
    await waitFor(async () => (await stats(running)).completionsInFlight === 0, 5_000);
    expect((await stats(running)).gpu).toMatchObject({ running: 0, waiting: 0 });
  });

  it('sends a non-stream answer, headers included, only when generation ends; repeats hit the prefix cache', async () => {
    // 200 tokens at 6.5 ms × 2 = ~2.6 s.
    sim = await startSim({ profile: 'gpu-h100-8b', timeScale: 2, knobs: { content: 'lorem' } });
    const url = new URL(`${sim.url}/v1/chat/completions`);
    const started = performance.now();
    const headersAt = await new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        const at = performance.now() - started;
        res.resume();
        res.on('end', () => resolve(at));
      });
      req.on('error', reject);
      req.end(body(200, false));
    });
    expect(headersAt).toBeGreaterThan(199 * 6.5 * 2 * 0.95);
    const second = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body(1, false),
    });
    expect(((await second.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(1);
    const gpu = (await stats(sim)).gpu!;
    expect(gpu.prefixCacheQueries).toBeGreaterThan(0);
    expect(gpu.prefixCacheQueries % 2).toBe(0); // the same prompt twice
    expect(gpu.prefixCacheHits).toBe(Math.floor(gpu.prefixCacheQueries / 2 / 16) * 16);
  });

  it('stops a non-stream generation and frees its slot when the client disconnects', async () => {
    sim = await startSim({ profile: 'gpu-h100-8b', profileOverrides: { maxNumSeqs: 1 }, timeScale: 1 });
    const running = sim;
    const controller = new AbortController();
    // 2 000 tokens: ~13 s of generation, cut after ~300 ms; a second request waits for the slot.
    const first = fetch(`${running.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body(2_000, false),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await waitFor(async () => (await stats(running)).gpu?.running === 1, 5_000);
    const second = fetch(`${running.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body(5, false),
    });
    await waitFor(async () => (await stats(running)).gpu?.waiting === 1, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort();
    const abortedAt = performance.now();
    expect(await first).toBe('aborted');
    const answer = await second; // admitted as soon as the first left, done in ~50 ms of decode
    expect(answer.status).toBe(200);
    expect(performance.now() - abortedAt).toBeLessThan(5_000); // not the ~13 s the first would have held the slot
    expect(((await answer.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(5);
    const after = await stats(running);
    expect(after).toMatchObject({ completionsAborted: 1, completionsInFlight: 0, gpu: { running: 0, waiting: 0 } });
    const text = await metrics(running);
    expect(text).toContain('vllm:request_success_total{model_name="sim-model",finished_reason="abort"} 1');
    expect(text).toContain('vllm:request_success_total{model_name="sim-model",finished_reason="length"} 1');
    expect(metric(text, 'vllm:generation_tokens_total')).toBeLessThan(2_000 + 5);
  });

  it('compresses the fixed ttft-ms and itl-ms knobs by the time scale too', async () => {
    // 2 s TTFT + 9 × 1 s ITL at scale 0.01: ~110 ms instead of 11 s.
    sim = await startSim({ timeScale: 0.01, knobs: { ttftMs: 2_000, itlMs: 1_000, outputTokens: 10 } });
    const started = performance.now();
    const response = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body(10, false),
    });
    expect(response.status).toBe(200);
    await response.text();
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThan(105);
    expect(elapsed).toBeLessThan(3_000);
  });

  it('without a profile serves only the minimal /metrics and no GPU stats', async () => {
    sim = await startSim({});
    const response = await fetch(`${sim.url}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('vllm:num_requests_running 0');
    expect(text).not.toContain('vllm:prefix_cache_queries');
    expect((await stats(sim)).gpu).toBeNull();
  });
});
