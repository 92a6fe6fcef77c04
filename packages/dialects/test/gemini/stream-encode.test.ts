import { splitAt } from '@iop/test-support';
/**
 * Recorded backend chat streams (vLLM; the fixtures the Anthropic tests share) → the chat stream
 * decoder → the Gemini stream encoder → what a Gemini client receives: every event one
 * `data: <json>` line, deltas only, whole function calls, `finishReason` and usage on the last
 * chunk, errors in Google's envelope; and, for any split of the backend's bytes, the same client stream.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { createChatStreamDecoder } from '../../src/openai-chat/stream-decode';
import { GeminiStreamEncoder } from '../../src/gemini/stream-encode';
import { accumulate, context, encodeAll, sseChunks } from './helpers';

const FIXTURES = join(__dirname, '../fixtures/backend');
const NAMES = [
  'vllm-text-cached',
  'vllm-reasoning-tool',
  'vllm-parallel-tools',
  'interleaved-tools',
  'vllm-stop-sequence',
  'vllm-overloaded-mid-stream',
  'cut-stream',
] as const;
type FixtureName = (typeof NAMES)[number];

function upstreamBody(name: FixtureName): Uint8Array {
  const lines = readFileSync(join(FIXTURES, `${name}.sse`), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
  return new TextEncoder().encode(lines.map((line) => `${line}\n\n`).join(''));
}

/** Backend bytes (in slices) → decoder → encoder → client text, the response id normalized. */
function translate(slices: readonly Uint8Array[], includeThoughts = true, sse = true): string {
  const encoder = new GeminiStreamEncoder(context({ includeThoughts, sse }));
  let out = '';
  const decoder = createChatStreamDecoder((event) => {
    out += encoder.push(event);
  });
  for (const slice of slices) decoder.push(slice);
  decoder.end();
  return (out + encoder.end()).replace(/resp_[A-Za-z0-9]+/g, 'resp_ID');
}

const received = (name: FixtureName, includeThoughts = true) =>
  accumulate(sseChunks(translate([upstreamBody(name)], includeThoughts)));

describe('recorded backend streams → Gemini chunks', () => {
  it('vllm-text-cached: text deltas, then STOP with usage counting the cached prefix in the prompt', () => {
    const chunks = sseChunks(translate([upstreamBody('vllm-text-cached')]));
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks.slice(0, -1)) expect(chunk).not.toHaveProperty('candidates.0.finishReason');
    const result = accumulate(chunks);
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.finishReason).toBe('STOP');
    const usage = result.usage as Record<string, number>;
    expect(usage.totalTokenCount).toBe(
      usage.promptTokenCount! + usage.candidatesTokenCount! + (usage.thoughtsTokenCount ?? 0),
    );
    expect(usage.cachedContentTokenCount).toBeGreaterThan(0);
    expect(usage.cachedContentTokenCount).toBeLessThanOrEqual(usage.promptTokenCount!);
    for (const chunk of chunks)
      expect(chunk).toMatchObject({ modelVersion: 'gemini-2.5-flash', responseId: 'resp_ID' });
  });

  it('vllm-parallel-tools: every call once, whole, with its id and args object, on the STOP chunk', () => {
    const chunks = sseChunks(translate([upstreamBody('vllm-parallel-tools')]));
    const withCalls = chunks.filter(
      (chunk) => 'candidates' in chunk && chunk.candidates[0]!.content.parts.some((part) => part.functionCall),
    );
    expect(withCalls).toHaveLength(1);
    const result = accumulate(chunks);
    expect(result.calls).toEqual([
      { id: 'chatcmpl-tool-01', name: 'get_weather', args: { city: 'Zürich' } },
      { id: 'chatcmpl-tool-02', name: 'get_weather', args: { city: '東京' } },
      // A call streamed with no arguments has `args: {}`.
      { id: 'chatcmpl-tool-03', name: 'get_time', args: {} },
    ]);
    expect(result.finishReason).toBe('STOP');
  });

  it('vllm-reasoning-tool: thoughts as thought parts only with includeThoughts', () => {
    expect(received('vllm-reasoning-tool', true).thoughts.length).toBeGreaterThan(0);
    expect(received('vllm-reasoning-tool', false).thoughts).toBe('');
    expect(received('vllm-reasoning-tool', false).calls.length).toBeGreaterThan(0);
  });

  it('vllm-overloaded-mid-stream and cut-stream end with Google’s error envelope and no finishReason', () => {
    for (const name of ['vllm-overloaded-mid-stream', 'cut-stream'] as const) {
      const result = received(name);
      expect(result.finishReason).toBeUndefined();
      expect(result.error).toMatchObject({
        code: expect.any(Number),
        status: expect.stringMatching(/^[A-Z_]+$/),
        message: expect.any(String),
      });
      expect((result.error as { code: number }).code).toBeGreaterThanOrEqual(400);
    }
  });

  it('without alt=sse the same chunks form one JSON array', () => {
    for (const name of NAMES) {
      const array = JSON.parse(translate([upstreamBody(name)], true, false)) as unknown[];
      expect(array).toEqual(sseChunks(translate([upstreamBody(name)], true, true)));
    }
  });

  it('any split of the backend bytes gives the same client stream', () => {
    fc.assert(
      fc.property(fc.constantFrom(...NAMES), fc.array(fc.nat(), { maxLength: 24 }), fc.boolean(), (name, cuts, sse) => {
        const body = upstreamBody(name);
        expect(translate(splitAt(body, cuts), true, sse)).toBe(translate([body], true, sse));
      }),
      { numRuns: 300 },
    );
  });
});

