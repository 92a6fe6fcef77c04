import { IopError } from '@iop/core';
import { openaiChat } from '../../src/openai-chat/dialect.js';
import { normalizeUpstreamError, toOpenAIErrorBody } from '../../src/openai-chat/errors.js';

describe('toOpenAIErrorBody', () => {
  it.each<[ConstructorParameters<typeof IopError>[0], string, string | null]>([
    ['invalid_request', 'invalid_request_error', null],
    ['unsupported_field', 'invalid_request_error', 'unsupported_parameter'],
    ['context_length_exceeded', 'invalid_request_error', 'context_length_exceeded'],
    ['authentication', 'authentication_error', 'invalid_api_key'],
    ['permission', 'permission_error', null],
    ['not_found', 'invalid_request_error', 'not_found'],
    ['model_not_found', 'invalid_request_error', 'model_not_found'],
    ['method_not_allowed', 'invalid_request_error', 'method_not_allowed'],
    ['request_timeout', 'server_error', 'timeout'],
    ['conflict', 'invalid_request_error', null],
    ['request_too_large', 'invalid_request_error', 'request_too_large'],
    ['unprocessable_entity', 'invalid_request_error', null],
    ['rate_limited', 'rate_limit_error', 'rate_limit_exceeded'],
    ['overloaded', 'rate_limit_error', 'rate_limit_exceeded'],
    ['internal', 'server_error', null],
    ['upstream_internal', 'server_error', 'upstream_error'],
    ['upstream_error', 'server_error', 'upstream_error'],
    ['no_capacity', 'server_error', 'no_capacity'],
    ['timeout', 'server_error', 'timeout'],
  ])('%s → type %s, code %s', (code, type, wireCode) => {
    expect(toOpenAIErrorBody(new IopError(code, 'msg', { param: 'n' }))).toEqual({
      error: { message: 'msg', type, param: 'n', code: wireCode },
    });
  });
});

describe('normalizeUpstreamError', () => {
  it('vLLM {type:"BadRequestError", code:400} → invalid_request, OpenAI type on the way out', () => {
    const error = normalizeUpstreamError(400, {
      error: { message: 'temperature must be >= 0', type: 'BadRequestError', param: 'temperature', code: 400 },
    });
    expect(error).toMatchObject({
      code: 'invalid_request',
      status: 400,
      param: 'temperature',
      message: 'temperature must be >= 0',
    });
    expect(toOpenAIErrorBody(error)).toEqual({
      error: { message: 'temperature must be >= 0', type: 'invalid_request_error', param: 'temperature', code: null },
    });
  });

  it('recognizes context overflow from vLLM, llama.cpp, SGLang and OpenAI-style bodies', () => {
    expect(
      normalizeUpstreamError(400, {
        error: { message: "Input is longer than the model's context length (8192 tokens)" },
      }).code,
    ).toBe('context_length_exceeded');
    expect(normalizeUpstreamError(400, { error: { message: 'too long', type: 'context_length_exceeded' } }).code).toBe(
      'context_length_exceeded',
    );
    expect(normalizeUpstreamError(400, { error: { message: 'temperature must be ≤ 2' } }).code).toBe('invalid_request');
    expect(
      normalizeUpstreamError(400, {
        error: {
          message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
          type: 'BadRequestError',
          code: 400,
        },
      }).code,
    ).toBe('context_length_exceeded');
    expect(
      normalizeUpstreamError(
        400,
        '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}',
      ).code,
    ).toBe('context_length_exceeded');
  });

  it('reads Ollama {error:"…"}, FastAPI {detail}, plain text; keeps 4xx status, maps 5xx', () => {
    expect(normalizeUpstreamError(404, { error: 'model "llama3" not found, try pulling it first' })).toMatchObject({
      code: 'not_found',
      status: 404,
      message: 'model "llama3" not found, try pulling it first',
    });
    expect(normalizeUpstreamError(422, { detail: 'Field required' })).toMatchObject({
      code: 'unprocessable_entity',
      status: 422,
      message: 'Field required',
    });
    expect(normalizeUpstreamError(500, 'Internal Server Error')).toMatchObject({
      code: 'upstream_internal',
      status: 500,
      message: 'Internal Server Error',
    });
    expect(toOpenAIErrorBody(normalizeUpstreamError(500, 'Internal Server Error')).error).toMatchObject({
      type: 'server_error',
      code: 'upstream_error',
    });
    expect(normalizeUpstreamError(408, 'Request Timeout')).toMatchObject({ code: 'request_timeout', status: 408 });
    expect(normalizeUpstreamError(418, "I'm a teapot")).toMatchObject({ code: 'invalid_request', status: 400 });
    expect(normalizeUpstreamError(502, 'Bad Gateway')).toMatchObject({ code: 'upstream_error', status: 502 });
    expect(normalizeUpstreamError(503, undefined)).toMatchObject({
      code: 'no_capacity',
      status: 503,
      message: 'upstream answered HTTP 503',
    });
  });
});

describe('openaiChat.errorResponse', () => {
  it('renders status, x-request-id, retry-after and the OpenAI body', () => {
    const response = openaiChat.errorResponse(
      new IopError('rate_limited', 'slow down', { retryAfterSeconds: 2.5 }),
      'req_9',
    );
    expect(response).toEqual({
      status: 429,
      headers: { 'x-request-id': 'req_9', 'retry-after': '3' },
      body: { error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } },
    });
  });

  it('renders the admission queue refusal (overloaded) as 429 rate_limit_error with Retry-After', () => {
    const response = openaiChat.errorResponse(
      new IopError('overloaded', 'the queue of `m` is full (0 waiting)', { retryAfterSeconds: 1 }),
      'req_8',
    );
    expect(response).toEqual({
      status: 429,
      headers: { 'x-request-id': 'req_8', 'retry-after': '1' },
      body: {
        error: {
          message: 'the queue of `m` is full (0 waiting)',
          type: 'rate_limit_error',
          param: null,
          code: 'rate_limit_exceeded',
        },
      },
    });
  });

  it('decodeRequest and the encoders are wired', () => {
    const request = openaiChat.decodeRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(openaiChat.name).toBe('openai-chat');
    const encoder = openaiChat.createStreamEncoder({ requestId: 'r', model: 'm', request, createdAt: 1 });
    expect(encoder.push({ type: 'text-delta', text: 'x' })).toContain('"delta":{"content":"x"}');
  });
});
