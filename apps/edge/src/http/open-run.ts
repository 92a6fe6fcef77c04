/**
 * Opens a run on a provider that serves the model and waits for the backend's answer to start
 * (RESPONSE_START). Failures before that point — the agent rejected the run, disconnected, could
 * not reach its backend, or the backend answered 5xx/429 — are retried on another agent, up to
 * `maxAttempts`; nothing has reached the client yet, so a retry is invisible to it.
 */
import { IopError, isRetryableStatus } from '@iop/core';
import type { ProviderTunnelFrame } from '@iop/proto';
import type { AgentRegistry } from '../pool/agent-registry.js';
import { pickLeastInFlight } from '../pool/least-in-flight.js';
import type { AgentSession } from '../tunnel/agent-session.js';
import { FrameKind, type RunHandle, type RunRegistry, type RunRequest } from '../tunnel/run-registry.js';
import type { Logger } from '../logger.js';

export interface OpenRunDeps {
  registry: AgentRegistry;
  runs: RunRegistry;
  maxAttempts: number;
  /** Agent ids to avoid (they faulted earlier in this request); used only while others are available. */
  avoidAgents?: ReadonlySet<string>;
}

export interface OpenedRun {
  handle: RunHandle;
  /** The RESPONSE_START frame (status and headers of the backend's answer). */
  start: ProviderTunnelFrame;
}

/** Agent error codes after which another agent may well succeed. */
const RETRYABLE_RUN_ERRORS = new Set(['agent_disconnected', 'run_rejected', 'run_open_timeout', 'connect_failed', 'backend_reset', 'at_capacity']);

/** Maps an ERROR frame to the IopError a client sees. */
export function runFailure(frame: ProviderTunnelFrame): IopError {
  const message = frame.errorMessage || frame.errorCode || 'run failed';
  switch (frame.errorCode) {
    case 'first_byte_timeout':
    case 'idle_timeout':
    case 'run_open_timeout':
      return new IopError('timeout', `upstream timeout: ${message}`);
    case 'at_capacity':
    case 'run_rejected':
      return new IopError('no_capacity', `no capacity: ${message}`, { retryAfterSeconds: 1 });
    case 'cancelled':
      return new IopError('upstream_error', 'the run was cancelled');
    default:
      return new IopError('upstream_error', `upstream failure: ${message}`);
  }
}

/**
 * @param onHandle called with each run as it starts, so a client disconnect can cancel it.
 * @throws IopError `model_not_found` (404) when no agent serves the model, `no_capacity` (503, Retry-After 1)
 *   when all are busy, or the last attempt's failure.
 * Returns a non-2xx RESPONSE_START as is when it is not retryable or attempts are spent; the caller renders it.
 */
export async function openRun(
  deps: OpenRunDeps,
  request: RunRequest,
  log: Logger,
  onHandle: (handle: RunHandle | undefined) => void,
): Promise<OpenedRun> {
  const tried = new Set<AgentSession>();
  let lastError: IopError | undefined;
  for (let attempt = 1; attempt <= deps.maxAttempts; attempt++) {
    const candidates = deps.registry.forModel(request.model);
    if (candidates.length === 0) {
      throw lastError ?? new IopError('model_not_found', `The model \`${request.model}\` does not exist or no provider serves it`, { param: 'model' });
    }
    const avoided = deps.avoidAgents === undefined || deps.avoidAgents.size === 0 ? tried : new Set([...tried, ...candidates.filter((candidate) => deps.avoidAgents!.has(candidate.agentId))]);
    const session = pickLeastInFlight(candidates, avoided) ?? (avoided === tried ? undefined : pickLeastInFlight(candidates, tried));
    if (session === undefined) {
      throw lastError ?? new IopError('no_capacity', `every provider of \`${request.model}\` is at capacity`, { retryAfterSeconds: 1 });
    }
    tried.add(session);
    const handle = deps.runs.start(session, { ...request, idempotencyKey: `${request.requestId}:${attempt}` });
    onHandle(handle);
    const first = await handle.frames.next();
    const frame = first.done === true ? undefined : first.value;
    if (frame?.kind === FrameKind.RESPONSE_START) {
      const retryable = isRetryableStatus(frame.status) && frame.status !== 408 && attempt < deps.maxAttempts && candidates.length > tried.size;
      if (!retryable) return { handle, start: frame };
      log.warn({ agentId: session.agentId, status: frame.status, attempt }, 'backend answered an error status; retrying on another provider');
      handle.cancel('retrying elsewhere');
      lastError = undefined;
      continue;
    }
    lastError = frame === undefined ? new IopError('upstream_error', 'the run ended without a response') : runFailure(frame);
    const code = frame?.errorCode ?? '';
    log.warn({ agentId: session.agentId, errorCode: code, attempt }, 'run failed before its first byte');
    if (!RETRYABLE_RUN_ERRORS.has(code)) throw lastError;
  }
  throw lastError ?? new IopError('upstream_error', 'no attempt succeeded');
}
