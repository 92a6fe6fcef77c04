import type { InferenceRequest, StreamEvent } from '@iop/core';
import { toBackendChatRequest } from '../../src/openai-chat/backend-request.js';
import { restoreToolIds } from '../../src/openai-chat/tool-ids.js';

const base: InferenceRequest = {
  model: 'qwen3',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  stream: false,
};

describe('toBackendChatRequest', () => {
  it('a full conversation: system/developer → system, tool calls with content null, reasoning dropped, tool results', () => {
    const request: InferenceRequest = {
      model: 'client-name',
      stream: true,
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'Be brief.' },
            { type: 'text', text: 'Use tools.' },
          ],
        },
        { role: 'developer', content: [{ type: 'text', text: 'Dev rules.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather?' },
            { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'I should call the tool.', signature: 'sig' },
            { type: 'tool-call', id: 'toolu_01A', name: 'get_weather', arguments: '{"city":"Paris"}' },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_01A', content: [{ type: 'text', text: '18°C' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'It is ' },
            { type: 'text', text: '18°C.' },
          ],
        },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'Weather by city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: true,
        },
      ],
      toolChoice: { type: 'tool', name: 'get_weather' },
      parallelToolCalls: false,
      maxOutputTokens: 256,
      temperature: 0.2,
      topP: 0.9,
      topK: 20,
      seed: 7,
      stop: ['END'],
      responseFormat: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true },
      user: 'u-1',
      promptCacheKey: 'conv-1',
    };
    const { body, warnings } = toBackendChatRequest(request, { model: 'Qwen/Qwen3-8B', stream: true });
    expect(body).toEqual({
      model: 'Qwen/Qwen3-8B',
      messages: [
        { role: 'system', content: 'Be brief.\n\nUse tools.\n\nDev rules.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'toolu_01A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_01A', content: '18°C' },
        { role: 'assistant', content: 'It is 18°C.' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather by city',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
            strict: true,
          },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      max_tokens: 256,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 20,
      seed: 7,
      stop: ['END'],
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' }, strict: true } },
      user: 'u-1',
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(warnings).toEqual([]);
  });

  it('developerRole: developer keeps the developer role', () => {
    const request: InferenceRequest = {
      ...base,
      messages: [{ role: 'developer', content: [{ type: 'text', text: 'x' }] }, ...base.messages],
    };
    expect(
      toBackendChatRequest(request, { model: 'm', stream: false, developerRole: 'developer' }).body.messages,
    ).toEqual([
      { role: 'developer', content: 'x' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('non-stream: stream false and no stream_options; simple tool choices as strings; no tool_choice without tools', () => {
    const tools = [{ name: 'f', parameters: { type: 'object' } }];
    const { body } = toBackendChatRequest(
      { ...base, tools, toolChoice: { type: 'required' } },
      { model: 'm', stream: false },
    );
    expect(body).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: 'required',
      stream: false,
    });
    const bare = toBackendChatRequest(
      { ...base, toolChoice: { type: 'auto' }, parallelToolCalls: true },
      { model: 'm', stream: false },
    ).body;
    expect(bare).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: false });
  });

  it('a dialect that reports the prompt at the start asks for usage on every chunk (continuous_usage_stats)', () => {
    expect(
      toBackendChatRequest({ ...base, promptUsageAtStart: true }, { model: 'm', stream: true }).body.stream_options,
    ).toEqual({
      include_usage: true,
      continuous_usage_stats: true,
    });
    expect(toBackendChatRequest(base, { model: 'm', stream: true }).body.stream_options).toEqual({
      include_usage: true,
    });
    expect(
      toBackendChatRequest({ ...base, promptUsageAtStart: true }, { model: 'm', stream: false }).body.stream_options,
    ).toBeUndefined();
  });

  it('tool results with images go to a synthetic user message after the run of tool messages; isError gets a prefix', () => {
    const request: InferenceRequest = {
      ...base,
      messages: [
        {
          role: 'assistant',
          content: [
            { type: 'tool-call', id: 'a', name: 'shot', arguments: '{}' },
            { type: 'tool-call', id: 'b', name: 'read', arguments: '' },
          ],
        },
        {
          role: 'tool',
          toolCallId: 'a',
          content: [
            { type: 'text', text: 'taken' },
            { type: 'image', url: 'https://x.test/s.png' },
          ],
        },
        { role: 'tool', toolCallId: 'b', content: [], isError: true },
        { role: 'user', content: [{ type: 'text', text: 'next' }] },
      ],
    };
    const { body, warnings } = toBackendChatRequest(request, { model: 'm', stream: false });
    expect(body.messages).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'shot', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'read', arguments: '' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: 'taken' },
      { role: 'tool', tool_call_id: 'b', content: 'Error' },
      {
        role: 'user',
        // The client's next user message joins the synthetic one: roles still alternate.
        content: [
          { type: 'text', text: 'Attachments returned by tool call a:' },
          { type: 'image_url', image_url: { url: 'https://x.test/s.png' } },
          { type: 'text', text: 'next' },
        ],
      },
    ]);
    expect(warnings).toHaveLength(2);
  });

  it('reasoning switch: enable_thinking true/false via chat_template_kwargs, merged with backendExtra', () => {
    const on = toBackendChatRequest(
      { ...base, reasoning: { enabled: true, effort: 'high' } },
      { model: 'm', stream: false },
    ).body;
    expect(on.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(on.reasoning_effort).toBe('high');
    const off = toBackendChatRequest(
      { ...base, reasoning: { enabled: false }, backendExtra: { chat_template_kwargs: { custom: 1 }, min_p: 0.05 } },
      { model: 'm', stream: false },
    ).body;
    expect(off.chat_template_kwargs).toEqual({ enable_thinking: false, custom: 1 });
    expect(off.min_p).toBe(0.05);
    expect(off.reasoning_effort).toBeUndefined();
    const none = toBackendChatRequest(
      { ...base, reasoning: { enabled: true, effort: 'max' } },
      { model: 'm', stream: false, reasoningSwitch: 'none' },
    ).body;
    expect(none.chat_template_kwargs).toBeUndefined();
    expect(none.reasoning_effort).toBeUndefined();
  });

  it('alnum9: client ids become deterministic 9-char alnum ids and are restored in decoded events', () => {
    const request: InferenceRequest = {
      ...base,
      messages: [
        { role: 'assistant', content: [{ type: 'tool-call', id: 'toolu_01XyZ', name: 'f', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'toolu_01XyZ', content: [{ type: 'text', text: 'ok' }] },
        { role: 'assistant', content: [{ type: 'tool-call', id: 'abcDEF123', name: 'f', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'abcDEF123', content: [{ type: 'text', text: 'ok' }] },
      ],
    };
    const first = toBackendChatRequest(request, { model: 'm', stream: true, toolIdFormat: 'alnum9' });
    const second = toBackendChatRequest(request, { model: 'm', stream: true, toolIdFormat: 'alnum9' });
    const messages = first.body.messages as Array<Record<string, unknown>>;
    const mapped = (messages[0]!.tool_calls as Array<{ id: string }>)[0]!.id;
    expect(mapped).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(mapped).not.toBe('toolu_01XyZ');
    expect(messages[1]!.tool_call_id).toBe(mapped);
    expect((messages[2]!.tool_calls as Array<{ id: string }>)[0]!.id).toBe('abcDEF123');
    expect(second.body).toEqual(first.body);
    expect(first.toolIds.toClient(mapped)).toBe('toolu_01XyZ');
    expect(first.toolIds.toClient('newCall99')).toBe('newCall99');

    const events: StreamEvent[] = [];
    const restore = restoreToolIds(first.toolIds, (event) => events.push(event));
    restore({ type: 'tool-call-delta', index: 0, id: mapped, name: 'f', argumentsDelta: '' });
    restore({ type: 'tool-call-delta', index: 0, argumentsDelta: '{}' });
    expect(events).toEqual([
      { type: 'tool-call-delta', index: 0, id: 'toolu_01XyZ', name: 'f', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
    ]);
  });

  it('any: ids pass unchanged and the map is the identity', () => {
    const { toolIds } = toBackendChatRequest(base, { model: 'm', stream: false });
    expect(toolIds.identity).toBe(true);
    expect(toolIds.toClient('x')).toBe('x');
  });
});
