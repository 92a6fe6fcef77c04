import { IopError } from '@iop/core';
import { decodeChatRequest, peekChatRequest } from '../../src/openai-chat/request-decode.js';

const minimal = { model: 'qwen3', messages: [{ role: 'user', content: 'hi' }] };

function rejection(body: unknown): { code: string; status: number; param: string | undefined; message: string } {
  try {
    decodeChatRequest(body);
  } catch (error) {
    expect(error).toBeInstanceOf(IopError);
    const e = error as IopError;
    return { code: e.code, status: e.status, param: e.param, message: e.message };
  }
  throw new Error('expected a rejection');
}

describe('decodeChatRequest', () => {
  it('decodes a full request into the hub request', () => {
    const request = decodeChatRequest({
      model: 'qwen3',
      messages: [
        { role: 'developer', content: 'Rules.' },
        { role: 'system', content: [{ type: 'text', text: 'Sys.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'high' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'hmm',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'look', arguments: '{"x":1}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'seen' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'look', description: 'Look at x', parameters: { type: 'object' }, strict: true },
        },
        { type: 'function', function: { name: 'noop' } },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      max_tokens: 100,
      max_completion_tokens: 50,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      seed: 3,
      stop: 'END',
      n: 1,
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } },
      reasoning_effort: 'low',
      user: 'u',
      prompt_cache_key: 'k',
      stream: true,
      stream_options: { include_usage: true },
      presence_penalty: 0.5,
      store: true,
      unknown_key: 1,
    });
    expect(request).toEqual({
      model: 'qwen3',
      stream: true,
      includeUsage: true,
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'Rules.' }] },
        { role: 'system', content: [{ type: 'text', text: 'Sys.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image', url: 'data:image/png;base64,AAAA', detail: 'high' },
            { type: 'file', data: 'JVBERi0=', mediaType: 'application/pdf', filename: 'a.pdf' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'hmm' },
            { type: 'tool-call', id: 'call_1', name: 'look', arguments: '{"x":1}' },
          ],
        },
        { role: 'tool', toolCallId: 'call_1', content: [{ type: 'text', text: 'seen' }] },
      ],
      tools: [
        { name: 'look', description: 'Look at x', parameters: { type: 'object' }, strict: true },
        { name: 'noop', parameters: { type: 'object', properties: {} } },
      ],
      toolChoice: { type: 'auto' },
      parallelToolCalls: false,
      maxOutputTokens: 50,
      temperature: 0.5,
      topP: 0.9,
      topK: 40,
      seed: 3,
      stop: ['END'],
      responseFormat: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true },
      reasoning: { enabled: true, effort: 'low' },
      user: 'u',
      promptCacheKey: 'k',
      backendExtra: { presence_penalty: 0.5 },
      warnings: ['dropped store: a self-hosted backend does not use it'],
    });
  });

  it('stream_options without stream is fine and gives no includeUsage; reasoning_effort none turns reasoning off', () => {
    const request = decodeChatRequest({
      ...minimal,
      stream_options: { include_usage: true },
      reasoning_effort: 'none',
    });
    expect(request.stream).toBe(false);
    expect(request.includeUsage).toBeUndefined();
    expect(request.reasoning).toEqual({ enabled: false });
  });

  it('allowed_tools filters tools and maps the mode; a named function choice must exist', () => {
    const tools = ['a', 'b', 'c'].map((name) => ({ type: 'function', function: { name } }));
    const request = decodeChatRequest({
      ...minimal,
      tools,
      tool_choice: {
        type: 'allowed_tools',
        allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'b' } }] },
      },
    });
    expect(request.tools?.map((tool) => tool.name)).toEqual(['b']);
    expect(request.toolChoice).toEqual({ type: 'required' });
    expect(
      decodeChatRequest({ ...minimal, tools, tool_choice: { type: 'function', function: { name: 'c' } } }).toolChoice,
    ).toEqual({
      type: 'tool',
      name: 'c',
    });
    expect(rejection({ ...minimal, tools, tool_choice: { type: 'function', function: { name: 'zz' } } })).toMatchObject(
      {
        code: 'invalid_request',
        param: 'tool_choice.function.name',
      },
    );
  });

  it.each<[string, unknown, string, string]>([
    ['body not an object', [], 'invalid_request', ''],
    ['model missing', { messages: minimal.messages }, 'invalid_request', 'model'],
    ['model not a string', { ...minimal, model: 3 }, 'invalid_request', 'model'],
    ['messages empty', { ...minimal, messages: [] }, 'invalid_request', 'messages'],
    ['messages not an array', { ...minimal, messages: 'hi' }, 'invalid_request', 'messages'],
    ['unknown role', { ...minimal, messages: [{ role: 'bot', content: 'x' }] }, 'invalid_request', 'messages[0].role'],
    [
      'user content a number',
      { ...minimal, messages: [{ role: 'user', content: 1 }] },
      'invalid_request',
      'messages[0].content',
    ],
    [
      'image url not a URL',
      {
        ...minimal,
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }] }],
      },
      'invalid_request',
      'messages[0].content[0].image_url.url',
    ],
    [
      'system content with an image',
      { ...minimal, messages: [{ role: 'system', content: [{ type: 'image_url' }] }] },
      'invalid_request',
      'messages[0].content[0].type',
    ],
    [
      'tool message without tool_call_id',
      { ...minimal, messages: [{ role: 'tool', content: 'x' }] },
      'invalid_request',
      'messages[0].tool_call_id',
    ],
    [
      'tool call arguments not a string',
      {
        ...minimal,
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] },
        ],
      },
      'invalid_request',
      'messages[1].tool_calls[0].function.arguments',
    ],
    [
      'audio input',
      { ...minimal, messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] },
      'unsupported_field',
      'messages[0].content[0].type',
    ],
    [
      'function role',
      { ...minimal, messages: [{ role: 'function', name: 'f', content: 'x' }] },
      'unsupported_field',
      'messages[0].role',
    ],
    ['n > 1', { ...minimal, n: 2 }, 'unsupported_field', 'n'],
    ['n = 0', { ...minimal, n: 0 }, 'invalid_request', 'n'],
    ['logprobs', { ...minimal, logprobs: true }, 'unsupported_field', 'logprobs'],
    ['tools not an array', { ...minimal, tools: {} }, 'invalid_request', 'tools'],
    ['tool without function', { ...minimal, tools: [{ type: 'function' }] }, 'invalid_request', 'tools[0].function'],
    [
      'tool name with a space',
      { ...minimal, tools: [{ type: 'function', function: { name: 'get weather' } }] },
      'invalid_request',
      'tools[0].function.name',
    ],
    [
      'custom tool',
      { ...minimal, tools: [{ type: 'custom', custom: { name: 'x' } }] },
      'unsupported_field',
      'tools[0].type',
    ],
    ['temperature out of range', { ...minimal, temperature: 3 }, 'invalid_request', 'temperature'],
    ['max_tokens not an integer', { ...minimal, max_tokens: 1.5 }, 'invalid_request', 'max_tokens'],
    ['stream not a boolean', { ...minimal, stream: 'yes' }, 'invalid_request', 'stream'],
    [
      'include_usage not a boolean',
      { ...minimal, stream: true, stream_options: { include_usage: 1 } },
      'invalid_request',
      'stream_options.include_usage',
    ],
    ['stop entry not a string', { ...minimal, stop: ['a', 2] }, 'invalid_request', 'stop[1]'],
    [
      'bad response_format',
      { ...minimal, response_format: { type: 'xml' } },
      'invalid_request',
      'response_format.type',
    ],
    ['bad reasoning_effort', { ...minimal, reasoning_effort: 'extreme' }, 'invalid_request', 'reasoning_effort'],
    [
      'file_id',
      { ...minimal, messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] },
      'unsupported_field',
      'messages[0].content[0].file.file_id',
    ],
  ])('rejects %s', (_name, body, code, param) => {
    const error = rejection(body);
    expect(error.code).toBe(code);
    expect(error.status).toBe(400);
    expect(error.param).toBe(param === '' ? undefined : param);
    expect(error.message.length).toBeGreaterThan(0);
  });
});

describe('peekChatRequest', () => {
  it('returns model, stream and include_usage without decoding messages', () => {
    expect(
      peekChatRequest({
        model: 'm',
        messages: [{ role: 'bogus' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    ).toEqual({
      model: 'm',
      stream: true,
      includeUsage: true,
    });
    expect(peekChatRequest({ model: 'm', messages: [{}], stream_options: { include_usage: true } })).toEqual({
      model: 'm',
      stream: false,
      includeUsage: false,
    });
  });

  it('rejects what passthrough cannot work without', () => {
    expect(() => peekChatRequest({ messages: [{}] })).toThrow(expect.objectContaining({ param: 'model' }));
    expect(() => peekChatRequest({ model: 'm', messages: [] })).toThrow(expect.objectContaining({ param: 'messages' }));
    expect(() => peekChatRequest({ model: 'm', messages: [{}], stream: 1 })).toThrow(
      expect.objectContaining({ param: 'stream' }),
    );
  });
});
