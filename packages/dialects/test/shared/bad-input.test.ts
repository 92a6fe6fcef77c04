/**
 * Regression tests for bad client input found by probing a running edge: each case is a body a
 * sloppy or hostile client sent that used to pass through to the backend (or fail there), and
 * must be a 400 naming the field.
 */
import { IopError } from '@iop/core';
import { anthropicMessages } from '../../src/anthropic-messages/dialect.js';
import { decodeCountTokensRequest } from '../../src/anthropic-messages/count-tokens.js';
import { openaiChat } from '../../src/openai-chat/dialect.js';
import { openaiResponses } from '../../src/openai-responses/dialect.js';

function rejection(
  decode: (body: unknown) => unknown,
  body: unknown,
): { code: string; status: number; param: string | undefined; message: string } {
  try {
    decode(body);
  } catch (error) {
    expect(error).toBeInstanceOf(IopError);
    const e = error as IopError;
    return { code: e.code, status: e.status, param: e.param, message: e.message };
  }
  throw new Error('expected a rejection');
}

const chat = (body: unknown) => openaiChat.decodeRequest(body);
const messages = (body: unknown) => anthropicMessages.decodeRequest(body);
const countTokens = (body: unknown) => decodeCountTokensRequest(body);
const responses = (body: unknown) => openaiResponses.decodeRequest(body);

const chatBody = (extra: Record<string, unknown>) => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});
const anthropicBody = (extra: Record<string, unknown>) => ({
  model: 'm',
  max_tokens: 2048,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});
const responsesBody = (extra: Record<string, unknown>) => ({ model: 'm', input: 'hi', ...extra });

describe('images and files whose base64 is broken (docs/protocols.md "Images and files")', () => {
  it('Chat: a data: URI with a non-base64 or empty payload', () => {
    const image = (url: string) =>
      chatBody({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] });
    expect(rejection(chat, image('data:image/png;base64,!!!notbase64'))).toMatchObject({
      status: 400,
      param: 'messages[0].content[0].image_url.url',
      message: 'messages[0].content[0].image_url.url has a payload that is not valid base64',
    });
    expect(rejection(chat, image('data:image/png;base64,'))).toMatchObject({
      status: 400,
      param: 'messages[0].content[0].image_url.url',
    });
    expect(chat(image('data:image/png;base64,iVBORw0KGgo=')).messages[0]).toEqual({
      role: 'user',
      content: [{ type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' }],
    });
  });

  it('Chat: file_data that is not base64', () => {
    const body = chatBody({
      messages: [
        { role: 'user', content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,%PDF-1.7' } }] },
      ],
    });
    expect(rejection(chat, body)).toMatchObject({ status: 400, param: 'messages[0].content[0].file.file_data' });
  });

  it('Anthropic: image and document source.data that is not base64, an image URL that is not http(s)', () => {
    const image = anthropicBody({
      messages: [
        {
          role: 'user',
          content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: '!!!' } }],
        },
      ],
    });
    expect(rejection(messages, image)).toMatchObject({
      status: 400,
      param: 'messages.0.content.0.source.data',
      message: 'messages.0.content.0.source.data: not valid base64 data',
    });
    const pdf = anthropicBody({
      messages: [
        {
          role: 'user',
          content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: '' } }],
        },
      ],
    });
    const ftp = anthropicBody({
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'ftp://host/a.png' } }] }],
    });
    expect(rejection(messages, ftp)).toMatchObject({
      status: 400,
      param: 'messages.0.content.0.source.url',
      message: 'messages.0.content.0.source.url: expected an http(s) URL',
    });
    expect(rejection(messages, pdf)).toMatchObject({
      status: 400,
      param: 'messages.0.content.0.source.data',
      message: 'messages.0.content.0.source.data: empty base64 data',
    });
  });

  it('Responses: input_image that is a malformed data: URI, not a URL, or bad base64; input_file that is not base64', () => {
    const image = (image_url: string) =>
      responsesBody({ input: [{ role: 'user', content: [{ type: 'input_image', image_url }] }] });
    expect(rejection(responses, image('data:'))).toMatchObject({
      status: 400,
      param: 'input[0].content[0].image_url',
      message: 'input[0].content[0].image_url must be a base64 data: URI (data:<mime>;base64,…)',
    });
    expect(rejection(responses, image('data:image/png;base64,!!!'))).toMatchObject({
      status: 400,
      param: 'input[0].content[0].image_url',
    });
    expect(rejection(responses, image('file:///etc/passwd'))).toMatchObject({
      status: 400,
      param: 'input[0].content[0].image_url',
    });
    const file = responsesBody({
      input: [{ role: 'user', content: [{ type: 'input_file', file_data: 'not base64!', filename: 'a.pdf' }] }],
    });
    expect(rejection(responses, file)).toMatchObject({ status: 400, param: 'input[0].content[0].file_data' });
  });
});

