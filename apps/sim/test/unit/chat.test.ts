import { countTokens } from '../../src/index.js';
import { getJson, postRaw, sseData, startFixture, USER_MESSAGES, type Fixture } from './sim-fixture.js';

let fixture: Fixture;

beforeAll(async () => {
  fixture = await startFixture({ models: ['sim-model', 'other'], knobs: { outputTokens: 12 } });
});
afterAll(() => fixture.sim.close());

describe('GET /v1/models', () => {
  it('lists the configured models with max_model_len', async () => {
    const models = await getJson<{
      object: string;
      data: { id: string; object: string; owned_by: string; max_model_len: number }[];
    }>(fixture.sim, '/v1/models');
    expect(models.object).toBe('list');
    expect(models.data.map((model) => [model.id, model.object, model.owned_by, model.max_model_len])).toEqual([
      ['sim-model', 'model', 'iop-sim', 8192],
      ['other', 'model', 'iop-sim', 8192],
    ]);
  });

  it('is readable by the OpenAI client', async () => {
    const ids: string[] = [];
    for await (const model of fixture.client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['sim-model', 'other']);
  });
});

describe('non-stream chat completion', () => {
  it('returns a chat.completion with usage counted by the sim tokenizer', async () => {
    const completion = await fixture.client.chat.completions.create({ model: 'sim-model', messages: USER_MESSAGES });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    expect(completion.model).toBe('sim-model');
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    expect(choice.message.role).toBe('assistant');
    expect(countTokens(choice.message.content!)).toBe(12);
    expect(completion.usage).toEqual({
      prompt_tokens: countTokens(USER_MESSAGES[0]!.content),
      completion_tokens: 12,
      total_tokens: countTokens(USER_MESSAGES[0]!.content) + 12,
    });
  });

  it('cuts at max_tokens with finish_reason length', async () => {
    const completion = await fixture.client.chat.completions.create({
      model: 'sim-model',
      messages: USER_MESSAGES,
      max_tokens: 5,
    });
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.usage!.completion_tokens).toBe(5);
    const newer = await fixture.client.chat.completions.create({
      model: 'sim-model',
      messages: USER_MESSAGES,
      max_completion_tokens: 3,
      max_tokens: 9,
    });
    expect(newer.usage!.completion_tokens).toBe(3);
  });

  it('echoes the last user message with content=echo', async () => {
    const completion = await fixture.client.chat.completions.create({
      model: 'sim-model@content=echo',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'text', text: 'Say: hello, world!' }] },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('Say: hello, world!');
    expect(completion.model).toBe('sim-model@content=echo');
    expect(completion.usage!.completion_tokens).toBe(countTokens('Say: hello, world!'));
  });

  it('stops at a stop sequence, drops it and reports vLLM stop_reason', async () => {
    const completion = await fixture.client.chat.completions.create({
      model: 'sim-model@content=echo',
      messages: [{ role: 'user', content: 'alpha beta gamma delta' }],
      stop: ['zzz', 'a gam'],
    });
    const choice = completion.choices[0]! as (typeof completion.choices)[number] & { stop_reason: string | null };
    expect(choice.message.content).toBe('alpha bet');
    expect(choice.finish_reason).toBe('stop');
    expect(choice.stop_reason).toBe('a gam');
  });

  it('puts reasoning in message.reasoning and reasoning_content', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@reasoning=4,output-tokens=2',
      messages: USER_MESSAGES,
    });
    const message = JSON.parse(response.text).choices[0].message;
    expect(countTokens(message.reasoning)).toBe(4);
    expect(message.reasoning_content).toBe(message.reasoning);
    expect(JSON.parse(response.text).usage.completion_tokens).toBe(6);
  });

  it('puts <think> tags inside content with reasoning-format=think-tags, only </think> with think-close-only', async () => {
    const tags = await fixture.client.chat.completions.create({
      model: 'sim-model@reasoning=3,think-tags,output-tokens=2',
      messages: USER_MESSAGES,
    });
    expect(tags.choices[0]!.message.content).toMatch(/^<think>\w+ \w+ \w+<\/think>\n\n\w+ \w+$/);
    const closeOnly = await fixture.client.chat.completions.create({
      model: 'sim-model@reasoning=3,think-close-only,output-tokens=2',
      messages: USER_MESSAGES,
    });
    expect(closeOnly.choices[0]!.message.content).toMatch(/^\w+ \w+ \w+<\/think>\n\n\w+ \w+$/);
  });

  it('repeats one n-gram until max_tokens with repeat', async () => {
    const completion = await fixture.client.chat.completions.create({
      model: 'sim-model@repeat',
      messages: USER_MESSAGES,
      max_tokens: 10,
    });
    expect(completion.choices[0]!.message.content).toBe(' the answer is the the answer is the the answer');
    expect(completion.choices[0]!.finish_reason).toBe('length');
  });
});

