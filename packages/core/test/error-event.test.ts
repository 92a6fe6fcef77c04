import { IopError } from '../src/errors.js';
import { errorEventOf, iopErrorOf } from '../src/events.js';

describe('errorEventOf / iopErrorOf', () => {
  it('keeps code, message, Retry-After and param across the stream; the status follows the code', () => {
    const error = new IopError('model_not_found', 'The model `x` does not exist or no provider serves it', {
      param: 'model',
    });
    const event = errorEventOf(error);
    expect(event).toEqual({
      type: 'error',
      code: 'model_not_found',
      message: 'The model `x` does not exist or no provider serves it',
      param: 'model',
    });
    const back = iopErrorOf(event);
    expect(back).toBeInstanceOf(IopError);
    expect({ code: back.code, status: back.status, param: back.param, message: back.message }).toEqual({
      code: 'model_not_found',
      status: 404,
      param: 'model',
      message: event.message,
    });
  });

  it('carries Retry-After, and leaves absent fields out', () => {
    const event = errorEventOf(new IopError('overloaded', 'queue full', { retryAfterSeconds: 3 }));
    expect(event).toEqual({ type: 'error', code: 'overloaded', message: 'queue full', retryAfterSeconds: 3 });
    const back = iopErrorOf({ type: 'error', code: 'unprocessable_entity', message: 'bad' });
    expect({ status: back.status, param: back.param, retryAfterSeconds: back.retryAfterSeconds }).toEqual({
      status: 422,
      param: undefined,
      retryAfterSeconds: undefined,
    });
  });
});
