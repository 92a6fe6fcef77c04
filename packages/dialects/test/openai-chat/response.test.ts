import { IopError, type EncodeContext, type StreamEvent } from '@iop/core';
import { decodeChatResponse } from '../../src/openai-chat/response-decode.js';
import { encodeChatResponse } from '../../src/openai-chat/response-encode.js';

const decode = (body: unknown): StreamEvent[] => {
  const events: StreamEvent[] = [];
  decodeChatResponse(body, (event) => events.push(event));
  return events;
};

const context: EncodeContext = {
  requestId: 'req_1',
  model: 'client-model',
  request: { model: 'client-model', messages: [], stream: false },
  createdAt: 1764500000,
};

const vllmCompletion = {
  id: 'chatcmpl-nonstream',
  object: 'chat.completion',
  created: 1764500001,
  model: 'Qwen/Qwen3-8B',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        reasoning_content: 'Need weather.',
        content: null,
        tool_calls: [{ id: 'chatcmpl-tool-1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
      stop_reason: null,
    },
  ],
  usage: { prompt_tokens: 30, total_tokens: 42, completion_tokens: 12, prompt_tokens_details: null },
};

describe('decodeChatResponse', () => {
  it('decodes a vLLM completion with reasoning and a tool call', () => {
    expect(decode(vllmCompletion)).toEqual([
      { type: 'response-start', id: 'chatcmpl-nonstream', model: 'Qwen/Qwen3-8B', created: 1764500001 },
      { type: 'reasoning-delta', text: 'Need weather.' },
      { type: 'tool-call-delta', index: 0, id: 'chatcmpl-tool-1', name: 'get_weather', argumentsDelta: '{"city":"Oslo"}' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      { type: 'usage', usage: { inputTokens: 30, outputTokens: 12 } },
    ]);
  });

  it('keeps the matched stop string', () => {
    const events = decode({ id: 'c', model: 'm', created: 1, choices: [{ index: 0, message: { content: 'x' }, finish_reason: 'stop', stop_reason: '###' }] });
    expect(events.at(-1)).toEqual({ type: 'finish', reason: 'stop', raw: 'stop', stopSequence: '###' });
  });

  it('an error body, a non-object and a missing finish_reason become error events', () => {
    expect(decode({ error: { message: 'model not loaded', type: 'NotFoundError', code: 404 } })).toEqual([
      { type: 'error', code: 'not_found', message: 'model not loaded' },
    ]);
    expect(decode('oops')).toEqual([{ type: 'error', code: 'upstream_error', message: 'upstream sent a chat response that is not a JSON object' }]);
    expect(decode({ id: 'c', choices: [{ message: { content: 'x' } }] }).at(-1)).toEqual({
      type: 'error',
      code: 'upstream_error',
      message: 'upstream chat response has no finish_reason',
    });
    expect(decode({ id: 'c', choices: [] })).toEqual([{ type: 'error', code: 'upstream_error', message: 'upstream chat response has no choices' }]);
  });
});

describe('encodeChatResponse', () => {
  it('builds chat.completion from the decoded events, content null for tool calls only', () => {
    const body = encodeChatResponse(decode(vllmCompletion), context);
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
            tool_calls: [{ id: 'chatcmpl-tool-1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
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
    expect(body.choices[0]!.message.tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }]);
    expect(body.choices[0]!.finish_reason).toBe('stop');
    expect(body.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('throws the error event as an IopError, and upstream_error when there is no finish', () => {
    expect(() => encodeChatResponse([{ type: 'error', code: 'timeout', message: 'stalled' }], context)).toThrow(
      expect.objectContaining({ code: 'timeout', status: 504, message: 'stalled' }),
    );
    expect(() => encodeChatResponse([{ type: 'response-start', id: 'x', model: 'm', created: 1 }], context)).toThrow(IopError);
  });
});
