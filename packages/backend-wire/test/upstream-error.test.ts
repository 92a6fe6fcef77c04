import { normalizeUpstreamError, upstreamErrorOf } from '../src/upstream-error.js';

describe('normalizeUpstreamError', () => {
  it('vLLM {type:"BadRequestError", code:400} → invalid_request (the dialect renders its own type)', () => {
    const error = normalizeUpstreamError(400, {
      error: { message: 'temperature must be >= 0', type: 'BadRequestError', param: 'temperature', code: 400 },
    });
    expect(error).toMatchObject({
      code: 'invalid_request',
      status: 400,
      param: 'temperature',
      message: 'temperature must be >= 0',
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

describe('upstreamErrorOf', () => {
  it('reads a JSON body, or its text, and takes a Retry-After in seconds when the body gave none', () => {
    const body = Buffer.from(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit', code: 429 } }));
    expect(upstreamErrorOf(429, body, '2')).toMatchObject({
      code: 'rate_limited',
      message: 'slow down',
      retryAfterSeconds: 2,
    });
    expect(upstreamErrorOf(502, Buffer.from('Bad Gateway'), undefined)).toMatchObject({
      code: 'upstream_error',
      message: 'Bad Gateway',
    });
    expect(upstreamErrorOf(503, Buffer.alloc(0), 'soon').retryAfterSeconds).toBeUndefined();
  });
});