describe('tool results that answer no tool call (docs/protocols.md "Tool results")', () => {
  it('Anthropic: a tool_result with an unknown tool_use_id, in messages and in count_tokens', () => {
    const body = anthropicBody({
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_unknown', content: 'r' }] }],
    });
    const expected = {
      status: 400,
      param: 'messages.0.content.0.tool_use_id',
      message: 'messages.0.content.0.tool_use_id: no earlier tool_use block has the id "toolu_unknown"',
    };
    expect(rejection(messages, body)).toMatchObject(expected);
    expect(rejection(countTokens, body)).toMatchObject(expected);
  });

  it('Anthropic: a tool_result answering an earlier tool_use still decodes', () => {
    const request = messages(
      anthropicBody({
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'r' }] },
        ],
      }),
    ) as { messages: Array<{ role: string }> };
    expect(request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('Chat: a tool message with an unknown tool_call_id', () => {
    const body = chatBody({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'tool', tool_call_id: 'nope', content: 'r' },
      ],
    });
    expect(rejection(chat, body)).toMatchObject({
      status: 400,
      param: 'messages[1].tool_call_id',
      message: 'messages[1].tool_call_id: no earlier assistant tool call has the id "nope"',
    });
  });
});

describe('replayed tool-call arguments that are not a JSON object (docs/protocols.md "Tool calls and ids")', () => {
  const chatCall = (args: string) =>
    chatBody({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'r' },
      ],
    });

  it('Chat: non-JSON and non-object arguments are a 400 naming the field; "" and objects pass', () => {
    expect(rejection(chat, chatCall('{not json'))).toMatchObject({
      status: 400,
      param: 'messages[1].tool_calls[0].function.arguments',
      message:
        'messages[1].tool_calls[0].function.arguments must be a JSON object encoded as a string; it is not valid JSON',
    });
    expect(rejection(chat, chatCall('[1,2]'))).toMatchObject({
      status: 400,
      param: 'messages[1].tool_calls[0].function.arguments',
      message: 'messages[1].tool_calls[0].function.arguments must be a JSON object encoded as a string, got an array',
    });
    expect(() => chat(chatCall(''))).not.toThrow();
    expect(() => chat(chatCall('{"a":1}'))).not.toThrow();
  });

  it('Responses: a function_call item with non-JSON arguments', () => {
    const body = responsesBody({
      input: [
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{not json' },
        { type: 'function_call_output', call_id: 'c1', output: 'x' },
      ],
    });
    expect(rejection(responses, body)).toMatchObject({ status: 400, param: 'input[0].arguments' });
  });
});

describe('Anthropic numbers and thinking budget (docs/protocols.md "Messages request")', () => {
  it('max_tokens beyond the safe integer range is a 400 naming it, with the value', () => {
    expect(rejection(messages, anthropicBody({ max_tokens: 1e20 }))).toMatchObject({
      status: 400,
      param: 'max_tokens',
      message: 'max_tokens: expected an integer, got 100000000000000000000',
    });
  });

  it('thinking.budget_tokens must be below max_tokens', () => {
    const body = anthropicBody({ max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 2000 } });
    expect(rejection(messages, body)).toMatchObject({
      status: 400,
      param: 'thinking.budget_tokens',
      message: 'thinking.budget_tokens: must be less than max_tokens (2000), got 2000',
    });
    expect(() =>
      messages(anthropicBody({ max_tokens: 2001, thinking: { type: 'enabled', budget_tokens: 2000 } })),
    ).not.toThrow();
  });
});

describe('Responses input whose items are all dropped', () => {
  it('says the items were dropped rather than that input is empty', () => {
    expect(rejection(responses, responsesBody({ input: [{ type: 'hologram' }] }))).toMatchObject({
      status: 400,
      param: 'input',
      message:
        'input has no item a chat backend can take (dropped input item input[0] (hologram): a chat backend cannot replay it)',
    });
  });
});

describe('an error event that names a field keeps its param to the client', () => {
  const request = { model: 'm', messages: [], stream: true } as const;
  const context = { requestId: 'req_1', model: 'm', request: { ...request, messages: [] }, createdAt: 1_700_000_000 };
  const event = {
    type: 'error',
    code: 'model_not_found',
    message: 'The model `m` does not exist or no provider serves it',
    param: 'model',
  } as const;

  it('Chat stream: the in-band error object has param', () => {
    const encoder = openaiChat.createStreamEncoder(context);
    const text = encoder.push(event) + encoder.end();
    const first = JSON.parse(/^data: (.*)$/m.exec(text)![1]!);
    expect(first).toEqual({
      error: { message: event.message, type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
    });
  });

  it('non-stream encoders of all three dialects throw an IopError with param and status', () => {
    for (const dialect of [openaiChat, anthropicMessages, openaiResponses]) {
      const decoded =
        dialect === openaiChat
          ? context
          : {
              ...context,
              request: dialect.decodeRequest(dialect === anthropicMessages ? anthropicBody({}) : responsesBody({})),
            };
      const thrown = rejection(() => dialect.encodeResponse([event], decoded), undefined);
      expect(thrown).toMatchObject({ code: 'model_not_found', status: 404, param: 'model' });
    }
  });
});

describe('Chat: a wrongly typed union field says every form it takes', () => {
  it('stop, tool_choice and user content', () => {
    expect(rejection(chat, chatBody({ stop: 5 }))).toMatchObject({
      status: 400,
      param: 'stop',
      message: 'stop must be a string or an array of strings, got number',
    });
    expect(rejection(chat, chatBody({ tool_choice: 'bogus' }))).toMatchObject({
      status: 400,
      param: 'tool_choice',
      message: 'tool_choice must be "auto", "none", "required" or an object, got "bogus"',
    });
    expect(rejection(chat, chatBody({ messages: [{ role: 'user' }] }))).toMatchObject({
      status: 400,
      param: 'messages[0].content',
      message: 'messages[0].content must be a string or an array of content parts, got undefined',
    });
  });
});
