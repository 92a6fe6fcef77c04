import {
  ErrorCodes,
  IopError,
  codeOfStatus,
  isRetryableCode,
  isRetryableStatus,
  statusOf,
  type ErrorCode,
} from '../src/errors.js';

describe('errors', () => {
  it('maps every code to one HTTP status', () => {
    const table = Object.fromEntries(ErrorCodes.map((code) => [code, statusOf(code)]));
    expect(table).toEqual({
      invalid_request: 400,
      unsupported_field: 400,
      context_length_exceeded: 400,
      authentication: 401,
      permission: 403,
      not_found: 404,
      model_not_found: 404,
      method_not_allowed: 405,
      request_timeout: 408,
      conflict: 409,
      request_too_large: 413,
      unprocessable_entity: 422,
      rate_limited: 429,
      overloaded: 429,
      internal: 500,
      upstream_internal: 500,
      upstream_error: 502,
      no_capacity: 503,
      timeout: 504,
    });
  });

  it('derives an IopError status from its code, whatever the options', () => {
    expect(new IopError('rate_limited', 'slow down', { retryAfterSeconds: 2 }).status).toBe(429);
    expect(new IopError('overloaded', 'queue full', { retryAfterSeconds: 1 })).toMatchObject({
      code: 'overloaded',
      status: 429,
      retryAfterSeconds: 1,
    });
    expect(new IopError('no_capacity', 'busy').status).toBe(503);
  });

  it('isRetryableStatus: 408, 409, 429 and 5xx except 501 and 505', () => {
    const statuses = [400, 401, 403, 404, 405, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 505, 529];
    expect(statuses.filter(isRetryableStatus)).toEqual([408, 409, 429, 500, 502, 503, 504, 529]);
  });

  it('isRetryableCode and IopError.retryable follow the status of the code', () => {
    const retryable: ErrorCode[] = [
      'request_timeout',
      'conflict',
      'rate_limited',
      'overloaded',
      'internal',
      'upstream_internal',
      'upstream_error',
      'no_capacity',
      'timeout',
    ];
    expect(ErrorCodes.filter(isRetryableCode)).toEqual(retryable);
    expect(ErrorCodes.filter((code) => new IopError(code, 'x').retryable)).toEqual(retryable);
  });

  it('maps upstream statuses to codes whose status is the upstream one where iop has a code for it', () => {
    const statuses = [400, 401, 403, 404, 405, 408, 409, 413, 418, 422, 429, 500, 501, 502, 503, 504, 529];
    expect(statuses.map((status) => [status, codeOfStatus(status), statusOf(codeOfStatus(status))])).toEqual([
      [400, 'invalid_request', 400],
      [401, 'authentication', 401],
      [403, 'permission', 403],
      [404, 'not_found', 404],
      [405, 'method_not_allowed', 405],
      [408, 'request_timeout', 408],
      [409, 'conflict', 409],
      [413, 'request_too_large', 413],
      [418, 'invalid_request', 400],
      [422, 'unprocessable_entity', 422],
      [429, 'rate_limited', 429],
      [500, 'upstream_internal', 500],
      [501, 'upstream_error', 502],
      [502, 'upstream_error', 502],
      [503, 'no_capacity', 503],
      [504, 'timeout', 504],
      [529, 'no_capacity', 503],
    ]);
  });
});
