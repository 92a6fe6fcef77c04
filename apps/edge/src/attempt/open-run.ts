/**
 * Opens a run for a client request on the provider pool and waits until it is safe to commit to it: the backend
 * answered 2xx AND its first body frame arrived. Everything before that point is invisible to the client, so failures
 * are retried here (passthrough path) or handed to the stream gate as errors (normalized path, `onlyFallback`: the
 * gate's commit boundary decides).
 *
 * Where and when a failed attempt is retried is `scheduleRetry`'s decision (attempt-scheduler.ts,
 * docs/decisions/004-attempt-lifecycle.md); this loop only runs attempts and reports them. Every run it starts is
 * reported to the request's `RequestRuns` (request-runs.ts), which cancels each one it stops waiting for (failed
 * attempt, deadline, client gone) at its agent.
 *
 * Per failed attempt (`RetryPolicy.decide`; docs/decisions/003-provider-pool.md "Failure handling: one commit
 * boundary"):
 * - connection failure, reset, agent lost, run rejected, 5xx, 429, a run-accepted or first-byte timeout (on another
 *   provider only): retried with jittered backoff (a `Retry-After` as floor; a 429 / 503 without one from hundreds of
 *   ms), within `maxAttempts`, the deadline and the pool-wide retry budget, on another provider when there is one, else
 *   on the SAME provider after the backoff (equal jitter, so never at once). Not retried when no provider of the group
 *   takes requests any more (the one that failed was just ejected as an outlier, or is draining or gone): the client
 *   gets the failure itself, not a 503 about the pool.
 * - 400 `context_length_exceeded`: never retried on the same model; the group's `contextFallback` (a longer-context
 *   group) serves it when configured.
 * - other 4xx: the client's fault, returned at once. Each verdict feeds the group's outlier detector.
 */
import { runErrorToIopError } from '@iop/backend';
import { IopError } from '@iop/core';
import type { ProviderTunnelFrame, Usage as FrameUsage } from '@iop/proto';
import type { Logger } from '../logger.js';
import type { ModelGroup } from '../pool/pool-config.js';
import type { RunStream } from '../pool/run-stream.js';
import type { AcquiredRun, PoolPick, ProviderPool } from '../pool/provider-pool.js';
import {
  failureOfRunError,
  isContextOverflow,
  outcomeOf,
  type AttemptFailure,
  type RequestAttempts,
} from '../pool/retry-policy.js';
import { scheduleRetry } from './attempt-scheduler.js';
import { stopError, type RequestDeadline } from './request-deadline.js';
import { RequestRuns } from './request-runs.js';
import type { RunRequest } from '../pool/run-stream.js';
import type { PrefixKeys } from '../pool/prefix-keys.js';
import { FrameKind } from '../tunnel/run-registry.js';
import { readUpstreamError } from '../http/upstream-error.js';

