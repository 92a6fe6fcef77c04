import { IopError, codeOfStatus, isRetryableStatus, statusOf } from '@iop/core';

describe('errors', () => {
  it('maps codes to the HTTP statuses clients expect', () => {
    expect(statusOf('invalid_request')).toBe(400);
    expect(statusOf('authentication')).toBe(401);
    expect(statusOf('model_not_found')).toBe(404);
    expect(statusOf('request_too_large')).toBe(413);
    expect(statusOf('no_capacity')).toBe(503);
    expect(new IopError('rate_limited', 'slow down', { retryAfterSeconds: 2 }).status).toBe(429);
  });

  it('derives retryability from the status (408, 409, 429, 5xx)', () => {
    expect([400, 401, 404, 408, 409, 429, 500, 503].map(isRetryableStatus)).toEqual([
      false, false, false, true, true, true, true, true,
    ]);
    expect(codeOfStatus(529)).toBe('no_capacity');
    expect(codeOfStatus(502)).toBe('upstream_error');
  });
});
