import { IopError, type EncodeContext, type StreamEvent } from '@iop/core';
import { encodeChatResponse } from '../../src/openai-chat/response-encode.js';

const context: EncodeContext = {
  requestId: 'req_1',
  model: 'client-model',
  request: { model: 'client-model', messages: [], stream: false },
  createdAt: 1764500000,
};

/** What the stream decoder gives for a vLLM answer with reasoning and a tool call. */
const vllmEvents: StreamEvent[] = [
  { type: 'response-start', id: 'chatcmpl-nonstream', model: 'Qwen/Qwen3-8B', created: 1764500001 },
  { type: 'reasoning-delta', text: 'Need weather.' },
  { type: 'tool-call-delta', index: 0, id: 'chatcmpl-tool-1', name: 'get_weather', argumentsDelta: '{"city":"Oslo"}' },
  { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
  { type: 'usage', usage: { inputTokens: 30, outputTokens: 12 } },
];

describe('encodeChatResponse', () => {
  it('builds chat.completion from the decoded events, content null for tool calls only', () => {
    const body = encodeChatResponse(vllmEvents, context);
    expect(body.id).toMatch(/^chatcmpl-[A-Za-z0-9]{24}$/);
    expect({ ...body, id: 'ID' }).toEqual({
      id: 'ID',
      object: 'chat.completion',
      created: 1764500000,
      model: 'client-model',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            refusal: null,
            reasoning_content: 'Need weather.',
            tool_calls: [
              {
                id: 'chatcmpl-tool-1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
              },
            ],
          },
          finish_reason: 'tool_calls',
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
    });
  });

  it('joins text deltas and tool argument fragments; unknown usage is zeros', () => {
    const body = encodeChatResponse(
      [
        { type: 'response-start', id: 'x', model: 'm', created: 1 },
        { type: 'text-delta', text: 'Hel' },
        { type: 'text-delta', text: 'lo' },
        { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'f', argumentsDelta: '{"a"' },
        { type: 'tool-call-delta', index: 0, argumentsDelta: ':1}' },
        { type: 'finish', reason: 'other', raw: 'abort' },
      ],
      context,
    );
    expect(body.choices[0]!.message.content).toBe('Hello');
    expect(body.choices[0]!.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
    ]);
    expect(body.choices[0]!.finish_reason).toBe('stop');
    expect(body.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('throws the error event as an IopError, and upstream_error when there is no finish', () => {
    expect(() => encodeChatResponse([{ type: 'error', code: 'timeout', message: 'stalled' }], context)).toThrow(
      expect.objectContaining({ code: 'timeout', status: 504, message: 'stalled' }),
    );
    expect(() => encodeChatResponse([{ type: 'response-start', id: 'x', model: 'm', created: 1 }], context)).toThrow(
      IopError,
    );
  });
});
