import { IopError, errorEventOf, iopErrorOf } from '@iop/core';

describe('errorEventOf / iopErrorOf', () => {
  it('keeps code, message, status, Retry-After and param across the stream', () => {
    const error = new IopError('model_not_found', 'The model `x` does not exist or no provider serves it', { param: 'model' });
    const event = errorEventOf(error);
    expect(event).toEqual({ type: 'error', code: 'model_not_found', message: 'The model `x` does not exist or no provider serves it', status: 404, param: 'model' });
    const back = iopErrorOf(event);
    expect(back).toBeInstanceOf(IopError);
    expect({ code: back.code, status: back.status, param: back.param, message: back.message }).toEqual({ code: 'model_not_found', status: 404, param: 'model', message: event.message });
  });

  it('carries an upstream status and Retry-After, and leaves absent fields out', () => {
    const event = errorEventOf(new IopError('rate_limited', 'slow down', { retryAfterSeconds: 3, status: 429 }));
    expect(event).toEqual({ type: 'error', code: 'rate_limited', message: 'slow down', status: 429, retryAfterSeconds: 3 });
    const back = iopErrorOf({ type: 'error', code: 'invalid_request', message: 'bad', status: 422 });
    expect({ status: back.status, param: back.param, retryAfterSeconds: back.retryAfterSeconds }).toEqual({ status: 422, param: undefined, retryAfterSeconds: undefined });
  });
});
