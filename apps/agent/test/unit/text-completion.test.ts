/**
 * The embedded backend's legacy completions encoder, over a stand-in for node-llama-cpp's
 * `LlamaCompletion` that "generates" fixed text chunks: choice indexes, echo, stop sequences,
 * fill-in-the-middle through the infill call, the stream's shape and usage.
 */
import { parseCompletionRequest } from '../../src/backends/llamacpp/completion-request';
import { generateTextCompletion, supportsInfill } from '../../src/backends/llamacpp/text-completion';
import type { LlamaContextSequence, LlamaModel, NodeLlamaCpp } from '../../src/backends/llamacpp/library';

interface Call {
  kind: 'completion' | 'infill';
  prefix: unknown;
  suffix?: unknown;
}

/** A LlamaCompletion that emits `chunks` one by one (one token each), stopping early when its signal aborts. */
function fakeLibrary(chunks: string[], calls: Call[]): NodeLlamaCpp {
  type Options = {
    onTextChunk?: (text: string) => void;
    onToken?: (tokens: number[]) => void;
    signal?: AbortSignal;
    maxTokens?: number;
  };
  const run = (options: Options) => {
    let response = '';
    for (const [index, chunk] of chunks.entries()) {
      if (options.signal?.aborted === true) return { response, metadata: { stopReason: 'abort' } };
      if (options.maxTokens !== undefined && index >= options.maxTokens)
        return { response, metadata: { stopReason: 'maxTokens' } };
      options.onToken?.([index]);
      options.onTextChunk?.(chunk);
      response += chunk;
    }
    return { response, metadata: { stopReason: 'eogToken' } };
  };
  class LlamaCompletion {
    generateCompletionWithMeta(prompt: unknown, options: Options) {
      calls.push({ kind: 'completion', prefix: prompt });
      return Promise.resolve(run(options));
    }
    generateInfillCompletionWithMeta(prefix: unknown, suffix: unknown, options: Options) {
      calls.push({ kind: 'infill', prefix, suffix });
      return Promise.resolve(run(options));
    }
    dispose() {}
  }
  return { LlamaCompletion } as unknown as NodeLlamaCpp;
}

const model = {
  detokenize: (tokens: number[]) => tokens.map((token) => `<${token}>`).join(''),
  tokens: { infill: { prefix: 1, suffix: 2, middle: 3 } },
} as unknown as LlamaModel;

async function run(body: Record<string, unknown>, chunks = [' the', ' cat', ' sat', ' down']) {
  const calls: Call[] = [];
  let done = 0;
  const params = parseCompletionRequest(Buffer.from(JSON.stringify({ model: 'tiny', ...body })));
  const response = generateTextCompletion({
    library: fakeLibrary(chunks, calls),
    model,
    sequence: {} as LlamaContextSequence,
    params,
    promptTokens: params.prompts.map(() => 3),
    signal: new AbortController().signal,
    onDone: () => done++,
  });
  let text = '';
  for await (const part of response.body) text += Buffer.from(part).toString();
  return { response, text, calls, done };
}

describe('embedded legacy completions', () => {
  it('non-stream: prompt × n choices, echo first, usage of every prompt once and every token', async () => {
    const { text, calls, done } = await run({ prompt: ['A', [5, 6]], n: 2, echo: true, max_tokens: 3 });
    const answer = JSON.parse(text) as {
      object: string;
      choices: Array<{ index: number; text: string; finish_reason: string }>;
      usage: unknown;
    };
    expect(answer.object).toBe('text_completion');
    expect(answer.choices.map((choice) => [choice.index, choice.text, choice.finish_reason])).toEqual([
      [0, 'A the cat sat', 'length'],
      [1, 'A the cat sat', 'length'],
      [2, '<5><6> the cat sat', 'length'],
      [3, '<5><6> the cat sat', 'length'],
    ]);
    expect(answer.usage).toEqual({ prompt_tokens: 6, completion_tokens: 12, total_tokens: 18 });
    expect(calls.map((call) => call.prefix)).toEqual(['A', 'A', [5, 6], [5, 6]]);
    expect(done).toBe(1);
  });

  it('a stop sequence inside a chunk ends the choice before it, finish_reason stop', async () => {
    const { text } = await run({ prompt: 'x', stop: ['at s'], max_tokens: 10 });
    const answer = JSON.parse(text) as { choices: Array<{ text: string; finish_reason: string }> };
    expect(answer.choices[0]).toMatchObject({ text: ' the c', finish_reason: 'stop' });
  });

  it('suffix goes to the infill call (prefix, suffix) on a model with FIM tokens', async () => {
    expect(supportsInfill(model)).toBe(true);
    expect(
      supportsInfill({ tokens: { infill: { prefix: null, suffix: null, middle: null } } } as unknown as LlamaModel),
    ).toBe(false);
    const { calls } = await run({ prompt: 'def f():', suffix: '  return x', max_tokens: 2 });
    expect(calls).toEqual([{ kind: 'infill', prefix: 'def f():', suffix: '  return x' }]);
  });

  it('streams text_completion chunks whose texts join to the non-stream text, a finish chunk per choice, one usage chunk, [DONE]', async () => {
    const whole = JSON.parse((await run({ prompt: 'x', n: 2, stop: ['sat'] })).text) as {
      choices: Array<{ text: string }>;
      usage: unknown;
    };
    const { text, response } = await run({
      prompt: 'x',
      n: 2,
      stop: ['sat'],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response.headers['content-type']).toBe('text/event-stream');
    const events = text.split('\n\n').filter((event) => event !== '');
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map(
      (event) =>
        JSON.parse(event.slice('data: '.length)) as {
          object: string;
          choices: Array<{ index: number; text: string; finish_reason: string | null }>;
          usage?: unknown;
        },
    );
    expect(chunks.every((chunk) => chunk.object === 'text_completion')).toBe(true);
    const joined = ['', ''];
    const finishes: Array<[number, string]> = [];
    for (const chunk of chunks)
      for (const choice of chunk.choices) {
        joined[choice.index] += choice.text;
        if (choice.finish_reason !== null) finishes.push([choice.index, choice.finish_reason]);
      }
    expect(joined).toEqual(whole.choices.map((choice) => choice.text));
    expect(finishes).toEqual([
      [0, 'stop'],
      [1, 'stop'],
    ]);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: whole.usage });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });

  it('logprobs are not supported: said in x-iop-warnings', async () => {
    const { response } = await run({ prompt: 'x', logprobs: 2 });
    expect(response.headers['x-iop-warnings']).toContain('logprobs');
  });
});
