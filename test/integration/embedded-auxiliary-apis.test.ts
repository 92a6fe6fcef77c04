/**
 * Embeddings and legacy completions on the embedded backend: the agent runs the real tiny model
 * (stories260K.gguf through node-llama-cpp) and the official `openai` client calls it through the
 * edge and the tunnel.
 */
import OpenAI from 'openai';
import { API_KEY, TINY_MODEL, startAgent, startEdge, stopAll, type EdgeHandle } from './harness';

let edge: EdgeHandle;
let client: OpenAI;
const model = 'stories260K';

beforeAll(async () => {
  edge = await startEdge();
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'embedded-aux',
    backend: 'llamacpp',
    args: ['--model', TINY_MODEL, '--threads', '2', '--context-size', '512'],
  });
  client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
}, 120_000);

afterAll(stopAll);

const norm = (vector: readonly number[]) => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
const dot = (a: readonly number[], b: readonly number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);

describe('embeddings from the model', () => {
  it('real vectors: one per input, unit length, deterministic, with exact usage', async () => {
    const answer = await client.embeddings.create({
      model,
      input: ['Once upon a time', 'The little dog ran'],
      encoding_format: 'float',
    });
    expect(answer.data).toHaveLength(2);
    const [first, second] = answer.data.map((entry) => entry.embedding);
    expect(first).toHaveLength(64); // stories260K's embedding width
    expect(norm(first!)).toBeCloseTo(1, 5);
    expect(dot(first!, second!)).toBeLessThan(0.9999);
    const again = await client.embeddings.create({ model, input: 'Once upon a time', encoding_format: 'float' });
    expect(again.data[0]!.embedding).toEqual(first);
    // The tokenizer's count: BOS + "Once upon a time" (4 tokens), as /tokenize counts the prompt.
    expect(again.usage.prompt_tokens).toBeGreaterThanOrEqual(4);
    expect(again.usage.total_tokens).toBe(again.usage.prompt_tokens);
  });

  it('base64 (the SDK default) decodes to the float vectors', async () => {
    const floats = await client.embeddings.create({ model, input: 'the cat', encoding_format: 'float' });
    const decoded = await client.embeddings.create({ model, input: 'the cat' });
    expect(decoded.data[0]!.embedding).toEqual(floats.data[0]!.embedding.map((value) => Math.fround(value)));
  });

  it('token arrays embed like their text; dimensions truncates and renormalises', async () => {
    const text = await client.embeddings.create({ model, input: 'Once upon a time', encoding_format: 'float' });
    // stories260K (llama2 tokenizer): "Once upon a time" = [403, 407, 261, 378].
    const tokens = await client.embeddings.create({ model, input: [403, 407, 261, 378], encoding_format: 'float' });
    expect(tokens.data[0]!.embedding).toEqual(text.data[0]!.embedding);
    const several = await client.embeddings.create({
      model,
      input: [
        [403, 407],
        [261, 378],
      ],
      encoding_format: 'float',
      dimensions: 16,
    });
    expect(several.data.map((entry) => entry.embedding.length)).toEqual([16, 16]);
    expect(norm(several.data[0]!.embedding)).toBeCloseTo(1, 5);
    const tooWide = await client.embeddings
      .create({ model, input: 'x', dimensions: 65 })
      .catch((error: unknown) => error);
    expect(tooWide).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooWide as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('dimensions');
  });
});

describe('legacy completions from the model', () => {
  it('non-stream: generated text, length finish, exact usage', async () => {
    const completion = await client.completions.create({
      model,
      prompt: 'Once upon a time',
      max_tokens: 12,
      temperature: 0,
    });
    expect(completion.object).toBe('text_completion');
    expect(completion.choices[0]!.text).toMatch(/[a-z]{2,}/i);
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.usage!.completion_tokens).toBe(12);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + 12);
  });

  it('streams the same text as the non-stream answer (temperature 0), with one usage chunk', async () => {
    const whole = await client.completions.create({ model, prompt: 'The little girl', max_tokens: 10, temperature: 0 });
    const stream = await client.completions.create({
      model,
      prompt: 'The little girl',
      max_tokens: 10,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    const usages: OpenAI.CompletionUsage[] = [];
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      for (const choice of chunk.choices) {
        text += choice.text;
        if (choice.text) chunks++;
      }
      if (chunk.usage) usages.push(chunk.usage);
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toBe(whole.choices[0]!.text);
    expect(usages).toEqual([whole.usage]);
  });

  it('echo, n and stop', async () => {
    const completion = await client.completions.create({
      model,
      prompt: ['Once upon a time', 'The dog'],
      n: 2,
      echo: true,
      max_tokens: 3,
      temperature: 0,
    });
    expect(completion.choices.map((choice) => choice.index)).toEqual([0, 1, 2, 3]);
    expect(completion.choices[0]!.text.startsWith('Once upon a time')).toBe(true);
    expect(completion.choices[3]!.text.startsWith('The dog')).toBe(true);
    const plain = await client.completions.create({
      model,
      prompt: 'Once upon a time',
      max_tokens: 16,
      temperature: 0,
    });
    // A stop sequence that begins inside a token (" was" is one token): the text before it stays.
    const word = plain.choices[0]!.text.trim().split(/\s+/)[2]!;
    const stopped = await client.completions.create({
      model,
      prompt: 'Once upon a time',
      max_tokens: 16,
      temperature: 0,
      stop: word,
    });
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    expect(stopped.choices[0]!.text).toBe(plain.choices[0]!.text.slice(0, plain.choices[0]!.text.indexOf(word)));
  });

  it('suffix on a model without fill-in-the-middle tokens is a clear 400 naming suffix', async () => {
    const refused = await client.completions
      .create({ model, prompt: 'Once upon', suffix: 'the end.', max_tokens: 4 })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('suffix');
    expect((refused as Error).message).toContain('fill-in-the-middle');
  });

  it('lists the APIs it serves, and refuses rerank before any backend call', async () => {
    const listed = (await client.models.list()).data as unknown as Array<{ id: string; apis: string[] | null }>;
    expect(listed.find((entry) => entry.id === model)!.apis).toEqual(['chat', 'completions', 'embeddings']);
    const response = await fetch(`${edge.url}/v1/rerank`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, query: 'q', documents: ['d'] }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('model');
  });
});
