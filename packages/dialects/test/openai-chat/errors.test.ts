import { IopError } from '@iop/core';
import { openaiChat } from '../../src/openai-chat/dialect.js';
import { normalizeUpstreamError } from '@iop/backend-wire';
import { toOpenAIErrorBody } from '../../src/openai-chat/errors.js';

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

describe('toOpenAIErrorBody of an upstream error', () => {
  it('vLLM {type:"BadRequestError", code:400}: the OpenAI type on the way out, not vLLM\'s', () => {
    const error = normalizeUpstreamError(400, {
      error: { message: 'temperature must be >= 0', type: 'BadRequestError', param: 'temperature', code: 400 },
    });
    expect(toOpenAIErrorBody(error)).toEqual({
      error: { message: 'temperature must be >= 0', type: 'invalid_request_error', param: 'temperature', code: null },
    });
  });

  it('renders an upstream 500 as server_error / upstream_error', () => {
    expect(toOpenAIErrorBody(normalizeUpstreamError(500, 'Internal Server Error')).error).toMatchObject({
      type: 'server_error',
      code: 'upstream_error',
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
