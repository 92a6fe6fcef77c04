import type { ErrorCode } from '@iop/core';
import { ErrorCodes, IopError } from '@iop/core';
import { anthropicMessages } from '../../src/anthropic-messages/dialect.js';

describe('errorResponse (docs/protocols.md "Messages errors")', () => {
  const cases: Array<[ErrorCode, number, string]> = [
    ['invalid_request', 400, 'invalid_request_error'],
    ['unsupported_field', 400, 'invalid_request_error'],
    ['context_length_exceeded', 400, 'invalid_request_error'],
    ['authentication', 401, 'authentication_error'],
    ['permission', 403, 'permission_error'],
    ['not_found', 404, 'not_found_error'],
    ['model_not_found', 404, 'not_found_error'],
    ['method_not_allowed', 405, 'invalid_request_error'],
    ['request_timeout', 408, 'timeout_error'],
    ['conflict', 409, 'invalid_request_error'],
    ['request_too_large', 413, 'request_too_large'],
    ['unprocessable_entity', 422, 'invalid_request_error'],
    ['rate_limited', 429, 'rate_limit_error'],
    ['overloaded', 529, 'overloaded_error'],
    ['internal', 500, 'api_error'],
    ['upstream_internal', 500, 'api_error'],
    ['upstream_error', 502, 'api_error'],
    ['no_capacity', 529, 'overloaded_error'],
    ['timeout', 504, 'timeout_error'],
  ];

  it('covers every code', () => {
    expect(cases.map(([code]) => code).sort()).toEqual([...ErrorCodes].sort());
  });

  it.each(cases)('%s → %d %s', (code, status, type) => {
    const rendered = anthropicMessages.errorResponse(
      new IopError(code, 'what happened', { cause: new Error('secret') }),
      'req_1',
    );
    expect(rendered).toEqual({
      status,
      ...(status === 529 ? { statusMessage: 'Overloaded' } : {}),
      headers: { 'request-id': 'req_1' },
      body: { type: 'error', error: { type, message: 'what happened' }, request_id: 'req_1' },
    });
  });

  it('sets retry-after', () => {
    const rendered = anthropicMessages.errorResponse(
      new IopError('rate_limited', 'slow down', { retryAfterSeconds: 7 }),
      'req_2',
    );
    expect(rendered.headers['retry-after']).toBe('7');
  });

  it('renders the admission queue refusal (overloaded) as 529 overloaded_error with Retry-After', () => {
    const rendered = anthropicMessages.errorResponse(
      new IopError('overloaded', 'the queue of `m` is full (0 waiting)', { retryAfterSeconds: 1 }),
      'req_3',
    );
    expect(rendered).toEqual({
      status: 529,
      statusMessage: 'Overloaded',
      headers: { 'request-id': 'req_3', 'retry-after': '1' },
      body: {
        type: 'error',
        error: { type: 'overloaded_error', message: 'the queue of `m` is full (0 waiting)' },
        request_id: 'req_3',
      },
    });
  });
});