describe('streamed chat completion', () => {
  it('accumulates to the same text as the chunks, role first, finish_reason last', async () => {
    const stream = await fixture.client.chat.completions.create({
      model: 'other',
      messages: USER_MESSAGES,
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!.choices[0]!.delta).toEqual({});
    const contentChunks = chunks.slice(1, -1);
    expect(contentChunks).toHaveLength(12);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks.every((chunk) => chunk.model === 'other' && chunk.usage === undefined)).toBe(true);
    const text = contentChunks.map((chunk) => chunk.choices[0]!.delta.content).join('');
    expect(countTokens(text)).toBe(12);
  });

  it('sends usage:null on every chunk and a trailing choices:[] usage chunk with include_usage', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model',
      messages: USER_MESSAGES,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 4,
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const data = sseData(response.text);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((payload) => JSON.parse(payload));
    const usageChunk = chunks.at(-1);
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual({ prompt_tokens: 8, total_tokens: 12, completion_tokens: 4 });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    expect(chunks.at(-2).choices[0].finish_reason).toBe('length');
  });

  it('puts running usage on every chunk with continuous-usage', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@continuous-usage',
      messages: USER_MESSAGES,
      stream: true,
      max_tokens: 3,
    });
    const chunks = sseData(response.text)
      .slice(0, -1)
      .map((payload) => JSON.parse(payload));
    expect(chunks.map((chunk) => chunk.usage.completion_tokens)).toEqual([0, 1, 2, 3, 3, 3]);
  });

  it('streams reasoning as delta.reasoning and delta.reasoning_content before content', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@reasoning=2,output-tokens=1',
      messages: USER_MESSAGES,
      stream: true,
    });
    const deltas = sseData(response.text)
      .slice(1, -2)
      .map((payload) => JSON.parse(payload).choices[0].delta);
    expect(deltas).toHaveLength(3);
    expect(deltas[0].reasoning).toEqual(deltas[0].reasoning_content);
    expect(Object.keys(deltas[1])).toEqual(['reasoning', 'reasoning_content']);
    expect(Object.keys(deltas[2])).toEqual(['content']);
  });

  it('streams only the text before a stop sequence', async () => {
    const stream = fixture.client.chat.completions.stream({
      model: 'sim-model@content=echo',
      messages: [{ role: 'user', content: 'one two three four' }],
      stop: 'three',
    });
    const completion = await stream.finalChatCompletion();
    expect(completion.choices[0]!.message.content).toBe('one two ');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });

  it('spaces tokens by itl-ms after ttft-ms', async () => {
    const start = Date.now();
    const arrivals: number[] = [];
    const stream = await fixture.client.chat.completions.create({
      model: 'sim-model@ttft-ms=150,itl-ms=40,output-tokens=4',
      messages: USER_MESSAGES,
      stream: true,
    });
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) arrivals.push(Date.now() - start);
    expect(arrivals).toHaveLength(4);
    expect(arrivals[0]).toBeGreaterThanOrEqual(145);
    expect(arrivals[3]).toBeGreaterThanOrEqual(150 + 3 * 40 - 5); // token i is due at ttft + i * itl from the start
  });
});