export interface OpenRunRequest extends Omit<RunRequest, 'model' | 'body'> {
  /** The client's model name (group, alias or served model). */
  model: string;
  /** The backend request body for a served model id (called once per attempt). */
  bodyFor(servedModel: string): Uint8Array;
  /** Prefix-affinity key, when affinity applies. */
  affinityKey?: number | undefined;
  /** The request's prefix keys (cache-aware routing). */
  prefixKeys?: PrefixKeys | undefined;
  /** The request's attempt record (shared by the gate's attempts); a new one when absent. */
  attempts?: RequestAttempts;
  /** Attempts allowed in this call (default: the pool's `retry.maxAttempts`). */
  maxAttempts?: number;
  /** Providers to avoid (faulted on earlier attempts of the gate). */
  avoid?: ReadonlySet<string>;
  /** Aborted when the request stops (client gone, deadline, write stall; `RequestDeadline.signal`). */
  signal?: AbortSignal;
  /** The request's runs: each run started is reported there, and cancelled through it (a new one when absent). */
  runs?: RequestRuns;
  /** The request's deadline: bounds each attempt's first-byte wait and every backoff. */
  deadline?: RequestDeadline | undefined;
  /**
   * The stream gate decides whether to retry (its commit boundary): this call retries only into
   * the group's context fallback and hands every other failure back at once.
   */
  onlyFallback?: boolean;
  /** Told about every failed attempt (the gate's dispatcher schedules the gate's next attempt from it). */
  onFailure?: (failure: AttemptFailure, error: IopError) => void;
  /**
   * A non-stream answer relayed as is: nothing reaches the client before its last byte, so the
   * commit point is the end of the body. A 2xx body that breaks first (ERROR frame, cut, not a
   * JSON object) is a failed attempt, retried like one before the first byte (issue: "never lose
   * a request to a failure that a retry could hide"). The answer comes back in `answer`.
   */
  wholeBody?: boolean;
  /**
   * A relayed stream's check of its first body frame (relay.ts `firstChunkFailure`): the commit
   * point is a first chunk that is well formed, so a malformed or error chunk there is a failed
   * attempt, retried like one before the first byte, not an in-band error after a 200.
   */
  checkFirst?: (body: Uint8Array) => IopError | undefined;
}

export interface OpenedRun {
  run: RunStream;
  /** The RESPONSE_START frame (2xx). */
  start: ProviderTunnelFrame;
  /** The frame that followed it (first BODY, or USAGE/END of an empty body); undefined when the frames ended. */
  first: ProviderTunnelFrame | undefined;
  /** Served model id. */
  model: string;
  /** Group that served it (a fallback group after a fallback). */
  group: ModelGroup;
  /** With `wholeBody`: the whole 2xx answer, checked to be a JSON object, and its usage. */
  answer?: WholeAnswer;
}

/** Maps an ERROR frame to the IopError a client sees (the one table: `@iop/backend` run-errors.ts). */
export function runFailure(frame: Pick<ProviderTunnelFrame, 'errorCode' | 'errorMessage'>): IopError {
  return runErrorToIopError(frame.errorCode, frame.errorMessage);
}

/** The attempt failure an IopError rendered from a backend status stands for. */
function statusFailure(error: IopError, start: ProviderTunnelFrame): AttemptFailure {
  return {
    kind: 'status',
    status: start.status,
    retryAfter: start.headers['retry-after'],
    errorCode: error.code === 'context_length_exceeded' ? error.code : undefined,
  };
}

/**
 * The attempt failure of a first body frame `checkFirst` rejected: the backend's own error chunk
 * counts as its status (a 4xx is the client's, not retried), anything else (a malformed chunk) as
 * a reset stream, retried.
 */
function firstBodyFailure(error: IopError): AttemptFailure {
  return error.code === 'upstream_error'
    ? { kind: 'reset', detail: 'malformed first chunk' }
    : { kind: 'status', status: error.status };
}

/** A non-stream answer read to its END (`wholeBody`). */
export interface WholeAnswer {
  body: Buffer;
  usage: FrameUsage | undefined;
}

type AttemptResult =
  | { start: ProviderTunnelFrame; first: ProviderTunnelFrame | undefined; answer?: WholeAnswer }
  | { error: IopError; failure: AttemptFailure };

/** First non-space byte `{`, last `}`: catches a truncated or garbled JSON answer without parsing it. */
function looksLikeJsonObject(body: Uint8Array): boolean {
  let from = 0;
  let to = body.length;
  while (from < to && body[from]! <= 0x20) from++;
  while (to > from && body[to - 1]! <= 0x20) to--;
  return to > from && body[from] === 0x7b && body[to - 1] === 0x7d;
}