describe('GeminiStreamEncoder', () => {
  const start: StreamEvent = { type: 'response-start', id: 'chatcmpl-1', model: 'Qwen/Qwen3-8B', created: 1 };

  it('waits for the usage after finish, and sends it with finishReason (MAX_TOKENS), thoughts counted apart', () => {
    const text = encodeAll([
      start,
      { type: 'text-delta', text: 'Hel' },
      { type: 'text-delta', text: 'lo' },
      { type: 'finish', reason: 'length', raw: 'length' },
      { type: 'usage', usage: { inputTokens: 12, outputTokens: 9, reasoningTokens: 4, cachedInputTokens: 8 } },
    ]);
    const chunks = sseChunks(text);
    expect(chunks).toHaveLength(3);
    expect(chunks[2]).toEqual({
      candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'MAX_TOKENS', index: 0 }],
      usageMetadata: {
        promptTokenCount: 12,
        candidatesTokenCount: 5,
        thoughtsTokenCount: 4,
        totalTokenCount: 21,
        cachedContentTokenCount: 8,
      },
      modelVersion: 'gemini-2.5-flash',
      responseId: expect.stringMatching(/^resp_/),
    });
  });

  it('a call whose arguments are not a JSON object ends with MALFORMED_FUNCTION_CALL and no call', () => {
    const result = accumulate(
      sseChunks(
        encodeAll([
          start,
          { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'f', argumentsDelta: '{"a":' },
          { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
        ]),
      ),
    );
    expect(result.calls).toEqual([]);
    expect(result.finishReason).toBe('MALFORMED_FUNCTION_CALL');
  });

  it('an error event is the last chunk, in Google’s envelope with its status and RetryInfo', () => {
    const chunks = sseChunks(
      encodeAll([
        start,
        { type: 'text-delta', text: 'a' },
        { type: 'error', code: 'rate_limited', message: 'slow down', retryAfterSeconds: 3 },
      ]),
    );
    expect(chunks.at(-1)).toEqual({
      error: {
        code: 429,
        message: 'slow down',
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '3s' }],
      },
    });
  });

  it('a JSON-array stream with nothing but an end is a closed array with the error', () => {
    const array = JSON.parse(encodeAll([start], context({ sse: false }))) as Array<{ error: { status: string } }>;
    expect(array).toHaveLength(1);
    expect(array[0]!.error.status).toBe('INTERNAL');
  });
});
