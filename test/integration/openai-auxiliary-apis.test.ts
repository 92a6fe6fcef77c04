/**
 * Embeddings, legacy completions, rerank and score end to end: the official `openai` client (and
 * plain `fetch` for rerank and score, which the SDK lacks) → edge → gRPC tunnel → agent → sim, all
 * real processes on loopback; with keys, a token limit, the usage ledger, the metrics, a retry
 * before the first byte and a client that leaves mid-stream.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import {
  API_KEY,
  eventually,
  metricSum,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';
import { ADMIN_KEY, admin, freshMinute } from './shared-state-helpers';

const LIMITED_KEY = 'sk-iop-aux-limited-0001';
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-aux-'));
const configFile = path.join(dataDir, 'edge.json');
writeFileSync(
  configFile,
  JSON.stringify({
    keys: [{ id: 'aux', name: 'aux', key: LIMITED_KEY, models: ['sim-model'], limits: { tokensPerMinute: 40 } }],
  }),
);

let sim: SimHandle;
let edge: EdgeHandle;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model,sim-embed', '--output-tokens', '12']);
  edge = await startEdge({
    args: ['--config', configFile, '--request-deadline-ms', '4000'],
    env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY },
  });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-aux',
    backendUrl: sim.url,
    models: ['sim-model', 'sim-model@itl-ms=100'],
  });
  // An agent that declares its server an embeddings-only one (as a vLLM pooling model is).
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-embed',
    backendUrl: sim.url,
    models: ['sim-embed'],
    args: ['--apis', 'embeddings'],
  });
  client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
}, 60_000);

afterAll(stopAll);

const norm = (vector: readonly number[]) => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));

async function post(
  path: string,
  body: unknown,
  key = API_KEY,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${edge.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

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

describe('POST /v1/rerank and /v1/score', () => {
  const documents = ['a recipe for bread', 'the cat sat on the mat', { text: 'cats and mats' }, 'stock market news'];

  it('ranks documents by relevance, sorted, cut to top_n, with their text', async () => {
    const answer = await post('/v1/rerank', { model: 'sim-model', query: 'cat on the mat', documents, top_n: 2 });
    expect(answer.status).toBe(200);
    const results = answer.body.results as Array<{
      index: number;
      relevance_score: number;
      document?: { text: string };
    }>;
    expect(results).toHaveLength(2);
    expect(results[0]).toMatchObject({ index: 1, document: { text: 'the cat sat on the mat' } });
    expect(results[0]!.relevance_score).toBeGreaterThan(results[1]!.relevance_score);
    expect(results[0]!.relevance_score).toBeLessThanOrEqual(1);
    expect((answer.body.usage as { prompt_tokens: number }).prompt_tokens).toBeGreaterThan(0);
    const bare = await post('/v1/rerank', {
      model: 'sim-model',
      query: 'cat on the mat',
      documents,
      return_documents: false,
    });
    const all = bare.body.results as Array<Record<string, unknown>>;
    expect(all.map((result) => result.index)).toEqual(
      results.map((result) => result.index).concat(all.slice(2).map((result) => result.index as number)),
    );
    expect(all).toHaveLength(4);
    expect(all.every((result) => !('document' in result))).toBe(true);
  });

  it('serves vLLM’s /rerank and /v2/rerank aliases, behind the key check', async () => {
    for (const alias of ['/rerank', '/v2/rerank']) {
      const answer = await post(alias, { model: 'sim-model', query: 'bread', documents });
      expect(answer.status).toBe(200);
      expect((answer.body.results as Array<{ index: number }>)[0]!.index).toBe(0);
      expect((await post(alias, { model: 'sim-model', query: 'bread', documents }, 'sk-nobody-00000')).status).toBe(
        401,
      );
    }
  });

  it('scores pairs 1:N and N:N', async () => {
    const oneToMany = await post('/v1/score', {
      model: 'sim-model',
      text_1: 'cat on the mat',
      text_2: ['the cat sat on the mat', 'stock market news'],
    });
    expect(oneToMany.status).toBe(200);
    const data = oneToMany.body.data as Array<{ index: number; object: string; score: number }>;
    expect(data.map((entry) => [entry.index, entry.object])).toEqual([
      [0, 'score'],
      [1, 'score'],
    ]);
    expect(data[0]!.score).toBeGreaterThan(data[1]!.score);
    const pairwise = await post('/score', {
      model: 'sim-model',
      text_1: ['bread', 'news'],
      text_2: ['a recipe for bread', 'stock market news'],
    });
    expect((pairwise.body.data as unknown[]).length).toBe(2);
  });

  it('bad input is a 400 naming the field', async () => {
    for (const [route, body, param] of [
      ['/v1/rerank', { model: 'sim-model', query: '', documents }, 'query'],
      ['/v1/rerank', { model: 'sim-model', query: 'q', documents: [] }, 'documents'],
      ['/v1/rerank', { model: 'sim-model', query: 'q', documents: ['a', { txt: 'b' }] }, 'documents.1'],
      ['/v1/rerank', { model: 'sim-model', query: 'q', documents, top_n: -1 }, 'top_n'],
      ['/v1/score', { model: 'sim-model', text_2: 'b' }, 'text_1'],
      ['/v1/score', { model: 'sim-model', text_1: ['a', 'b'], text_2: ['c'] }, 'text_2'],
    ] as const) {
      const answer = await post(route, body);
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', param });
    }
  });
});

describe('which model serves which API', () => {
  it('GET /v1/models lists the APIs its providers serve each model with', async () => {
    const models = (await client.models.list()).data as unknown as Array<{ id: string; apis: string[] | null }>;
    expect(models.find((model) => model.id === 'sim-model')!.apis).toEqual([
      'chat',
      'completions',
      'embeddings',
      'rerank',
    ]);
    expect(models.find((model) => model.id === 'sim-embed')!.apis).toEqual(['embeddings']);
  });

  it('an API the model’s providers do not serve is a 400 naming the model, not a misroute', async () => {
    const embedded = await client.embeddings.create({ model: 'sim-embed', input: 'ok', encoding_format: 'float' });
    expect(embedded.data).toHaveLength(1);
    const before = (await simRequests(sim)).length;
    const refused = await client.completions
      .create({ model: 'sim-embed', prompt: 'no' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('model');
    expect((refused as Error).message).toContain('does not serve text completions');
    const chat = await client.chat.completions
      .create({ model: 'sim-embed', messages: [{ role: 'user', content: 'no' }] })
      .catch((error: unknown) => error);
    expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
    expect((await post('/v1/rerank', { model: 'sim-embed', query: 'q', documents: ['d'] })).status).toBe(400);
    // Translated dialects reach the backend as chat: refused the same way, in their own envelope.
    const messages = await fetch(`${edge.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-embed', max_tokens: 8, messages: [{ role: 'user', content: 'no' }] }),
    });
    expect(messages.status).toBe(400);
    expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const responses = await client.responses
      .create({ model: 'sim-embed', input: 'no' })
      .catch((error: unknown) => error);
    expect(responses).toBeInstanceOf(OpenAI.BadRequestError);
    expect((await simRequests(sim)).length).toBe(before);
  });
});

describe('keys, limits, ledger and metrics', () => {
  it('counts embeddings tokens as input tokens in the ledger, the metrics and the token limit', async () => {
    await freshMinute();
    const limited = new OpenAI({ apiKey: LIMITED_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const requestsBefore = await metricSum(edge.url, 'iop_requests_total', {
      dialect: 'openai-embeddings',
      status: '200',
    });
    const first = await limited.embeddings.create({
      model: 'sim-model',
      input: 'one two three four five six seven eight nine ten',
      encoding_format: 'float',
    });
    expect(first.usage.prompt_tokens).toBe(10);
    const completion = await limited.completions.create({ model: 'sim-model', prompt: 'one two', max_tokens: 12 });
    expect(completion.usage!.total_tokens).toBe(14);
    // The key is not allowed other models, whatever the API.
    await expect(limited.embeddings.create({ model: 'sim-embed', input: 'x' })).rejects.toBeInstanceOf(
      OpenAI.PermissionDeniedError,
    );
    // 10 + 14 tokens of 40 used: a rerank of ~20 tokens passes, then the limit refuses.
    const reranked = await post(
      '/v1/rerank',
      { model: 'sim-model', query: 'one two three', documents: ['one two three four five six seven'] },
      LIMITED_KEY,
    );
    expect(reranked.status).toBe(200);
    await eventually(
      async () =>
        (await post('/v1/score', { model: 'sim-model', text_1: 'a', text_2: 'b' }, LIMITED_KEY)).status === 429,
      5_000,
    );
    expect(await metricSum(edge.url, 'iop_requests_total', { dialect: 'openai-embeddings', status: '200' })).toBe(
      requestsBefore + 1,
    );
    const usage = await admin(edge.url, 'GET', '/admin/usage?key=aux&group_by=dialect&flush=true');
    const rows = usage.body.data as Array<{
      dialect: string;
      requests: number;
      input_tokens: number;
      output_tokens: number;
    }>;
    expect(rows.find((row) => row.dialect === 'openai-embeddings')).toMatchObject({
      input_tokens: 10,
      output_tokens: 0,
    });
    expect(rows.find((row) => row.dialect === 'openai-completions')).toMatchObject({
      requests: 1,
      input_tokens: 2,
      output_tokens: 12,
    });
    expect(rows.find((row) => row.dialect === 'rerank')!.input_tokens).toBe(
      (reranked.body.usage as { prompt_tokens: number }).prompt_tokens,
    );
  }, 60_000);

  it('an embeddings request spends the key’s token budget and one of its concurrent slots', async () => {
    const created = await admin(edge.url, 'POST', '/admin/keys', {
      name: 'budgeted',
      budget: { maxTokens: 5, period: 'month' },
      limits: { maxConcurrentStreams: 1 },
    });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const budgeted = new OpenAI({ apiKey: key, baseURL: edge.baseURL, maxRetries: 0 });
    // One slot: a slow stream holds it, a second request is refused meanwhile.
    const slow = await budgeted.completions.create({
      model: 'sim-model@itl-ms=100',
      prompt: 'x',
      max_tokens: 3,
      stream: true,
    });
    const busy = await budgeted.embeddings.create({ model: 'sim-model', input: 'x' }).catch((error: unknown) => error);
    expect(busy).toBeInstanceOf(OpenAI.RateLimitError);
    expect((busy as Error).message).toContain('concurrency limit');
    for await (const chunk of slow) void chunk;
    // 1 + 3 tokens of 5 used; 10 more go over: the next request is refused.
    const spent = await budgeted.embeddings.create({
      model: 'sim-model',
      input: 'one two three four five six seven eight nine ten',
      encoding_format: 'float',
    });
    expect(spent.usage.prompt_tokens).toBe(10);
    await eventually(
      async () =>
        (await budgeted.embeddings
          .create({ model: 'sim-model', input: 'x' })
          .catch((error: unknown) => error)) instanceof OpenAI.RateLimitError,
      5_000,
    );
  }, 60_000);
});
