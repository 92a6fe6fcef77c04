import type { ErrorCode } from '@iop/core';
import { IopError } from '@iop/core';
import { anthropicMessages } from '../../src/anthropic-messages';

describe('errorResponse (docs/protocols.md "Messages errors")', () => {
  const cases: Array<[ErrorCode, number, string]> = [
    ['invalid_request', 400, 'invalid_request_error'],
    ['unsupported_field', 400, 'invalid_request_error'],
    ['context_length_exceeded', 400, 'invalid_request_error'],
    ['authentication', 401, 'authentication_error'],
    ['permission', 403, 'permission_error'],
    ['not_found', 404, 'not_found_error'],
    ['model_not_found', 404, 'not_found_error'],
    ['request_too_large', 413, 'request_too_large'],
    ['rate_limited', 429, 'rate_limit_error'],
    ['internal', 500, 'api_error'],
    ['upstream_error', 502, 'api_error'],
    ['no_capacity', 529, 'overloaded_error'],
    ['timeout', 504, 'timeout_error'],
  ];

  it.each(cases)('%s → %d %s', (code, status, type) => {
    const rendered = anthropicMessages.errorResponse(new IopError(code, 'what happened', { cause: new Error('secret') }), 'req_1');
    expect(rendered).toEqual({
      status,
      headers: { 'request-id': 'req_1' },
      body: { type: 'error', error: { type, message: 'what happened' }, request_id: 'req_1' },
    });
  });

  it('sets retry-after and keeps an explicit status', () => {
    const rendered = anthropicMessages.errorResponse(new IopError('rate_limited', 'slow down', { retryAfterSeconds: 7 }), 'req_2');
    expect(rendered.headers['retry-after']).toBe('7');
    expect(anthropicMessages.errorResponse(new IopError('invalid_request', 'bad', { status: 422 }), 'r').status).toBe(422);
    expect(anthropicMessages.errorResponse(new IopError('no_capacity', 'busy'), 'r').status).toBe(529);
  });
});
