import type { EncodeContext, InferenceRequest, StreamEvent } from '@iop/core';
import { createChatStreamEncoder } from '../../src/openai-chat/stream-encode.js';
import { decodeSlices, frameFixture } from './helpers.js';
import { sdkAccumulate, sdkChunks } from './sdk.js';

const request = (includeUsage: boolean): InferenceRequest => ({
  model: 'my-model',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  stream: true,
  includeUsage,
});

const context = (includeUsage = true): EncodeContext => ({
  requestId: 'req_1',
  model: 'my-model',
  request: request(includeUsage),
  createdAt: 1764509999,
});

function encode(events: readonly StreamEvent[], ctx: EncodeContext = context(), options = {}): string {
  const encoder = createChatStreamEncoder(ctx, options);
  let out = '';
  for (const event of events) out += encoder.push(event);
  return out + encoder.end();
}

describe('createChatStreamEncoder', () => {
  it('writes the Chat stream sequence: role chunk, content, tool call first fragment with arguments "", finish, usage, [DONE]', async () => {
    const sse = encode([
      { type: 'response-start', id: 'up-1', model: 'backend-model', created: 1 },
      { type: 'text-delta', text: 'Let me check.' },
      { type: 'tool-call-delta', index: 3, id: 'call_a', name: 'get_weather', argumentsDelta: '{"city":' },
      { type: 'tool-call-delta', index: 3, argumentsDelta: '"Paris"}' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      { type: 'usage', usage: { inputTokens: 10, outputTokens: 4, cachedInputTokens: 2 } },
    ]);
    const chunks = await sdkChunks(sse);
    expect(sse.endsWith('data: [DONE]\n\n')).toBe(true);
    const id = chunks[0]!.id;
    expect(id).toMatch(/^chatcmpl-[A-Za-z0-9]{24}$/);
    expect(chunks.map((chunk) => [chunk.id, chunk.object, chunk.created, chunk.model])).toEqual(
      chunks.map(() => [id, 'chat.completion.chunk', 1764509999, 'my-model']),
    );
    expect(chunks.map((chunk) => chunk.choices)).toEqual([
      [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: { content: 'Let me check.' }, logprobs: null, finish_reason: null }],
      [
        {
          index: 0,
          delta: {
            tool_calls: [
              { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } },
            ],
          },
          logprobs: null,
          finish_reason: null,
        },
      ],
      [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
          logprobs: null,
          finish_reason: null,
        },
      ],
      [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] },
          logprobs: null,
          finish_reason: null,
        },
      ],
      [{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }],
      [],
    ]);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    expect(chunks.at(-1)!.usage).toEqual({
      prompt_tokens: 10,
      completion_tokens: 4,
      total_tokens: 14,
      prompt_tokens_details: { cached_tokens: 2 },
    });
  });

  it('no usage chunk and no usage key without include_usage', async () => {
    const sse = encode(
      [
        { type: 'response-start', id: 'x', model: 'm', created: 1 },
        { type: 'text-delta', text: 'a' },
        { type: 'finish', reason: 'stop', raw: 'stop' },
        { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
      ],
      context(false),
    );
    const chunks = await sdkChunks(sse);
    expect(chunks).toHaveLength(3);
    expect(chunks.every((chunk) => !('usage' in chunk))).toBe(true);
  });

  it('reasoning goes to delta.reasoning_content by default, to the configured field, or nowhere', async () => {
    const events: StreamEvent[] = [
      { type: 'response-start', id: 'x', model: 'm', created: 1 },
      { type: 'reasoning-delta', text: 'think' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    expect((await sdkChunks(encode(events)))[1]!.choices[0]!.delta).toEqual({ reasoning_content: 'think' });
    expect((await sdkChunks(encode(events, context(), { reasoningField: 'reasoning' })))[1]!.choices[0]!.delta).toEqual(
      { reasoning: 'think' },
    );
    expect(await sdkChunks(encode(events, context(), { reasoningField: 'none' }))).toHaveLength(2);
  });

  it('an error event becomes data: {"error":…} that the SDK throws on, and nothing follows', async () => {
    const sse = encode([
      { type: 'response-start', id: 'x', model: 'm', created: 1 },
      { type: 'text-delta', text: 'part' },
      { type: 'error', code: 'upstream_error', message: 'backend died' },
      { type: 'text-delta', text: 'ignored' },
    ]);
    expect(sse.split('\n\n').at(-2)).toBe(
      'data: {"error":{"message":"backend died","type":"server_error","param":null,"code":"upstream_error"}}',
    );
    expect(sse).not.toContain('[DONE]');
    await expect(sdkChunks(sse)).rejects.toMatchObject({ error: { message: 'backend died', type: 'server_error' } });
  });

  it('end() without a terminal event renders an in-band error', () => {
    const sse = encode([{ type: 'response-start', id: 'x', model: 'm', created: 1 }]);
    expect(sse).toContain('"error":{"message":"the stream ended before the model finished","type":"server_error"');
  });

  it.each([
    'vllm-text',
    'vllm-tool-calls-parallel',
    'vllm-reasoning',
    'llamacpp-usage-no-choices',
    'vllm-stop-sequence-continuous-usage',
  ] as const)('round trip %s: decode → encode → the SDK accumulator gives the upstream content', async (name) => {
    const events = decodeSlices([frameFixture(name)]);
    const completion = await sdkAccumulate(encode(events));
    const choice = completion.choices[0]!;
    const text = events.flatMap((event) => (event.type === 'text-delta' ? [event.text] : [])).join('');
    expect(choice.message.content ?? '').toBe(text);
    const finish = events.find((event) => event.type === 'finish');
    expect(choice.finish_reason).toBe(finish?.type === 'finish' ? finish.raw : undefined);
    const usage = events.filter((event) => event.type === 'usage').at(-1);
    expect(completion.usage?.prompt_tokens).toBe(usage?.type === 'usage' ? usage.usage.inputTokens : undefined);
    if (name === 'vllm-tool-calls-parallel') {
      expect(choice.message.tool_calls).toEqual([
        {
          id: 'chatcmpl-tool-8c1f0e',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
        },
        {
          id: 'chatcmpl-tool-93ab27',
          type: 'function',
          function: { name: 'get_time', arguments: '{"tz": "Europe/Paris"}' },
        },
      ]);
    }
  });

  it('round trip of a mid-stream upstream error: the SDK rejects with the message', async () => {
    const events = decodeSlices([frameFixture('vllm-error-mid-stream')]);
    await expect(sdkAccumulate(encode(events))).rejects.toMatchObject({
      error: { message: 'CUDA out of memory while decoding' },
    });
  });
});
