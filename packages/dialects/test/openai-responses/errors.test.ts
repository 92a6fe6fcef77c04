import { IopError } from '@iop/core';
import { openaiResponses } from '../../src/openai-responses/dialect.js';
import { responseErrorCode } from '../../src/openai-responses/errors.js';

describe('Responses errors', () => {
  it('renders the admission queue refusal (overloaded) as 429 rate_limit_error with Retry-After, like Chat', () => {
    const response = openaiResponses.errorResponse(
      new IopError('overloaded', 'no provider of `m` was free within 5000 ms', { retryAfterSeconds: 1 }),
      'req_7',
    );
    expect(response).toEqual({
      status: 429,
      headers: { 'x-request-id': 'req_7', 'retry-after': '1' },
      body: {
        error: {
          message: 'no provider of `m` was free within 5000 ms',
          type: 'rate_limit_error',
          param: null,
          code: 'rate_limit_exceeded',
        },
      },
    });
  });

  it('names the in-stream Response.error code of each iop code', () => {
    expect(
      [
        'rate_limited',
        'overloaded',
        'invalid_request',
        'unprocessable_entity',
        'conflict',
        'no_capacity',
        'upstream_internal',
      ].map((code) => responseErrorCode(code as never)),
    ).toEqual([
      'rate_limit_exceeded',
      'rate_limit_exceeded',
      'invalid_prompt',
      'invalid_prompt',
      'invalid_prompt',
      'server_error',
      'server_error',
    ]);
  });
});