describe('errors', () => {
  it('answers an unknown model with a vLLM 404', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'missing@itl-ms=1',
      messages: USER_MESSAGES,
    });
    expect(response.status).toBe(404);
    expect(JSON.parse(response.text)).toEqual({
      error: { message: 'The model `missing@itl-ms=1` does not exist.', type: 'NotFoundError', param: null, code: 404 },
    });
  });

  it('answers malformed JSON with a vLLM 400', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', '{"model": "sim-model",');
    expect(response.status).toBe(400);
    const body = JSON.parse(response.text);
    expect(body.error).toMatchObject({ type: 'BadRequestError', param: null, code: 400 });
    expect(body.error.message).toMatch(/^Invalid JSON body/);
  });

  it('names the field of an invalid body, knob or stream_options without stream', async () => {
    const missing = await postRaw(fixture.sim, '/v1/chat/completions', { model: 'sim-model' });
    expect(JSON.parse(missing.text).error).toMatchObject({ param: 'messages', code: 400 });
    const knob = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@itl-ms=fast',
      messages: USER_MESSAGES,
    });
    expect(JSON.parse(knob.text).error.message).toBe(
      "model suffix: sim knob 'itl-ms': expected a number >= 0, got 'fast'",
    );
    const header = await postRaw(
      fixture.sim,
      '/v1/chat/completions',
      { model: 'sim-model', messages: USER_MESSAGES },
      { 'x-sim-content': 'poetry' },
    );
    expect(JSON.parse(header.text).error.message).toBe("sim knob 'content': expected one of lorem|echo, got 'poetry'");
    const options = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model',
      messages: USER_MESSAGES,
      stream_options: { include_usage: true },
    });
    expect(JSON.parse(options.text).error).toMatchObject({ param: 'stream_options', code: 400 });
  });

  it('refuses a prompt plus max_tokens above max-model-len with vLLM context-length message', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@max-model-len=10',
      messages: USER_MESSAGES,
      max_tokens: 5,
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).error.message).toBe(
      "This model's maximum context length is 10 tokens. However, you requested 13 tokens (8 in the messages, 5 in the completion). Please reduce the length of the messages or completion.",
    );
  });

  it('answers unknown routes like FastAPI', async () => {
    const response = await postRaw(fixture.sim, '/v1/unknown', {});
    expect(response.status).toBe(404);
    expect(JSON.parse(response.text)).toEqual({ detail: 'Not Found' });
  });
});

describe('POST /tokenize', () => {
  it('tokenizes a prompt deterministically', async () => {
    const first = await postRaw(fixture.sim, '/tokenize', {
      model: 'sim-model',
      prompt: 'Hello, world!',
      return_token_strs: true,
    });
    const body = JSON.parse(first.text);
    expect(body).toMatchObject({ count: 4, max_model_len: 8192, token_strs: ['Hello', ',', ' world', '!'] });
    expect(body.tokens).toHaveLength(4);
    const again = JSON.parse((await postRaw(fixture.sim, '/tokenize', { prompt: 'Hello, world!' })).text);
    expect(again.tokens).toEqual(body.tokens);
  });

  it('counts messages as the chat prompt tokens', async () => {
    const body = JSON.parse(
      (await postRaw(fixture.sim, '/tokenize', { model: 'sim-model', messages: USER_MESSAGES })).text,
    );
    const completion = await fixture.client.chat.completions.create({ model: 'sim-model', messages: USER_MESSAGES });
    expect(body.count).toBe(completion.usage!.prompt_tokens);
  });

  it('answers an unknown model with 404', async () => {
    expect((await postRaw(fixture.sim, '/tokenize', { model: 'nope', prompt: 'x' })).status).toBe(404);
  });
});
