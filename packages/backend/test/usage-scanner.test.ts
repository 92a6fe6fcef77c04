import { splitAt } from '@iop/test-support';
import fc from 'fast-check';
import { UsageScanner, usageBodyKindOf, usageOfJson } from '../src/usage-scanner';

const enc = (text: string): Uint8Array => new TextEncoder().encode(text);

const chunk = (content: string): string =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}],"usage":null}\n\n`;

const USAGE_EVENT =
  'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":17,"completion_tokens":5,"total_tokens":22,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":3}}}\n\n';
const EXPECTED = { promptTokens: 17, completionTokens: 5, cachedTokens: 8, reasoningTokens: 3 };

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
    expect(scan('sse', [spaced])).toEqual({
      promptTokens: 3,
      completionTokens: 4,
      cachedTokens: 0,
      reasoningTokens: 0,
    });
    const unterminated = enc(chunk('a') + 'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}');
    expect(scan('sse', splitAt(unterminated, [unterminated.length - 5]))).toMatchObject({
      promptTokens: 1,
      completionTokens: 2,
    });
  });

  test('vLLM continuous usage: the last usage wins', () => {
    const body = enc(
      'data: {"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}}\n\n' +
        'data: {"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":9,"completion_tokens":2}}\n\n',
    );
    fc.assert(
      fc.property(fc.array(fc.nat(body.length), { maxLength: 10 }), (offsets) => {
        expect(scan('sse', splitAt(body, offsets))).toMatchObject({ promptTokens: 9, completionTokens: 2 });
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
          promptTokens: 12,
          completionTokens: 7,
          cachedTokens: 2,
          reasoningTokens: 0,
        });
      }),
    );
    expect(usageOfJson('{"error":{"message":"x"}}')).toBeUndefined();
  });

  test('body kind from content-type', () => {
    expect(usageBodyKindOf('text/event-stream; charset=utf-8')).toBe('sse');
    expect(usageBodyKindOf('application/json')).toBe('json');
    expect(usageBodyKindOf('text/plain')).toBe('none');
    expect(usageBodyKindOf(undefined)).toBe('none');
  });
});
