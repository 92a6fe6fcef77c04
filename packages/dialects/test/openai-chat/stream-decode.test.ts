import fc from 'fast-check';
import type { StreamEvent } from '@iop/core';
import { createChatStreamDecoder } from '../../src/openai-chat/stream-decode.js';
import { FIXTURE_NAMES, decodeSlices, frameFixture, splitAt } from './helpers.js';

const decode = (name: (typeof FIXTURE_NAMES)[number], eol: '\n' | '\r\n' | '\r' = '\n') =>
  decodeSlices([frameFixture(name, eol)]);

describe('createChatStreamDecoder on recorded upstream streams', () => {
  it('vLLM text stream: start, deltas (multi-byte), finish, trailing usage (choices: [])', () => {
    expect(decode('vllm-text')).toEqual([
      { type: 'response-start', id: 'chatcmpl-b7e1c2d4a9f04c1e8f3a', model: 'Qwen/Qwen3-8B', created: 1764500000 },
      { type: 'text-delta', text: 'Hello' },
      { type: 'text-delta', text: ', wörld' },
      { type: 'text-delta', text: ' 👋' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
      { type: 'usage', usage: { inputTokens: 12, outputTokens: 5, cachedInputTokens: 8 } },
    ]);
  });

  it('parallel tool calls in fragments: first fragment carries id and name', () => {
    expect(decode('vllm-tool-calls-parallel')).toEqual([
      { type: 'response-start', id: 'chatcmpl-4a1d', model: 'Qwen/Qwen3-8B', created: 1764500100 },
      { type: 'tool-call-delta', index: 0, id: 'chatcmpl-tool-8c1f0e', name: 'get_weather', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city": "' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: 'Paris"}' },
      { type: 'tool-call-delta', index: 1, id: 'chatcmpl-tool-93ab27', name: 'get_time', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"tz": "Europe/Paris"}' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      { type: 'usage', usage: { inputTokens: 240, outputTokens: 41 } },
    ]);
  });

  it('reasoning: reads reasoning ?? reasoning_content, usage with choices: null', () => {
    expect(decode('vllm-reasoning')).toEqual([
      { type: 'response-start', id: 'chatcmpl-r1', model: 'Qwen/Qwen3-8B', created: 1764500200 },
      { type: 'reasoning-delta', text: 'The user' },
      { type: 'reasoning-delta', text: ' greets me.' },
      { type: 'reasoning-delta', text: ' Reply.' },
      { type: 'text-delta', text: 'Hi!' },
      { type: 'finish', reason: 'length', raw: 'length' },
      { type: 'usage', usage: { inputTokens: 9, outputTokens: 7, reasoningTokens: 5 } },
    ]);
  });

  it('llama.cpp: no role in the first chunk, comments, usage chunk without choices', () => {
    expect(decode('llamacpp-usage-no-choices')).toEqual([
      { type: 'response-start', id: 'chatcmpl-Lq2', model: 'stories260K', created: 1764500300 },
      { type: 'text-delta', text: 'Once' },
      { type: 'text-delta', text: ' upon' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
      { type: 'usage', usage: { inputTokens: 4, outputTokens: 2 } },
    ]);
  });

  it('continuous_usage_stats: the first chunk’s prompt count on response-start; the last usage wins, held until finish; stop_reason → stopSequence', () => {
    expect(decode('vllm-stop-sequence-continuous-usage')).toEqual([
      {
        type: 'response-start',
        id: 'chatcmpl-s9',
        model: 'meta-llama/Llama-3.1-8B-Instruct',
        created: 1764500400,
        promptUsage: { inputTokens: 20, outputTokens: 0 },
      },
      { type: 'text-delta', text: '1, 2, 3' },
      { type: 'finish', reason: 'stop', raw: 'stop', stopSequence: 'END' },
      { type: 'usage', usage: { inputTokens: 20, outputTokens: 6 } },
    ]);
  });

  it('vLLM error mid-stream (integer code) becomes an error event, [DONE] after it ignored', () => {
    expect(decode('vllm-error-mid-stream')).toEqual([
      { type: 'response-start', id: 'chatcmpl-e5', model: 'Qwen/Qwen3-8B', created: 1764500500 },
      { type: 'text-delta', text: 'Partial' },
      { type: 'error', code: 'upstream_internal', message: 'CUDA out of memory while decoding' },
    ]);
  });

  it('malformed JSON: one error event with an excerpt; later chunks ignored', () => {
    const events = decode('malformed-chunk');
    expect(events).toHaveLength(3);
    expect(events[1]).toEqual({ type: 'text-delta', text: 'ok' });
    expect(events[2]).toMatchObject({ type: 'error', code: 'upstream_error' });
    expect((events[2] as { message: string }).message).toContain('malformed chat chunk: "{\\"id\\":\\"chatcmpl-m1\\"');
  });

  it('a stream cut without finish_reason or [DONE] ends in an error from end()', () => {
    expect(decode('missing-finish')).toEqual([
      { type: 'response-start', id: 'chatcmpl-c1', model: 'm', created: 1764500700 },
      { type: 'text-delta', text: 'The stream was cut' },
      { type: 'error', code: 'upstream_error', message: 'upstream chat stream ended without a finish_reason' },
    ]);
  });

  it.each(['\r\n'] as const)('gives the same events with %j line ends', (eol) => {
    for (const name of FIXTURE_NAMES) expect(decode(name, eol)).toEqual(decode(name));
  });

  it('any split of any fixture gives the same events', () => {
    const expected = new Map(FIXTURE_NAMES.map((name) => [name, decode(name)]));
    fc.assert(
      fc.property(
        fc.constantFrom(...FIXTURE_NAMES),
        fc.array(fc.nat({ max: 4000 }), { maxLength: 40 }),
        (name, cuts) => {
          const bytes = frameFixture(name);
          expect(decodeSlices(splitAt(bytes, cuts))).toEqual(expected.get(name));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('byte-by-byte delivery gives the same events', () => {
    const bytes = frameFixture('vllm-tool-calls-parallel');
    const slices = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
    expect(decodeSlices(slices)).toEqual(decode('vllm-tool-calls-parallel'));
  });
});

describe('createChatStreamDecoder edge cases', () => {
  const run = (body: string): StreamEvent[] => decodeSlices([new TextEncoder().encode(body)]);

  it('an empty body is an error, not a success', () => {
    expect(run('')).toEqual([
      { type: 'error', code: 'upstream_error', message: 'upstream chat stream ended without sending any chunk' },
    ]);
  });

  it('[DONE] without finish_reason is an error', () => {
    const events = run(
      'data: {"id":"x","model":"m","created":1,"choices":[{"index":0,"delta":{"content":"a"}}]}\n\ndata: [DONE]\n\n',
    );
    expect(events.at(-1)).toEqual({
      type: 'error',
      code: 'upstream_error',
      message: 'upstream chat stream sent [DONE] without a finish_reason',
    });
  });

  it('an error before any chunk: 400 from the integer code, message kept, no response-start', () => {
    expect(
      run(
        'data: {"error":{"message":"maximum context length is 4096 tokens","type":"BadRequestError","param":null,"code":400}}\n\n',
      ),
    ).toEqual([{ type: 'error', code: 'context_length_exceeded', message: 'maximum context length is 4096 tokens' }]);
  });

  it('an SSE `event: error` frame is an error even without an error key', () => {
    expect(run('event: error\ndata: {"message":"overloaded"}\n\n')).toEqual([
      { type: 'error', code: 'upstream_error', message: 'overloaded' },
    ]);
  });

  it('tool call: id/name repeated on every fragment are sent once; arguments in the first fragment kept', () => {
    const chunk = (toolCall: object) =>
      `data: ${JSON.stringify({ id: 'c', model: 'm', created: 1, choices: [{ index: 0, delta: { tool_calls: [toolCall] } }] })}\n\n`;
    const events = run(
      chunk({ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":' } }) +
        chunk({ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '1}' } }) +
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n',
    );
    expect(events.slice(1)).toEqual([
      { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'f', argumentsDelta: '{"a":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '1}' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
    ]);
  });

  it('a tool call without an id gets a call_ id; content in the finish chunk comes before finish', () => {
    const events = run(
      'data: {"id":"c","model":"m","created":1,"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}\n\n' +
        'data: {"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"eos"}]}\n\n',
    );
    expect(events[1]).toMatchObject({ type: 'tool-call-delta', index: 0, name: 'f', argumentsDelta: '{}' });
    expect((events[1] as { id: string }).id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(events.slice(2)).toEqual([
      { type: 'text-delta', text: '!' },
      { type: 'finish', reason: 'stop', raw: 'eos' },
    ]);
  });

  it('after finish only usage passes; after [DONE] nothing', () => {
    const events = run(
      'data: {"id":"c","model":"m","created":1,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n' +
        'data: {"choices":[{"index":0,"delta":{"content":"late"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\n' +
        'data: [DONE]\n\ndata: {"usage":{"prompt_tokens":9}}\n\n',
    );
    expect(events.slice(1)).toEqual([
      { type: 'finish', reason: 'stop', raw: 'stop' },
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 2 } },
    ]);
  });

  it('never throws from push when the consumer throws; reports once', () => {
    const events: StreamEvent[] = [];
    let thrown = false;
    const decoder = createChatStreamDecoder((event) => {
      events.push(event);
      if (!thrown && event.type === 'text-delta') {
        thrown = true;
        throw new Error('consumer failed');
      }
    });
    expect(() =>
      decoder.push(
        new TextEncoder().encode('data: {"id":"c","model":"m","created":1,"choices":[{"delta":{"content":"a"}}]}\n\n'),
      ),
    ).not.toThrow();
    decoder.end();
    expect(events.map((event) => event.type)).toEqual(['response-start', 'text-delta', 'error']);
  });
});
