import { splitAt } from '@iop/test-support';
import fc from 'fast-check';
import { chatUsageOfJson } from '../src/chat-usage';
import { UsageScanner, usageBodyKindOf } from '../src/usage-scanner';

const enc = (text: string): Uint8Array => new TextEncoder().encode(text);

const chunk = (content: string): string =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}],"usage":null}\n\n`;

const USAGE_EVENT =
  'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":17,"completion_tokens":5,"total_tokens":22,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":3}}}\n\n';
const EXPECTED = { inputTokens: 17, outputTokens: 5, cachedInputTokens: 8, reasoningTokens: 3 };

function scan(kind: 'sse' | 'json', slices: Uint8Array[]): ReturnType<UsageScanner['finish']> {
  const scanner = new UsageScanner(kind);
  for (const slice of slices) scanner.push(slice);
  return scanner.finish();
}

describe('UsageScanner', () => {
  const stream = enc(chunk('') + chunk('Hello "usage" {x}') + chunk(' world') + USAGE_EVENT + 'data: [DONE]\n\n');

  test('finds the usage event of an OpenAI chat stream, ignoring usage:null chunks', () => {
    expect(scan('sse', [stream])).toEqual(EXPECTED);
  });

  test('any split of the stream into slices gives the same usage (the pattern may straddle slices)', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(stream.length), { maxLength: 40 }), (offsets) => {
        expect(scan('sse', splitAt(stream, offsets))).toEqual(EXPECTED);
      }),
      { numRuns: 500 },
    );
  });

  test('every split point inside the pattern itself, and one-byte slices', () => {
    const at = Buffer.from(stream).indexOf('"usage":{');
    for (let cut = at; cut <= at + 9; cut++) expect(scan('sse', splitAt(stream, [cut]))).toEqual(EXPECTED);
    const bytes = [...stream].map((byte) => Uint8Array.of(byte));
    expect(scan('sse', bytes)).toEqual(EXPECTED);
  });

  test('spaced JSON (`"usage": {`), CRLF lines, and a last event without a trailing newline', () => {
    const spaced = enc('data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}\r\n\r\n');
    // Fields the backend did not report stay absent: not 0.
    expect(scan('sse', [spaced])).toEqual({ inputTokens: 3, outputTokens: 4 });
    const unterminated = enc(chunk('a') + 'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}');
    expect(scan('sse', splitAt(unterminated, [unterminated.length - 5]))).toMatchObject({
      inputTokens: 1,
      outputTokens: 2,
    });
  });

  test('vLLM continuous usage: the last usage wins', () => {
    const body = enc(
      'data: {"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}}\n\n' +
        'data: {"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":9,"completion_tokens":2}}\n\n',
    );
    fc.assert(
      fc.property(fc.array(fc.nat(body.length), { maxLength: 10 }), (offsets) => {
        expect(scan('sse', splitAt(body, offsets))).toMatchObject({ inputTokens: 9, outputTokens: 2 });
      }),
    );
  });

  test('a stream without usage yields undefined', () => {
    expect(scan('sse', [enc(chunk('hi') + 'data: [DONE]\n\n')])).toBeUndefined();
  });

  test('JSON bodies are parsed once at the end, in any split', () => {
    const body = enc(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        choices: [],
        usage: { prompt_tokens: 12, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } },
      }),
    );
    fc.assert(
      fc.property(fc.array(fc.nat(body.length), { maxLength: 8 }), (offsets) => {
        expect(scan('json', splitAt(body, offsets))).toEqual({
          inputTokens: 12,
          outputTokens: 7,
          cachedInputTokens: 2,
        });
      }),
    );
    expect(chatUsageOfJson('{"error":{"message":"x"}}')).toBeUndefined();
  });

  test('any usage, with any of its counts not reported (or reported as 0), in any split: the same usage', () => {
    const count = fc.option(fc.nat(1_000_000), { nil: undefined });
    const usage = fc.record({
      prompt: count,
      completion: count,
      cached: count,
      reasoning: count,
      spaced: fc.boolean(),
    });
    const splits = fc.array(fc.nat(4000), { maxLength: 30 });
    fc.assert(
      fc.property(usage, splits, ({ prompt, completion, cached, reasoning, spaced }, offsets) => {
        const object: Record<string, unknown> = {};
        if (prompt !== undefined) object.prompt_tokens = prompt;
        if (completion !== undefined) object.completion_tokens = completion;
        if (cached !== undefined) object.prompt_tokens_details = { cached_tokens: cached };
        if (reasoning !== undefined) object.completion_tokens_details = { reasoning_tokens: reasoning };
        const json = JSON.stringify({ id: 'c', choices: [], usage: object });
        const event = `data: ${spaced ? json.replace('"usage":', '"usage": ') : json}\n\n`;
        const body = enc(chunk('a') + event + 'data: [DONE]\n\n');
        const expected: Record<string, number> = {};
        if (prompt !== undefined) expected.inputTokens = prompt;
        if (completion !== undefined) expected.outputTokens = completion;
        if (cached !== undefined) expected.cachedInputTokens = cached;
        if (reasoning !== undefined) expected.reasoningTokens = reasoning;
        const cuts = offsets.map((offset) => offset % (body.length + 1));
        expect(scan('sse', splitAt(body, cuts))).toEqual(expected);
        expect(scan('json', splitAt(enc(json), cuts))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  test('body kind from content-type', () => {
    expect(usageBodyKindOf('text/event-stream; charset=utf-8')).toBe('sse');
    expect(usageBodyKindOf('application/json')).toBe('json');
    expect(usageBodyKindOf('text/plain')).toBe('none');
    expect(usageBodyKindOf(undefined)).toBe('none');
  });
});
