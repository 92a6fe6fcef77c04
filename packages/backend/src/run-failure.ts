/**
 * Why a run failed, as the ERROR frame's `error_code` (proto/iop/v1/tunnel.proto `RunErrorCode`; what each code means:
 * run-errors.ts).
 */
import { RunErrorCode, runErrorName } from './run-errors.js';

/** A run failure with its stable code. Also used as the AbortSignal reason of a run. */
export class RunFailure extends Error {
  readonly code: RunErrorCode;

  constructor(code: RunErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RunFailure';
    this.code = code;
  }

  /** The code's stable name (`connect_failed`, `idle_timeout`, …), for logs. */
  get codeName(): string {
    return runErrorName(this.code);
  }
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Maps anything a backend call threw to a RunFailure. `signal` is the run's signal: when it was
 * aborted, its reason (a RunFailure: cancel or timeout) wins over the error the abort caused.
 */
export function toRunFailure(error: unknown, signal: AbortSignal, started: boolean): RunFailure {
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    return reason instanceof RunFailure ? reason : new RunFailure(RunErrorCode.CANCELLED, 'run aborted');
  }
  if (error instanceof RunFailure) return error;
  const code = errorCodeOf(error);
  if (code !== undefined && CONNECT_CODES.has(code) && !started) {
    return new RunFailure(RunErrorCode.CONNECT_FAILED, `backend unreachable (${code})`, { cause: error });
  }
  if (code !== undefined && (code === 'ECONNRESET' || code === 'EPIPE' || code.startsWith('UND_ERR'))) {
    return new RunFailure(RunErrorCode.BACKEND_RESET, `backend connection failed (${code})`, { cause: error });
  }
  const message = (error as { message?: unknown } | null)?.message;
  return new RunFailure(RunErrorCode.INTERNAL, typeof message === 'string' ? message : 'internal error', {
    cause: error,
  });
}

/** The first `code` string along the error's cause chain (duck-typed: errors may come from another realm). */
function errorCodeOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
