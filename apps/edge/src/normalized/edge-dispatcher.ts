/**
 * The gate's way out: one attempt = one run on a provider, its chat SSE decoded into events.
 * Routing avoids the providers that faulted earlier in the same request; every failure before
 * the backend's answer (no provider, tunnel failure, non-2xx status) becomes an `error` event with
 * its HTTP status, and the gate decides whether to retry (its commit boundary knows whether the
 * client has seen anything).
 */
import { IopError, errorEventOf, type StreamEvent } from '@iop/core';
import type { AttemptRequest, DispatchedAttempt, Dispatcher } from '@iop/stream-gate';
import type { EdgeContext } from '../edge-context.js';
import { createChatStreamDecoder, restoreToolIds, toBackendChatRequest } from '../dialects.js';
import { fitOutputLimit } from './output-limit.js';
import { openRun, runFailure, type OpenedRun } from '../attempt/open-run.js';
import type { ModelGroup } from '../pool/pool-config.js';
import type { RunStream } from '../pool/run-stream.js';
import type { PoolPick } from '../pool/provider-pool.js';
import { failureOfRunError, type AttemptFailure, type RequestAttempts } from '../pool/retry-policy.js';
import { scheduleRetry } from '../attempt/attempt-scheduler.js';
import type { RequestDeadline } from '../attempt/request-deadline.js';
import { RequestRuns } from '../attempt/request-runs.js';
import { FrameKind } from '../tunnel/run-registry.js';
import type { Logger } from '../logger.js';
import type { PrefixKeys } from '../pool/prefix-keys.js';
import type { AttemptUsage } from '../attempt/usage-recorder.js';

export interface EdgeDispatcherOptions {
  edge: EdgeContext;
  requestId: string;
  log: Logger;
  /** Prefix-affinity key of the request, when affinity applies. */
  affinityKey?: number | undefined;
  /** The request's prefix keys (cache-aware routing). */
  prefixKeys?: PrefixKeys | undefined;
  /** The request's deadline across every gate attempt. */
  deadline?: RequestDeadline | undefined;
  /** The request's runs: every attempt's run is reported there and cancelled through it. */
  runs?: RequestRuns | undefined;
  /** Called with every run started and its serving provider. */
  onRun?: (run: RunStream, pick: PoolPick) => void;
  /** Called, before the run starts, with what building the backend request changed (for `x-iop-warnings`). */
  onWarnings?: (warnings: readonly string[]) => void;
  /**
   * Called as each run of an attempt starts; the attempt's usage and generated chunks (text,
   * reasoning, tool-call deltas) are recorded on what it returns, whether the gate releases the
   * attempt or discards it: every attempt's backend work is billed (attempt/usage-recorder.ts).
   */
  onAttempt?: () => AttemptUsage;
  /**
   * Providers never to pick for this request (those that say they do not serve chat: passthrough/served-apis.ts).
   */
  withoutApi?: ReadonlySet<string> | undefined;
}

const errorEvent = errorEventOf;

/** The tool-call ids a backend request rewrote (`toBackendChatRequest`), restored in its answer. */
type ToolIds = ReturnType<typeof toBackendChatRequest>['toolIds'];

/**
 * One dispatcher per client request. The gate decides WHETHER to retry (its commit boundary);
 * where and when is `scheduleRetry`'s (the same scheduler as the passthrough path): before a
 * retry after a provider fault it waits the backoff the pool's retry policy gives, and gives the
 * gate the previous failure again when the scheduler says no (limit, budget, deadline, a timeout
 * on the only provider, no provider of the group takes requests any more) — so a failing pool is
 * never hammered by gate retries either.
 *
 * The gate counts its own attempts for its final message ("(after N attempts)"): every gate
 * attempt the policy allows reaches a provider; one it refuses is answered at once with the
 * previous failure and marked `refused`, so the gate stops there and does not count it.
 */
export class EdgeDispatcher implements Dispatcher {
  private attempts: RequestAttempts | undefined;
  /** The last attempt's failure before its first byte (or its mid-stream run error). */
  private lastFailure: { failure: AttemptFailure; error: IopError } | undefined;
  /**
   * Admission control refused the request: the gate's further attempts get the same answer at once (no second wait).
   */
  private refusal: IopError | undefined;
  private group: ModelGroup | undefined;
  private readonly runs: RequestRuns;

  constructor(private readonly options: EdgeDispatcherOptions) {
    this.runs = options.runs ?? new RequestRuns();
  }

  dispatch(attempt: AttemptRequest, signal: AbortSignal): DispatchedAttempt {
    const state: { provider?: string; refused?: boolean } = {};
    const events = this.attemptEvents(attempt, signal, state);
    return {
      events,
      get provider() {
        return state.provider;
      },
      get refused() {
        return state.refused === true;
      },
    };
  }

  /** Undefined when the retry may go ahead (after the backoff it waited); else the error to give the gate. */
  private async retryGate(signal: AbortSignal, avoid: ReadonlySet<string>): Promise<IopError | undefined> {
    if (this.refusal !== undefined) return this.refusal;
    const last = this.lastFailure;
    const attempts = this.attempts;
    if (last === undefined || attempts === undefined) return undefined;
    const { edge, log, deadline } = this.options;
    const verdict = await scheduleRetry(
      { pool: edge.pool, group: this.group!, attempts, avoid, deadline, signal, log, fields: { gate: true } },
      last.failure,
    );
    if (verdict.action !== 'retry') return last.error;
    // Only an allowed retry clears the failure: a refused one stays, so later gate attempts are refused too.
    this.lastFailure = undefined;
    return undefined;
  }

