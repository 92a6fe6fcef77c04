/**
 * The nesting-depth limit on client JSON Schemas: a schema nested thousands of levels deep used
 * to overflow the stack in a later recursive walk (502 after retries on chat/responses/messages,
 * 500 on count_tokens); it must be a 400 `invalid_request` naming the field on every endpoint.
 */
import { IopError } from '@iop/core';
import { anthropicMessages } from '../../src/anthropic-messages/dialect.js';
import { decodeCountTokensRequest } from '../../src/anthropic-messages/count-tokens.js';
import { toBackendChatRequest } from '../../src/openai-chat/backend-request.js';
import { openaiChat } from '../../src/openai-chat/dialect.js';
import { openaiResponses } from '../../src/openai-responses/dialect.js';
import { assertJsonDepth, jsonDepth, MAX_JSON_DEPTH } from '../../src/shared/json-depth.js';
import { estimateRequestTokens, renderCountTokensText } from '../../src/shared/token-estimate.js';

/**
 * `levels` nested object schemas `{"type":"object","properties":{"x":{…}}}`: 2 JSON levels each, plus the innermost.
 */
function nestedSchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { x: schema } };
  return schema;
}

/** `levels` nested arrays `[[[…]]]`. */
function nestedArrays(levels: number): unknown[] {
  let value: unknown[] = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

function rejection(decode: () => unknown): {
  code: string;
  status: number;
  param: string | undefined;
  message: string;
} {
  try {
    decode();
  } catch (error) {
    expect(error).toBeInstanceOf(IopError);
    const e = error as IopError;
    return { code: e.code, status: e.status, param: e.param, message: e.message };
  }
  throw new Error('expected a rejection');
}

const HOSTILE = nestedSchema(5000);
const DEEP_BUT_FINE = nestedSchema(60); // 121 JSON levels

const chat = (extra: Record<string, unknown>) =>
  openaiChat.decodeRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
const messagesBody = (extra: Record<string, unknown>) => ({
  model: 'm',
  max_tokens: 64,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});
const messages = (extra: Record<string, unknown>) => anthropicMessages.decodeRequest(messagesBody(extra));
const responses = (extra: Record<string, unknown>) =>
  openaiResponses.decodeRequest({ model: 'm', input: 'hi', ...extra });

describe('jsonDepth', () => {
  it('counts nested objects and arrays, scalars being 0', () => {
    expect(jsonDepth('x')).toBe(0);
    expect(jsonDepth(null)).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth({ a: [] })).toBe(2);
    expect(jsonDepth({ a: 1, b: { c: [1, { d: 2 }] }, e: [] })).toBe(4);
    expect(jsonDepth(nestedSchema(60))).toBe(121);
  });

  it('stops at limit + 1 on a value deeper than the limit, without recursing', () => {
    expect(jsonDepth(HOSTILE, 128)).toBe(129);
    expect(jsonDepth(nestedArrays(200_000), 10)).toBe(11);
    expect(jsonDepth(nestedArrays(200_000))).toBe(200_000);
  });

  it('accepts exactly MAX_JSON_DEPTH levels and rejects one more', () => {
    expect(MAX_JSON_DEPTH).toBe(128);
    expect(() => assertJsonDepth(nestedArrays(MAX_JSON_DEPTH), 'p')).not.toThrow();
    expect(rejection(() => assertJsonDepth(nestedArrays(MAX_JSON_DEPTH + 1), 'p'))).toEqual({
      code: 'invalid_request',
      status: 400,
      param: 'p',
      message: 'p: nests more than 128 levels of objects and arrays',
    });
  });
});

describe('OpenAI Chat', () => {
  it('a too-deep tools[].function.parameters is a 400 naming it', () => {
    const tools = [
      { type: 'function', function: { name: 'ok', parameters: { type: 'object' } } },
      { type: 'function', function: { name: 'deep', parameters: HOSTILE } },
    ];
    expect(rejection(() => chat({ tools }))).toMatchObject({
      code: 'invalid_request',
      status: 400,
      param: 'tools[1].function.parameters',
    });
  });

  it('a too-deep response_format.json_schema.schema is a 400 naming it', () => {
    const response_format = { type: 'json_schema', json_schema: { name: 'r', schema: HOSTILE } };
    expect(rejection(() => chat({ response_format }))).toMatchObject({
      status: 400,
      param: 'response_format.json_schema.schema',
    });
  });

  it('a 60-level schema is accepted and reaches the backend body unchanged', () => {
    const request = chat({
      tools: [{ type: 'function', function: { name: 'deep', parameters: DEEP_BUT_FINE } }],
      response_format: { type: 'json_schema', json_schema: { name: 'r', schema: DEEP_BUT_FINE } },
    });
    expect(request.tools?.[0]?.parameters).toBe(DEEP_BUT_FINE);
    expect(request.responseFormat).toMatchObject({ type: 'json_schema', schema: DEEP_BUT_FINE });
    const body = toBackendChatRequest(request, { model: 'm', stream: false }).body as {
      tools: Array<{ function: { parameters: unknown } }>;
    };
    expect(body.tools[0]!.function.parameters).toEqual(DEEP_BUT_FINE);
  });
});