/** Reads a 2xx answer to its END; a body that breaks first is the attempt's failure. */
async function wholeAnswer(run: RunStream, start: ProviderTunnelFrame): Promise<AttemptResult> {
  const parts: Uint8Array[] = [];
  let usage: FrameUsage | undefined;
  for (;;) {
    const next = await run.frames.next();
    if (next.done === true)
      return {
        error: new IopError('upstream_error', 'upstream failure: the answer ended before its end'),
        failure: { kind: 'reset', detail: 'ended' },
      };
    const frame = next.value;
    if (frame.kind === FrameKind.ERROR)
      return { error: runFailure(frame), failure: failureOfRunError(frame.errorCode) };
    if (frame.kind === FrameKind.BODY) parts.push(frame.body);
    else if (frame.kind === FrameKind.USAGE) usage = frame.usage;
    else if (frame.kind === FrameKind.END) break;
  }
  const body =
    parts.length === 1
      ? Buffer.from(parts[0]!.buffer, parts[0]!.byteOffset, parts[0]!.byteLength)
      : Buffer.concat(parts);
  if (!looksLikeJsonObject(body)) {
    return {
      error: new IopError('upstream_error', 'upstream failure: the backend sent a malformed response body'),
      failure: { kind: 'reset', detail: 'malformed body' },
    };
  }
  return { start, first: undefined, answer: { body, usage } };
}

/**
 * Runs one attempt up to its commit point (the first body frame, or with `wholeBody` the END); returns the opened run
 * or the failure.
 */
async function attemptOnce(
  run: RunStream,
  wholeBody: boolean,
  checkFirst: OpenRunRequest['checkFirst'],
): Promise<AttemptResult> {
  const head = await run.frames.next();
  const frame = head.done === true ? undefined : head.value;
  if (frame?.kind === FrameKind.RESPONSE_START) {
    if (frame.status >= 400) {
      const error = await readUpstreamError(run, frame.status, frame.headers['retry-after']);
      return { error, failure: statusFailure(error, frame) };
    }
    if (wholeBody) return wholeAnswer(run, frame);
    const next = await run.frames.next();
    const first = next.done === true ? undefined : next.value;
    if (first?.kind === FrameKind.ERROR)
      return { error: runFailure(first), failure: failureOfRunError(first.errorCode) };
    const rejected = first?.kind === FrameKind.BODY ? checkFirst?.(first.body) : undefined;
    if (rejected !== undefined) return { error: rejected, failure: firstBodyFailure(rejected) };
    return { start: frame, first };
  }
  if (frame === undefined)
    return {
      error: new IopError('upstream_error', 'the run ended without a response'),
      failure: { kind: 'no_response', detail: 'ended' },
    };
  return { error: runFailure(frame), failure: failureOfRunError(frame.errorCode) };
}

/** Whether the request was stopped (a function: the flag changes across awaits). */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** What every attempt's `RunRequest` takes from the `OpenRunRequest` as it is. */
type RunBase = Omit<
  OpenRunRequest,
  | 'bodyFor'
  | 'affinityKey'
  | 'prefixKeys'
  | 'attempts'
  | 'maxAttempts'
  | 'avoid'
  | 'signal'
  | 'onFailure'
  | 'wholeBody'
  | 'onlyFallback'
  | 'deadline'
  | 'checkFirst'
  | 'runs'
>;

/**
 * Picks a provider of `group` (the pool's queue and router, avoiding the providers tried) and starts attempt `call`'s
 * run on it, with the first-byte clock bounded by the deadline (a non-stream answer's first byte is the whole answer:
 * it may take the rest of the deadline) and an idempotency key per attempt.
 */
