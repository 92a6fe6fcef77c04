/**
 * The embedded backend: the agent runs the real tiny model (stories260K.gguf, llama.cpp through
 * node-llama-cpp) and its generated text streams through the edge with exact usage.
 */
import OpenAI from 'openai';
import { API_KEY, TINY_MODEL, startAgent, startEdge, stopAll, type EdgeHandle } from './harness';

let edge: EdgeHandle;
let client: OpenAI;

beforeAll(async () => {
  edge = await startEdge();
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'embedded',
    backend: 'llamacpp',
    args: ['--model', TINY_MODEL, '--threads', '2', '--context-size', '512'],
  });
  client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
}, 120_000);

afterAll(stopAll);

describe('embedded llama.cpp backend through the edge', () => {
  it('serves the model under its file name', async () => {
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toContain('stories260K');
  });

  it('streams generated text with exact usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'user', content: 'Once upon a time' }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 24,
      temperature: 0,
    });
    let text = '';
    let deltas = 0;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.content;
      if (delta) {
        text += delta;
        deltas++;
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas).toBeGreaterThan(3);
    expect(text).toMatch(/[a-z]{2,}/i);
    expect(usage!.completion_tokens).toBeGreaterThan(0);
    expect(usage!.completion_tokens).toBeLessThanOrEqual(24);
    expect(usage!.prompt_tokens).toBeGreaterThan(3);
    expect(usage!.total_tokens).toBe(usage!.prompt_tokens + usage!.completion_tokens);
    expect(['length', 'stop']).toContain(finish);
    if (finish === 'length') expect(usage!.completion_tokens).toBe(24);
  });

  it('count_tokens is exact: the model tokenizer counts what the chat request is billed', async () => {
    const messages = [{ role: 'user' as const, content: 'Once upon a time there was a cat' }];
    const completion = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 1 });
    const response = await fetch(`${edge.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'stories260K', messages }),
    });
    expect(response.headers.get('x-iop-token-count')).toBe('exact');
    expect(((await response.json()) as { input_tokens: number }).input_tokens).toBe(completion.usage!.prompt_tokens);
  });

  it('a prompt longer than the context is a 400 context_length_exceeded, not a silent truncation', async () => {
    const long = 'the little cat ran over the hill and '.repeat(100);
    const error = await client.chat.completions
      .create({ model: 'stories260K', messages: [{ role: 'user', content: long }], max_tokens: 8 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
  });

  it('without max_tokens the output ends at the latest where the context does', async () => {
    const completion = await client.chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'user', content: 'Once upon a time' }],
      temperature: 0,
    });
    expect(['stop', 'length']).toContain(completion.choices[0]!.finish_reason);
    expect(completion.usage!.prompt_tokens + completion.usage!.completion_tokens).toBeLessThanOrEqual(512);
  }, 180_000); // hundreds of tokens on one CPU thread: slow on a loaded two-core machine

  it('answers non-stream with the same usage accounting', async () => {
    const completion = await client.chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'user', content: 'The dog' }],
      max_tokens: 8,
      temperature: 0,
    });
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens).toBeLessThanOrEqual(8);
    if (completion.choices[0]!.finish_reason === 'length') expect(completion.usage!.completion_tokens).toBe(8);
    else expect(completion.choices[0]!.finish_reason).toBe('stop');
  });

  it('says in x-iop-warnings that it cannot honour n > 1 or logprobs, instead of silently returning one choice', async () => {
    const { data: completion, response } = await client.chat.completions
      .create({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'Once' }],
        max_tokens: 4,
        n: 2,
        logprobs: true,
      })
      .withResponse();
    expect(completion.choices).toHaveLength(1);
    const warnings = response.headers.get('x-iop-warnings') ?? '';
    expect(warnings).toContain('n=2 is not supported by the embedded backend');
    expect(warnings).toContain('logprobs are not supported by the embedded backend');
    const plain = await client.chat.completions
      .create({ model: 'stories260K', messages: [{ role: 'user', content: 'Once' }], max_tokens: 4 })
      .withResponse();
    expect(plain.response.headers.get('x-iop-warnings')).toBeNull();
  });
});
