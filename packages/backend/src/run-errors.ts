/**
 * What each run error code (proto/iop/v1/tunnel.proto `RunErrorCode`, the ERROR frame's `error_code`) means: its name
 * in logs and messages, the attempt failure it is for the pool's retry policy (apps/edge/src/pool/retry-policy.ts), and
 * the error a client gets (apps/edge/src/attempt/open-run.ts `runFailure`). The one table of it: the agent, the edge's
 * tunnel and its retry policy all read codes here.
 *
 * Retry kinds (docs/decisions/004-attempt-lifecycle.md): a run-accepted or first-byte timeout is `timeout`; an idle
 * timeout (no body byte for `idleTimeoutMs` once the body started) is `idle_timeout`: retried like a timeout — on
 * another provider, never again on the same one (the client would wait a second full timeout for the same silence) —
 * and only where a retry is possible at all (before the first byte reached the client: the stream gate's attempts).
 */
import { IopError } from '@iop/core';
import { RunErrorCode } from '@iop/proto';

export { RunErrorCode };

/** What a failed run is to the retry policy. */
export type RunFailureKind = 'connect_failed' | 'reset' | 'rejected' | 'timeout' | 'idle_timeout' | 'no_response';

/** How the client is told (`runErrorToIopError`). */
type ClientError = 'timeout' | 'no_capacity' | 'cancelled' | 'upstream';

export interface RunErrorInfo {
  /** The code's stable name (logs, metrics, messages; the string the ERROR frame carried before the enum). */
  name: string;
  /** The attempt failure it stands for. */
  failure: RunFailureKind;
  client: ClientError;
}

const info = (name: string, failure: RunFailureKind, client: ClientError): RunErrorInfo => ({ name, failure, client });

const UNKNOWN = info('unknown', 'no_response', 'upstream');

/**
 * What `code` means: the one mapping, an exhaustive switch (a code added to the enum without its case does not
 * compile). A value this side does not know (a newer peer) gets `UNSPECIFIED`'s entry, name `unknown`.
 */
export function runErrorInfo(code: RunErrorCode): RunErrorInfo {
  switch (code) {
    case RunErrorCode.UNSPECIFIED:
      return UNKNOWN;
    case RunErrorCode.CONNECT_FAILED:
      return info('connect_failed', 'connect_failed', 'upstream');
    case RunErrorCode.BACKEND_RESET:
      return info('backend_reset', 'reset', 'upstream');
    case RunErrorCode.FIRST_BYTE_TIMEOUT:
      return info('first_byte_timeout', 'timeout', 'timeout');
    case RunErrorCode.IDLE_TIMEOUT:
      return info('idle_timeout', 'idle_timeout', 'timeout');
    case RunErrorCode.CANCELLED:
      return info('cancelled', 'no_response', 'cancelled');
    case RunErrorCode.AT_CAPACITY:
      return info('at_capacity', 'rejected', 'no_capacity');
    case RunErrorCode.INTERNAL:
      return info('internal', 'no_response', 'upstream');
    case RunErrorCode.AGENT_DISCONNECTED:
      return info('agent_disconnected', 'reset', 'upstream');
    case RunErrorCode.RUN_REJECTED:
      return info('run_rejected', 'rejected', 'no_capacity');
    case RunErrorCode.RUN_CALL_RESET:
      return info('run_call_reset', 'reset', 'upstream');
    case RunErrorCode.RUN_ACCEPTED_TIMEOUT:
      return info('run_accepted_timeout', 'timeout', 'timeout');
    case RunErrorCode.EDGE_SHUTDOWN:
      return info('edge_shutdown', 'no_response', 'upstream');
    default:
      return unknownCode(code);
  }
}

/** A value outside the enum at run time; `never` at compile time, which makes the switch exhaustive. */
function unknownCode(code: never): RunErrorInfo {
  void code;
  return UNKNOWN;
}

/** The stable name of `code` (e.g. `idle_timeout`). */
export function runErrorName(code: RunErrorCode): string {
  return runErrorInfo(code).name;
}

/**
 * The error a client sees for a run that failed with `code` and the agent's or the tunnel's `message`: `timeout` for
 * the timeouts, `no_capacity` (Retry-After 1 s) for a refusal, `upstream_error` otherwise.
 */
export function runErrorToIopError(code: RunErrorCode, message: string): IopError {
  const { name, client } = runErrorInfo(code);
  const text = message || (code === RunErrorCode.UNSPECIFIED ? 'run failed' : name);
  switch (client) {
    case 'timeout':
      return new IopError('timeout', `upstream timeout: ${text}`);
    case 'no_capacity':
      return new IopError('no_capacity', `no capacity: ${text}`, { retryAfterSeconds: 1 });
    case 'cancelled':
      return new IopError('upstream_error', 'the run was cancelled');
    case 'upstream':
      return new IopError('upstream_error', `upstream failure: ${text}`);
  }
}
