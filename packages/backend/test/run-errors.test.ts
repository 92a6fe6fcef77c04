import { RunErrorCode } from '@iop/proto';
import { runErrorInfo, runErrorName, runErrorToIopError } from '../src/run-errors';

describe('run error codes: the one table', () => {
  it('gives every code of the enum its name, retry kind and client error', () => {
    const table = Object.values(RunErrorCode)
      .filter((value): value is RunErrorCode => typeof value === 'number')
      .map((code) => [runErrorName(code), runErrorInfo(code).failure, runErrorToIopError(code, 'm').code]);
    expect(table).toEqual([
      ['unknown', 'no_response', 'upstream_error'],
      ['connect_failed', 'connect_failed', 'upstream_error'],
      ['backend_reset', 'reset', 'upstream_error'],
      ['first_byte_timeout', 'timeout', 'timeout'],
      ['idle_timeout', 'idle_timeout', 'timeout'],
      ['cancelled', 'no_response', 'upstream_error'],
      ['at_capacity', 'rejected', 'no_capacity'],
      ['internal', 'no_response', 'upstream_error'],
      ['agent_disconnected', 'reset', 'upstream_error'],
      ['run_rejected', 'rejected', 'no_capacity'],
      ['run_call_reset', 'reset', 'upstream_error'],
      ['run_accepted_timeout', 'timeout', 'timeout'],
      ['edge_shutdown', 'no_response', 'upstream_error'],
    ]);
  });

  it('words the client error as before the enum', () => {
    expect(runErrorToIopError(RunErrorCode.IDLE_TIMEOUT, 'no body byte for 30000 ms')).toMatchObject({
      code: 'timeout',
      message: 'upstream timeout: no body byte for 30000 ms',
    });
    expect(runErrorToIopError(RunErrorCode.AT_CAPACITY, '')).toMatchObject({
      code: 'no_capacity',
      message: 'no capacity: at_capacity',
      retryAfterSeconds: 1,
    });
    expect(runErrorToIopError(RunErrorCode.CANCELLED, 'x').message).toBe('the run was cancelled');
    expect(runErrorToIopError(RunErrorCode.UNSPECIFIED, '').message).toBe('upstream failure: run failed');
  });

  it('reads a value outside the enum (a newer peer) as UNSPECIFIED', () => {
    expect(runErrorInfo(99 as RunErrorCode)).toEqual(runErrorInfo(RunErrorCode.UNSPECIFIED));
  });
});
