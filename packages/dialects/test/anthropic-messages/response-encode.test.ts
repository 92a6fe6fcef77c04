import type { StreamEvent } from '@iop/core';
import { IopError } from '@iop/core';
import { anthropicMessages } from '../../src/anthropic-messages/dialect.js';
import { UNSIGNED_THINKING_SIGNATURE } from '../../src/anthropic-messages/stream-encode.js';
import { context, encodeAll, sdkFinalMessage } from './helpers';

const encode = (events: StreamEvent[]) => anthropicMessages.encodeResponse(events, context({ stream: false }));

describe('encodeResponse (non-stream Message, docs/protocols.md "Messages response")', () => {
  const events: StreamEvent[] = [
    { type: 'response-start', id: 'chatcmpl-9', model: 'qwen3', created: 1 },
    { type: 'reasoning-delta', text: 'plan' },
    { type: 'text-delta', text: 'Let me ' },
    { type: 'text-delta', text: 'check.' },
    { type: 'tool-call-delta', index: 0, id: 'call_a', name: 'Grep', argumentsDelta: '{"pattern":' },
    { type: 'tool-call-delta', index: 1, id: 'call_b', name: 'Ls', argumentsDelta: '' },
    { type: 'tool-call-delta', index: 0, argumentsDelta: '"TODO"}' },
    { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
    { type: 'usage', usage: { inputTokens: 50, outputTokens: 9, cachedInputTokens: 20 } },
  ];

  it('builds thinking, text and tool_use blocks with parsed input, stop reason and net usage', () => {
    expect(encode(events)).toEqual({
      id: expect.stringMatching(/^msg_[A-Za-z0-9]{24}$/),
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'thinking', thinking: 'plan', signature: UNSIGNED_THINKING_SIGNATURE },
        { type: 'text', text: 'Let me check.', citations: null },
        { type: 'tool_use', id: 'call_a', name: 'Grep', input: { pattern: 'TODO' } },
        { type: 'tool_use', id: 'call_b', name: 'Ls', input: {} },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 30, output_tokens: 9, cache_creation_input_tokens: 0, cache_read_input_tokens: 20 },
    });
  });

  it('agrees with what the SDK accumulates from the stream encoding of the same events', async () => {
    const streamed = await sdkFinalMessage(encodeAll(events));
    const { id: _a, ...fromResponse } = encode(events) as unknown as Record<string, unknown>;
    const { id: _b, parsed_output: _c, ...fromStream } = streamed as unknown as Record<string, unknown>;
    // the SDK's text blocks from a stream carry no `citations` key
    (fromResponse.content as Array<Record<string, unknown>>).forEach((block) => delete block.citations);
    expect(fromStream).toEqual(fromResponse);
  });

  it('reports a stop sequence', () => {
    const message = encode([
      { type: 'text-delta', text: 'a' },
      { type: 'finish', reason: 'stop', raw: 'stop', stopSequence: '###' },
    ]);
    expect(message).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: '###' });
  });

  it('throws the stream error, a missing terminal, and non-object tool arguments as IopErrors', () => {
    expect(() =>
      encode([
        { type: 'text-delta', text: 'a' },
        { type: 'error', code: 'timeout', message: 'stalled' },
      ]),
    ).toThrow(expect.objectContaining({ code: 'timeout', status: 504, message: 'stalled' }));
    expect(() => encode([{ type: 'text-delta', text: 'a' }])).toThrow(
      expect.objectContaining({ code: 'upstream_error', status: 502 }),
    );
    const badArguments = (argumentsDelta: string) => () =>
      encode([
        { type: 'tool-call-delta', index: 0, id: 'c', name: 'T', argumentsDelta },
        { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      ]);
    expect(badArguments('{"a":')).toThrow(IopError);
    expect(badArguments('{"a":')).toThrow(expect.objectContaining({ code: 'upstream_error' }));
    expect(badArguments('[1,2]')).toThrow(expect.objectContaining({ code: 'upstream_error' }));
  });
});
