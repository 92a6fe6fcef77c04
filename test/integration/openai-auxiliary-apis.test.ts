/**
 * Embeddings and legacy completions end to end: the official `openai` client → edge → gRPC tunnel → agent → sim, all
 * real processes on loopback (auxiliary-stack.ts); with a retry before the first byte, a client that leaves mid-stream
 * and the request deadline. Rerank, score, serving and billing: auxiliary-routing.test.ts.
 */
import OpenAI from 'openai';
import { eventually, simRequests, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { startAuxiliaryStack, postJson } from './auxiliary-stack';

let sim: SimHandle;
let edge: EdgeHandle;
let client: OpenAI;

beforeAll(async () => {
  ({ sim, edge, client } = await startAuxiliaryStack());
}, 60_000);

afterAll(stopAll);

const post = (path: string, body: unknown, key?: string) => postJson(edge, path, body, key);
const norm = (vector: readonly number[]) => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));

describe('POST /v1/embeddings', () => {
  it('answers float vectors, one per input, unit length, with usage', async () => {
    const answer = await client.embeddings.create({
      model: 'sim-model',
      input: ['the cat sat', 'on the mat'],
      encoding_format: 'float',
    });
    expect(answer.object).toBe('list');
    expect(answer.model).toBe('sim-model');
    expect(answer.data.map((entry) => [entry.object, entry.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
    ]);
    expect(answer.data[0]!.embedding).toHaveLength(256);
    expect(norm(answer.data[0]!.embedding)).toBeCloseTo(1, 5);
    expect(answer.data[0]!.embedding).not.toEqual(answer.data[1]!.embedding);
    // The sim's tokenizer: "the cat sat" = 3 tokens, "on the mat" = 3.
    expect(answer.usage).toEqual({ prompt_tokens: 6, total_tokens: 6 });
  });

  it('base64 (the SDK default) decodes to the float vectors; the wire carries little-endian float32', async () => {
    const floats = await client.embeddings.create({
      model: 'sim-model',
      input: 'deterministic input',
      encoding_format: 'float',
    });
    const decoded = await client.embeddings.create({ model: 'sim-model', input: 'deterministic input' });
    const expected = floats.data[0]!.embedding.map((value) => Math.fround(value));
    expect(decoded.data[0]!.embedding).toEqual(expected);
    const raw = await post('/v1/embeddings', {
      model: 'sim-model',
      input: 'deterministic input',
      encoding_format: 'base64',
    });
    const text = (raw.body.data as Array<{ embedding: unknown }>)[0]!.embedding;
    expect(typeof text).toBe('string');
    const bytes = Buffer.from(text as string, 'base64');
    expect(bytes.length).toBe(256 * 4);
    expect(bytes.readFloatLE(0)).toBe(expected[0]);
    expect(bytes.readFloatLE(255 * 4)).toBe(expected[255]);
  });

  it('takes token arrays and arrays of token arrays, and honours dimensions', async () => {
    const one = await client.embeddings.create({
      model: 'sim-model',
      input: [101, 2023, 2003],
      encoding_format: 'float',
      dimensions: 64,
    });
    expect(one.data).toHaveLength(1);
    expect(one.data[0]!.embedding).toHaveLength(64);
    expect(one.usage.prompt_tokens).toBe(3);
    const many = await client.embeddings.create({
      model: 'sim-model',
      input: [
        [101, 2023],
        [7, 8, 9, 10],
      ],
      dimensions: 32,
    });
    expect(many.data.map((entry) => entry.embedding.length)).toEqual([32, 32]);
    expect(many.usage.prompt_tokens).toBe(6);
    const body = (await simRequests(sim)).filter((record) => record.path === '/v1/embeddings').at(-1)!.body as Record<
      string,
      unknown
    >;
    // The edge always asks the backend for floats and encodes base64 itself.
    expect(body).toMatchObject({
      model: 'sim-model',
      input: [
        [101, 2023],
        [7, 8, 9, 10],
      ],
      dimensions: 32,
      encoding_format: 'float',
    });
  });

  it('bad input is a 400 in OpenAI’s envelope naming the field', async () => {
    for (const [body, param] of [
      [{ model: 'sim-model', input: '' }, 'input'],
      [{ model: 'sim-model', input: [] }, 'input'],
      [{ model: 'sim-model', input: ['a', 3] }, 'input.1'],
      [{ model: 'sim-model', input: [[1, -2]] }, 'input.0.1'],
      [{ model: 'sim-model', input: 'x', encoding_format: 'bytes' }, 'encoding_format'],
      [{ model: 'sim-model', input: 'x', dimensions: 0 }, 'dimensions'],
      [{ input: 'x' }, 'model'],
    ] as const) {
      const answer = await post('/v1/embeddings', body);
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', param });
    }
  });
});

describe('POST /v1/completions', () => {
  it('answers a text_completion with usage (max_tokens defaults to 16, output capped by the sim at 12)', async () => {
    const completion = await client.completions.create({ model: 'sim-model', prompt: 'Once upon a time' });
    expect(completion.object).toBe('text_completion');
    expect(completion.model).toBe('sim-model');
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.text.trim().split(/\s+/).length).toBeGreaterThan(3);
    expect(completion.usage).toEqual({ prompt_tokens: 4, completion_tokens: 12, total_tokens: 16 });
    const limited = await client.completions.create({ model: 'sim-model', prompt: 'Once upon a time', max_tokens: 5 });
    expect(limited.choices[0]!.finish_reason).toBe('length');
    expect(limited.usage!.completion_tokens).toBe(5);
  });

  it('n choices per prompt, index = prompt × n + j; echo puts the prompt first', async () => {
    const completion = await client.completions.create({
      model: 'sim-model',
      prompt: ['first prompt', 'second prompt'],
      n: 2,
      echo: true,
      max_tokens: 4,
    });
    expect(completion.choices.map((choice) => choice.index).sort()).toEqual([0, 1, 2, 3]);
    const byIndex = new Map(completion.choices.map((choice) => [choice.index, choice.text]));
    expect(byIndex.get(0)!.startsWith('first prompt')).toBe(true);
    expect(byIndex.get(3)!.startsWith('second prompt')).toBe(true);
    expect(completion.usage!.completion_tokens).toBe(16);
  });

  it('stop ends the text before the stop sequence; logprobs cover each token', async () => {
    const plain = await client.completions.create({ model: 'sim-model', prompt: 'tell', seed: 7 });
    const words = plain.choices[0]!.text.split(' ').filter((word) => word !== '');
    const stop = ` ${words[3]}`;
    const stopped = await client.completions.create({ model: 'sim-model', prompt: 'tell', seed: 7, stop: [stop] });
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    expect(stopped.choices[0]!.text).toBe(plain.choices[0]!.text.slice(0, plain.choices[0]!.text.indexOf(stop)));
    const withLogprobs = await client.completions.create({
      model: 'sim-model',
      prompt: 'tell',
      seed: 7,
      logprobs: 2,
      max_tokens: 3,
    });
    const logprobs = withLogprobs.choices[0]!.logprobs!;
    expect(logprobs.tokens).toHaveLength(3);
    expect(logprobs.tokens!.join('')).toBe(withLogprobs.choices[0]!.text);
    expect(logprobs.text_offset).toEqual([
      0,
      logprobs.tokens![0]!.length,
      logprobs.tokens![0]!.length + logprobs.tokens![1]!.length,
    ]);
    expect(Object.keys(logprobs.top_logprobs![0]!)).toHaveLength(2);
  });

  it('streams text_completion chunks that add up to the non-stream text, with one usage chunk when asked', async () => {
    const whole = await client.completions.create({ model: 'sim-model', prompt: 'a story', seed: 3 });
    const stream = await client.completions.create({
      model: 'sim-model',
      prompt: 'a story',
      seed: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | undefined;
    const usages: OpenAI.CompletionUsage[] = [];
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      for (const choice of chunk.choices) {
        text += choice.text;
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      if (chunk.usage) usages.push(chunk.usage);
    }
    expect(text).toBe(whole.choices[0]!.text);
    expect(finish).toBe('stop');
    expect(usages).toEqual([whole.usage]);
    const plain = await client.completions.create({ model: 'sim-model', prompt: 'a story', stream: true });
    let sawUsage = false;
    for await (const chunk of plain) if (chunk.usage) sawUsage = true;
    expect(sawUsage).toBe(false);
  });

  it('fill-in-the-middle: suffix reaches the backend (llama.cpp server and Ollama take it natively)', async () => {
    const completion = await client.completions.create({
      model: 'sim-model',
      prompt: 'def add(a, b):\n    ',
      suffix: '\n    return c',
      max_tokens: 6,
    });
    expect(completion.choices[0]!.text.length).toBeGreaterThan(0);
    const body = (await simRequests(sim)).filter((record) => record.path === '/v1/completions').at(-1)!.body as Record<
      string,
      unknown
    >;
    expect(body).toMatchObject({ prompt: 'def add(a, b):\n    ', suffix: '\n    return c' });
  });

  it('bad input is a 400 naming the field', async () => {
    for (const [body, param] of [
      [{ model: 'sim-model' }, 'prompt'],
      [{ model: 'sim-model', prompt: 'x', best_of: 2 }, 'best_of'],
      [{ model: 'sim-model', prompt: 'x', logprobs: -1 }, 'logprobs'],
      [{ model: 'sim-model', prompt: 'x', echo: true, suffix: 'y' }, 'echo'],
      [{ model: 'sim-model', prompt: 'x', stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
      [{ model: 'sim-model', prompt: 'x', max_tokens: 0 }, 'max_tokens'],
      [{ model: 'sim-model', prompt: [[1], 'x'] }, 'prompt.1'],
    ] as const) {
      const answer = await post('/v1/completions', body);
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', param });
    }
  });

  it('a backend failure before the first byte is retried', async () => {
    const before = (await simRequests(sim)).filter((record) => record.path === '/v1/completions').length;
    await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fault: '503', retryAfter: 0 }),
    });
    const completion = await client.completions.create({ model: 'sim-model', prompt: 'retry me', max_tokens: 3 });
    expect(completion.choices[0]!.text.length).toBeGreaterThan(0);
    expect((await simRequests(sim)).filter((record) => record.path === '/v1/completions').length).toBe(before + 2);
  });

  it('a stream cut after the first of two choices finished ends with an in-band error, not a success', async () => {
    // n=2 × 12 tokens; the sim ends the stream after 12 tokens (choice 0 done) without [DONE].
    await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fault: 'no-done', 'fault-after': 12 }),
    });
    const stream = await client.completions.create({ model: 'sim-model', prompt: 'two choices', n: 2, stream: true });
    const finished: number[] = [];
    const failure = await (async () => {
      for await (const chunk of stream)
        for (const choice of chunk.choices) if (choice.finish_reason) finished.push(choice.index);
    })().catch((error: unknown) => error);
    expect(finished).toEqual([0]);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as Error).message).toContain('ended before [DONE]');
  });

  it('a client that leaves mid-stream cancels the backend request', async () => {
    const controller = new AbortController();
    const stream = await client.completions.create(
      { model: 'sim-model@itl-ms=100', prompt: 'slow', max_tokens: 200, stream: true },
      { signal: controller.signal },
    );
    for await (const chunk of stream) {
      if (chunk.choices[0]?.text) break;
    }
    controller.abort();
    await eventually(async () => {
      const last = (await simRequests(sim)).filter((record) => record.path === '/v1/completions').at(-1)!;
      return last.aborted === true;
    }, 5_000);
  });
});

describe('the request deadline', () => {
  it('a backend that never answers is a 504 at the deadline, and the backend request is cancelled', async () => {
    await fetch(`${sim.url}/_sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fault: 'stall' }),
    });
    const started = Date.now();
    const refused = await client.embeddings
      .create({ model: 'sim-model', input: 'never answered' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(504);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_500);
    await eventually(
      async () =>
        (await simRequests(sim)).filter((record) => record.path === '/v1/embeddings').at(-1)!.aborted === true,
      5_000,
    );
  }, 30_000);
});