function startAttempt(
  pool: ProviderPool,
  group: ModelGroup,
  request: OpenRunRequest,
  base: RunBase,
  attempts: RequestAttempts,
  call: number,
): Promise<AcquiredRun> {
  const { avoid, deadline, signal, affinityKey, prefixKeys } = request;
  const exclude = avoid === undefined || avoid.size === 0 ? attempts.tried : new Set([...attempts.tried, ...avoid]);
  const number = attempts.count + 1;
  const remainingMs = deadline?.remainingMs();
  const firstByteTimeoutMs =
    remainingMs === undefined
      ? base.firstByteTimeoutMs
      : request.wholeBody === true
        ? remainingMs
        : Math.min(base.firstByteTimeoutMs ?? remainingMs, remainingMs);
  return pool.acquire(
    group,
    { exclude, affinityKey, prefixKeys, ...(signal === undefined ? {} : { signal }) },
    (pick) =>
      pick.provider.start({
        ...base,
        prefixKeys,
        firstByteTimeoutMs,
        model: pick.model,
        body: request.bodyFor(pick.model),
        idempotencyKey:
          call === 1 && request.idempotencyKey !== undefined
            ? request.idempotencyKey
            : `${request.idempotencyKey ?? request.requestId}:${number}`,
      }),
  );
}

/**
 * @param onRun called with each run as it starts (after `runs.started`), with the provider picked.
 * @throws IopError `model_not_found` (404) when nothing serves the model and it is not a known
 *   name, `no_capacity` (503, `Retry-After`) when it is known but no provider is connected now
 *   (`ProviderPool.acquire`); `rate_limited` (429,
 *   `Retry-After`) when the group's queue is full or the wait ran out; `timeout` (504) when the
 *   request deadline passed; the last attempt's failure (the backend's status and message, or a
 *   tunnel / timeout error) when no retry is left.
 */
export async function openRun(
  pool: ProviderPool,
  request: OpenRunRequest,
  log: Logger,
  onRun: (run: RunStream, pick: PoolPick) => void,
): Promise<OpenedRun> {
  const {
    bodyFor: _bodyFor,
    affinityKey: _affinityKey,
    prefixKeys: _prefixKeys,
    attempts: given,
    maxAttempts,
    avoid,
    signal,
    onFailure,
    wholeBody = false,
    onlyFallback = false,
    deadline,
    checkFirst,
    runs = new RequestRuns(),
    ...base
  } = request;
  const attempts = given ?? pool.begin();
  let group = pool.resolve(request.model);
  let current: RunStream | undefined;
  // The deadline or a stall stops the request: the run it waits on is cancelled at its agent.
  const unwatch = runs.cancelOnAbort(signal, () => current, 'request stopped');
  try {
    for (let call = 1; ; call++) {
      const acquired = await startAttempt(pool, group, request, base, attempts, call);
      const { run, pick, ticket } = acquired;
      group = acquired.group;
      current = run;
      attempts.record(pick.provider.id);
      runs.started(run);
      onRun(run, pick);
      if (aborted(signal)) runs.cancel(run, 'request stopped');
      const result = await attemptOnce(run, wholeBody, checkFirst);
      if ('start' in result && !aborted(signal)) {
        pool.report(group, ticket, 'success');
        return {
          run,
          start: result.start,
          first: result.first,
          model: pick.model,
          group,
          ...(result.answer === undefined ? {} : { answer: result.answer }),
        };
      }
      runs.cancel(run, 'attempt failed');
      if (!('failure' in result)) throw stopError(signal, new IopError('upstream_error', 'the request was stopped'));
      const { error, failure } = result;
      onFailure?.(failure, error);
      pool.report(group, ticket, aborted(signal) ? 'cancelled' : outcomeOf(failure));
      if (aborted(signal)) throw stopError(signal, error);
      if (onlyFallback && !isContextOverflow(failure)) throw error;
      const verdict = await scheduleRetry(
        {
          pool,
          group,
          attempts,
          avoid,
          maxAttempts,
          deadline,
          signal,
          log,
          fields: { providerId: pick.provider.id, model: pick.model },
        },
        failure,
      );
      if (verdict.action === 'fail') throw error;
      if (aborted(signal)) throw stopError(signal, error);
      if (verdict.action === 'fallback') group = verdict.group;
    }
  } finally {
    unwatch();
  }
}
