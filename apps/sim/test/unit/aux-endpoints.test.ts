/** The sim's embeddings, completions, rerank and score endpoints: deterministic outputs, latency and faults. */
import { postRaw, sseData, startFixture, type Fixture } from './sim-fixture.js';

let fixture: Fixture;

beforeAll(async () => {
  fixture = await startFixture({ knobs: { outputTokens: 6 } });
});
afterAll(() => fixture.sim.close());
afterEach(async () => {
  await fetch(`${fixture.sim.url}/_sim/faults`, { method: 'DELETE' });
});

const fault = (body: Record<string, unknown>) =>
  fetch(`${fixture.sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('sim /v1/embeddings', () => {
  it('is deterministic per input and honours dimensions and base64', async () => {
    const first = await fixture.client.embeddings.create({
      model: 'sim-model',
      input: ['alpha', 'beta'],
      encoding_format: 'float',
      dimensions: 8,
    });
    const again = await fixture.client.embeddings.create({
      model: 'sim-model',
      input: 'alpha',
      encoding_format: 'float',
      dimensions: 8,
    });
    expect(first.data[0]!.embedding).toHaveLength(8);
    expect(again.data[0]!.embedding).toEqual(first.data[0]!.embedding);
    expect(first.data[1]!.embedding).not.toEqual(first.data[0]!.embedding);
    const decoded = await fixture.client.embeddings.create({ model: 'sim-model', input: 'alpha', dimensions: 8 });
    expect(decoded.data[0]!.embedding).toEqual(first.data[0]!.embedding.map((value) => Math.fround(value)));
    expect((await postRaw(fixture.sim, '/v1/embeddings', { model: 'nope', input: 'x' })).status).toBe(404);
    expect(
      (await postRaw(fixture.sim, '/v1/embeddings', { model: 'sim-model', input: 'x', dimensions: 0 })).status,
    ).toBe(400);
  });

  it('waits ttft-ms and applies status faults', async () => {
    const started = Date.now();
    await fixture.client.embeddings.create({ model: 'sim-model@ttft-ms=300', input: 'x' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    await fault({ fault: '429', 'retry-after': 2 });
    const limited = await postRaw(fixture.sim, '/v1/embeddings', { model: 'sim-model', input: 'x' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
  });
});

describe('sim /v1/completions', () => {
  it('streams text_completion chunks with finish reasons and a usage chunk', async () => {
    const response = await postRaw(fixture.sim, '/v1/completions', {
      model: 'sim-model',
      prompt: 'hi',
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = sseData(response.text);
    expect(chunks.at(-1)).toBe('[DONE]');
    const parsed = chunks.slice(0, -1).map(
      (data) =>
        JSON.parse(data) as {
          object: string;
          choices: Array<{ index: number; finish_reason: string | null }>;
          usage?: unknown;
        },
    );
    expect(parsed.every((chunk) => chunk.object === 'text_completion')).toBe(true);
    expect(
      parsed.flatMap((chunk) =>
        chunk.choices.filter((choice) => choice.finish_reason !== null).map((choice) => choice.index),
      ),
    ).toEqual([0, 1]);
    expect(parsed.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 12, total_tokens: 13 },
    });
  });

  it('an error-chunk fault sends an error event after fault-after tokens; a cut fault resets a non-stream answer', async () => {
    await fault({ fault: 'error-chunk', 'fault-after': 2 });
    const errored = await postRaw(fixture.sim, '/v1/completions', { model: 'sim-model', prompt: 'hi', stream: true });
    const data = sseData(errored.text);
    expect(data.filter((entry) => entry.includes('"text_completion"'))).toHaveLength(2);
    expect(data.some((entry) => entry.includes('"error"'))).toBe(true);
    await fault({ fault: 'cut', 'fault-after': 1 });
    await expect(fixture.client.completions.create({ model: 'sim-model', prompt: 'hi' })).rejects.toThrow();
  });
});

describe('sim /v1/rerank and /v1/score', () => {
  it('ranks a document with the query’s words first, on every alias', async () => {
    for (const path of ['/v1/rerank', '/rerank', '/v2/rerank']) {
      const answer = JSON.parse(
        (
          await postRaw(fixture.sim, path, {
            model: 'sim-model',
            query: 'red apple',
            documents: ['blue sky', 'a red apple', 'red car'],
          })
        ).text,
      ) as {
        results: Array<{ index: number; relevance_score: number }>;
      };
      expect(answer.results.map((result) => result.index)).toEqual([1, 2, 0]);
    }
    const score = JSON.parse(
      (await postRaw(fixture.sim, '/score', { model: 'sim-model', text_1: 'red apple', text_2: 'a red apple' })).text,
    ) as {
      data: Array<{ score: number }>;
    };
    expect(score.data[0]!.score).toBeGreaterThan(0.9);
  });
});