  /**
   * The backend body of `attempt` for a served model id (OpenAI Chat, streamed; the output limit fitted to the
   * model's context); `onToolIds` gets the tool-call ids it rewrote, to restore in the answer.
   */
  private backendBody(attempt: AttemptRequest, onToolIds: (ids: ToolIds) => void): (model: string) => Uint8Array {
    const { edge, log } = this.options;
    const { pool } = edge;
    return (model) => {
      const fitted = fitOutputLimit(attempt.request, pool.contextLength(model), log);
      const backend = toBackendChatRequest(fitted.request, {
        model,
        stream: true,
        toolIdFormat: pool.toolIdFormatOf(model),
        billingHeader: edge.config.billingHeader,
      });
      this.options.onWarnings?.(
        fitted.warning === undefined ? backend.warnings : [...backend.warnings, fitted.warning],
      );
      if (attempt.prefill !== undefined) {
        // vLLM / SGLang: continue the final assistant message instead of starting a new turn.
        backend.body.continue_final_message = true;
        backend.body.add_generation_prompt = false;
      }
      onToolIds(backend.toolIds);
      return Buffer.from(JSON.stringify(backend.body));
    };
  }

  /**
   * The opened run's chat SSE decoded into events (its tool-call ids restored); the attempt's usage and generated
   * chunks are recorded on `billed`; an ERROR frame becomes an `error` event (and the attempt's failure).
   */
  private async *decodedEvents(
    opened: OpenedRun,
    toolIds: ToolIds,
    billed: AttemptUsage | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent> {
    const pending: StreamEvent[] = [];
    const decoder = createChatStreamDecoder(
      restoreToolIds(toolIds, (event) => {
        if (billed !== undefined) {
          if (event.type === 'usage') billed.usage = event.usage;
          else if (event.type === 'text-delta' || event.type === 'reasoning-delta' || event.type === 'tool-call-delta')
            billed.generated++;
        }
        pending.push(event);
      }),
    );
    const consume = (frame: OpenedRun['start']) => {
      if (frame.kind === FrameKind.BODY) decoder.push(frame.body);
      else if (frame.kind === FrameKind.ERROR) {
        const error = runFailure(frame);
        this.lastFailure = { failure: failureOfRunError(frame.errorCode), error };
        pending.push(errorEvent(error));
      } else if (frame.kind === FrameKind.END) decoder.end();
    };
    if (opened.first !== undefined) consume(opened.first);
    for (;;) {
      if (pending.length > 0) {
        for (const event of pending) yield event;
        pending.length = 0;
      }
      if (signal.aborted) return;
      const next = await opened.run.frames.next();
      if (next.done === true) return;
      consume(next.value);
    }
  }

  private async *attemptEvents(
    attempt: AttemptRequest,
    signal: AbortSignal,
    state: { provider?: string; refused?: boolean },
  ): AsyncGenerator<StreamEvent> {
    const { edge, requestId, log } = this.options;
    const { pool } = edge;
    this.group ??= pool.resolve(attempt.request.model);
    const avoid = new Set([...attempt.avoidProviders, ...(this.options.withoutApi ?? [])]);
    const refused = await this.retryGate(signal, avoid);
    if (refused !== undefined) {
      state.refused = true;
      yield errorEvent(refused);
      return;
    }
    if (signal.aborted) return;
    const attempts = (this.attempts ??= pool.begin());
    let toolIds: ToolIds | undefined;
    const bodyFor = this.backendBody(attempt, (ids) => (toolIds = ids));
    let run: RunStream | undefined;
    let attemptUsage: AttemptUsage | undefined;
    const unwatch = this.runs.cancelOnAbort(signal, () => run, 'attempt abandoned');
    try {
      let opened;
      try {
        opened = await openRun(
          pool,
          {
            requestId,
            model: attempt.request.model,
            method: 'POST',
            path: '/v1/chat/completions',
            bodyFor,
            idempotencyKey: attempt.idempotencyKey,
            acceptedTimeoutMs: edge.config.runAcceptedTimeoutMs,
            firstByteTimeoutMs: edge.config.firstByteTimeoutMs,
            idleTimeoutMs: edge.config.idleTimeoutMs,
            deadline: this.options.deadline,
            affinityKey: attempt.attempt === 1 ? this.options.affinityKey : undefined,
            prefixKeys: this.options.prefixKeys,
            attempts,
            onlyFallback: true,
            avoid,
            signal,
            runs: this.runs,
            onFailure: (failure, error) => (this.lastFailure = { failure, error }),
          },
          log,
          (started, pick) => {
            run = started;
            attemptUsage = this.options.onAttempt?.();
            state.provider = pick.provider.id;
            this.options.onRun?.(started, pick);
          },
        );
      } catch (error) {
        if (error instanceof IopError) {
          // The pool refused it (queue full or timed out; `no_capacity` before any provider started a
          // run of this attempt: none taking requests now): a gate retry would get the same answer
          // at once, so later attempts are refused, not counted. A provider's own 503 is also
          // `no_capacity`, but a run was started for it, and it is retried.
          if (error.code === 'overloaded' || (error.code === 'no_capacity' && run === undefined)) this.refusal = error;
          yield errorEvent(error);
          return;
        }
        throw error;
      }
      // A failure that a fallback inside `openRun` recovered from is not a reason to refuse a later retry.
      this.lastFailure = undefined;
      if (signal.aborted) return;
      yield* this.decodedEvents(opened, toolIds!, attemptUsage, signal);
    } finally {
      unwatch();
      this.runs.cancel(run, 'attempt ended');
    }
  }
}