describe('Anthropic Messages and count_tokens', () => {
  const deepTool = { name: 'deep', input_schema: HOSTILE };

  it('a too-deep tools[].input_schema is a 400 naming it, on /v1/messages and on count_tokens', () => {
    const tools = [{ name: 'ok', input_schema: { type: 'object' } }, deepTool];
    expect(rejection(() => messages({ tools }))).toMatchObject({
      code: 'invalid_request',
      status: 400,
      param: 'tools.1.input_schema',
    });
    expect(rejection(() => decodeCountTokensRequest(messagesBody({ tools })))).toMatchObject({
      code: 'invalid_request',
      status: 400,
      param: 'tools.1.input_schema',
    });
  });

  it('a too-deep output_config.format.schema is a 400 naming it', () => {
    expect(
      rejection(() => messages({ output_config: { format: { type: 'json_schema', schema: HOSTILE } } })),
    ).toMatchObject({
      status: 400,
      param: 'output_config.format.schema',
    });
  });

  it('a too-deep tool_use input in the history is a 400 naming it', () => {
    const history = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'deep', input: HOSTILE }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'done' }] },
    ];
    expect(
      rejection(() => messages({ messages: history, tools: [{ name: 'deep', input_schema: { type: 'object' } }] })),
    ).toMatchObject({
      status: 400,
      param: 'messages.1.content.0.input',
    });
  });

  it('a 60-level schema is accepted and count_tokens renders it', () => {
    const request = decodeCountTokensRequest(messagesBody({ tools: [{ name: 'deep', input_schema: DEEP_BUT_FINE }] }));
    expect(request.tools?.[0]?.parameters).toBe(DEEP_BUT_FINE);
    const text = renderCountTokensText(request);
    expect(text).toContain(`{"name":"deep","parameters":${JSON.stringify(DEEP_BUT_FINE)}}`);
    expect(estimateRequestTokens(request)).toBeGreaterThan(JSON.stringify(DEEP_BUT_FINE).length / 4);
    expect(messages({ tools: [{ name: 'deep', input_schema: DEEP_BUT_FINE }] }).tools?.[0]?.parameters).toBe(
      DEEP_BUT_FINE,
    );
  });
});

describe('OpenAI Responses', () => {
  it('a too-deep tools[].parameters is a 400 naming it', () => {
    expect(
      rejection(() => responses({ tools: [{ type: 'function', name: 'deep', parameters: HOSTILE }] })),
    ).toMatchObject({
      code: 'invalid_request',
      status: 400,
      param: 'tools[0].parameters',
    });
  });

  it('a too-deep namespace member is a 400 naming it', () => {
    const tools = [
      {
        type: 'namespace',
        name: 'ns',
        description: 'd',
        tools: [
          { type: 'function', name: 'a' },
          { type: 'function', name: 'deep', parameters: HOSTILE },
        ],
      },
    ];
    expect(rejection(() => responses({ tools }))).toMatchObject({ status: 400, param: 'tools[0].tools[1].parameters' });
  });

  it('a too-deep text.format.schema is a 400 naming it', () => {
    expect(
      rejection(() => responses({ text: { format: { type: 'json_schema', name: 'r', schema: HOSTILE } } })),
    ).toMatchObject({
      status: 400,
      param: 'text.format.schema',
    });
  });

  it('a 60-level schema is accepted', () => {
    const request = responses({
      tools: [{ type: 'function', name: 'deep', parameters: DEEP_BUT_FINE }],
      text: { format: { type: 'json_schema', name: 'r', schema: DEEP_BUT_FINE } },
    });
    expect(request.tools?.[0]?.parameters).toBe(DEEP_BUT_FINE);
    expect(request.responseFormat).toMatchObject({ type: 'json_schema', schema: DEEP_BUT_FINE });
  });
});
