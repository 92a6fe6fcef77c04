/**
 * Rerank and score end to end (plain `fetch`: the SDK lacks them), which provider serves which API, and the keys,
 * limits, ledger and metrics of the auxiliary APIs: edge → gRPC tunnel → agent → sim, all real processes on loopback
 * (auxiliary-stack.ts).
 */
import OpenAI from 'openai';
import { API_KEY, eventually, metricSum, simRequests, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { admin, freshMinute } from './shared-state-helpers';
import { startAuxiliaryStack, postJson, LIMITED_KEY } from './auxiliary-stack';

let sim: SimHandle;
let edge: EdgeHandle;
let client: OpenAI;

beforeAll(async () => {
  ({ sim, edge, client } = await startAuxiliaryStack());
}, 60_000);

afterAll(stopAll);

const post = (path: string, body: unknown, key?: string) => postJson(edge, path, body, key);

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
