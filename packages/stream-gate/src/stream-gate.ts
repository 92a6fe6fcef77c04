/**
 * The stream gate: runs a request through the dispatcher attempt by attempt, releases only what
 * its filters and policy allow, and recovers from failures without ever releasing an event twice
 * (packages/stream-gate/README.md).
 *
 * The released stream keeps the core order guarantees (`events.ts`): at most one
 * `response-start`, content, one terminal event, then at most one `usage` (the answer's usage:
 * the sum over the attempts whose output was released). If the first released event is an
 * `error`, nothing was committed: the edge may render it as an HTTP error (the status of its code).
 * When the client's signal aborts, the stream just ends (no terminal event).
 */
import { deliveredFinishReason } from '@iop/core';
import type { InferenceRequest, StreamEvent, Usage } from '@iop/core';
import type { DispatchedAttempt, Dispatcher, RequestPatch } from './attempt-request.js';
import { buildAttemptRequest, correctivePatch, idempotencyKey } from './attempt-request.js';
import { AttemptRecord, runAttempt } from './attempt-runner.js';
import type { AttemptEnd, NamedTransformer, NamedValidator } from './attempt-runner.js';
import type { Clock, GateBudgets, ReleasePolicy } from './config.js';
import { DEFAULT_BUDGETS, systemClock, validateBudgets } from './config.js';
import type { AttemptContext, GateFilter } from './filter.js';
import type { GateOverrides } from './gate-header.js';
import { applyGateOverrides } from './gate-header.js';
import { decideRecovery } from './recovery.js';
import type { GateFailure } from './recovery.js';
import type { AttemptOutcomeKind, GateSink } from './sink.js';
import { noopSink } from './sink.js';
import { addUsage } from './usage.js';
import { TOOL_CHOICE_FILTER_NAME, forcesToolCall, toolChoiceValidator } from './filters/tool-choice.js';

export interface StreamGateOptions {
  /** Filters for the model group; transformers run in this order, validators after them. */
  filters: readonly GateFilter[];
  /** Default `evidence-tail`. */
  policy?: ReleasePolicy;
  /** Defaults: `DEFAULT_BUDGETS`. */
  budgets?: Partial<GateBudgets>;
  sink?: GateSink;
  clock?: Clock;
}

export interface RunOptions {
  /** iop's request id; idempotency keys are `<requestId>:<attempt>`. */
  requestId: string;
  /** The client's lifetime: aborting it ends the run and the current attempt. */
  signal?: AbortSignal;
  /** Whether the backend accepts an assistant prefill (continuation after commit). Default false. */
  canContinue?: boolean;
  /** Per-request overrides (`parseGateHeader`); may only tighten budgets. */
  overrides?: GateOverrides;
}

/** The released stream of one request, with its commit state. */
export interface GateRun extends AsyncIterable<StreamEvent> {
  /** Whether any event has been released to the client. */
  readonly committed: boolean;
  /** Attempts started so far. */
  readonly attempts: number;
}

export interface StreamGate {
  /**
   * Starts a request. The request is kept as is (never mutated) and rebuilt per attempt.
   * @throws IopError `invalid_request` (400) when `options.overrides` exceed the configured budgets.
   */
  run(request: InferenceRequest, dispatcher: Dispatcher, options: RunOptions): GateRun;
}

/**
 * Creates a gate for one model group.
 * @throws IopError `invalid_request` (400) when a budget is out of range (`BUDGET_LIMITS`).
 */
export function createStreamGate(options: StreamGateOptions): StreamGate {
  const budgets = validateBudgets({ ...DEFAULT_BUDGETS, ...options.budgets });
  const policy = options.policy ?? 'evidence-tail';
  // `tool_choice` is enforced whatever the model's filters (filters/tool-choice.ts).
  const enforcesChoice = options.filters.some((filter) => filter.name === TOOL_CHOICE_FILTER_NAME);
  const settings: GateSettings = {
    filters: enforcesChoice ? options.filters : [...options.filters, toolChoiceValidator()],
    sink: options.sink ?? noopSink,
    clock: options.clock ?? systemClock,
  };
  return {
    run(request, dispatcher, runOptions) {
      const applied = applyGateOverrides(policy, budgets, runOptions.overrides);
      // A non-stream client sees nothing before the whole answer, so the answer is released only
      // whole (`buffered`): a failure before `finish` is then before commit and retried, never
      // turned into an error for output the client has not seen.
      // A forced tool call is held until it shows, even under `passthrough`: text released first
      // could no longer be retried when no call follows.
      const streamPolicy =
        applied.policy === 'passthrough' && forcesToolCall(request.toolChoice) ? 'evidence-tail' : applied.policy;
      return new GateRunImpl(
        settings,
        request.stream ? streamPolicy : 'buffered',
        applied.budgets,
        request,
        dispatcher,
        runOptions,
      );
    },
  };
}

interface GateSettings {
  filters: readonly GateFilter[];
  sink: GateSink;
  clock: Clock;
}

class GateRunImpl implements GateRun {
  committed = false;
  attempts = 0;
  private readonly releasedText: string[] = [];
  private releasedToolCall = false;
  private answerUsage: Usage | undefined;
  private readonly patches: RequestPatch[] = [];
  private readonly avoidProviders: string[] = [];
  private started = false;

  constructor(
    private readonly settings: GateSettings,
    private readonly policy: ReleasePolicy,
    private readonly budgets: GateBudgets,
    private readonly request: InferenceRequest,
    private readonly dispatcher: Dispatcher,
    private readonly options: RunOptions,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    if (this.started) throw new Error('a GateRun can be iterated once');
    this.started = true;
    return this.events();
  }

  private async *events(): AsyncGenerator<StreamEvent> {
    const { clock } = this.settings;
    const clientSignal = this.options.signal;
    const startedAt = clock.now();
    const deadline = new AbortController();
    const cancelTimer = clock.setTimer(() => deadline.abort(), this.budgets.maxTotalMs);
    let continuation: string | undefined;
    try {
      for (;;) {
        if (clientSignal?.aborted) return;
        this.attempts++;
        const attempt = this.attempts;
        const controller = new AbortController();
        const stop = (): void => controller.abort();
        clientSignal?.addEventListener('abort', stop, { once: true });
        deadline.signal.addEventListener('abort', stop, { once: true });
        const attemptStartedAt = clock.now();
        const context = this.context(attempt, continuation);
        const transformers: NamedTransformer[] = [];
        const validators: NamedValidator[] = [];
        for (const filter of this.settings.filters) {
          if (filter.kind === 'transformer') transformers.push({ name: filter.name, instance: filter.create(context) });
          else validators.push({ name: filter.name, instance: filter.create(context) });
        }
        const record = new AttemptRecord(validators.length);
        let end: AttemptEnd | undefined;
        let dispatched: DispatchedAttempt | undefined;
        let run: AsyncGenerator<StreamEvent, AttemptEnd> | undefined;
        try {
          try {
            dispatched = this.dispatcher.dispatch(
              {
                request: buildAttemptRequest(this.request, this.patches, continuation),
                attempt,
                idempotencyKey: idempotencyKey(this.options.requestId, attempt),
                avoidProviders: this.avoidProviders.slice(),
                ...(continuation === undefined ? {} : { prefill: continuation }),
              },
              controller.signal,
            );
          } catch (error) {
            end = {
              kind: 'cut',
              message: `dispatch failed: ${error instanceof Error ? error.message : String(error)}`,
            };
          }
          if (dispatched !== undefined) {
            run = runAttempt(
              {
                events: dispatched.events,
                transformers,
                validators,
                policy: this.policy,
                maxHeldBytes: this.budgets.maxHeldBytes,
                continuation: continuation !== undefined,
                signal: controller.signal,
              },
              record,
            );
            for (;;) {
              const step = await run.next();
              if (step.done) {
                end = step.value;
                break;
              }
              yield this.deliver(step.value);
            }
          }
        } finally {
          controller.abort();
          if (end === undefined) void run?.return({ kind: 'aborted' }); // the consumer stopped: close the upstream iterator too
          clientSignal?.removeEventListener('abort', stop);
          deadline.signal.removeEventListener('abort', stop);
        }
        if (end === undefined) throw new Error('unreachable: attempt ended without an outcome');
        const provider = dispatched?.provider;

        const durationMs = clock.now() - attemptStartedAt;
        this.reportVerdicts(attempt, end, transformers, validators, record);
        if (record.releasedAny) this.answerUsage = addUsage(this.answerUsage, record.usage);
        const report = (outcome: AttemptOutcomeKind, reason?: string, filter?: string): void =>
          this.settings.sink.attempt({
            requestId: this.options.requestId,
            model: this.request.model,
            attempt,
            idempotencyKey: idempotencyKey(this.options.requestId, attempt),
            provider,
            outcome,
            ...(reason === undefined ? {} : { reason }),
            ...(filter === undefined ? {} : { filter }),
            durationMs,
            committed: this.committed,
            usage: record.usage,
            wasted: !record.releasedAny,
            peakHeldBytes: record.peakHeldBytes,
          });

        if (end.kind === 'finished') {
          report('answered');
          if (this.answerUsage !== undefined) yield { type: 'usage', usage: this.answerUsage };
          return;
        }
        if (end.kind === 'aborted' && !deadline.signal.aborted) {
          report('aborted', 'client aborted');
          return;
        }
        const failure: GateFailure =
          end.kind === 'aborted' || clock.now() - startedAt >= this.budgets.maxTotalMs
            ? { kind: 'timeout', maxTotalMs: this.budgets.maxTotalMs }
            : end;
        // A refused dispatch reached no provider: it ends the request and is not counted.
        const refused = dispatched?.refused === true;
        const step = decideRecovery(failure, {
          committed: this.committed,
          continuable: this.options.canContinue === true && !this.releasedToolCall && this.releasedText.length > 0,
          attemptsLeft: !refused && attempt < this.budgets.maxAttempts,
          attempts: refused ? attempt - 1 : attempt,
        });
        const reason = failureReason(failure);
        const filter = failure.kind === 'rejected' ? failure.filter : undefined;
        if (step.kind === 'fail') {
          report('failed', reason, filter);
          this.committed = true;
          yield step.error;
          if (this.answerUsage !== undefined) yield { type: 'usage', usage: this.answerUsage };
          return;
        }
        if (step.patch !== undefined && step.patch !== '') this.patches.push(correctivePatch(step.patch));
        if (step.kind === 'retry') {
          if (step.avoidProvider && provider !== undefined && !this.avoidProviders.includes(provider)) {
            this.avoidProviders.push(provider);
          }
          report('retried', reason, filter);
        } else {
          continuation = this.releasedText.join('');
          report('continued', reason, filter);
        }
      }
    } finally {
      cancelTimer();
    }
  }

  private context(attempt: number, continuation: string | undefined): AttemptContext {
    const { sink } = this.settings;
    const { requestId } = this.options;
    const model = this.request.model;
    return {
      request: this.request,
      attempt,
      continuation: continuation === undefined ? undefined : { text: continuation },
      warn(message) {
        sink.warning({ requestId, model, attempt, message });
      },
    };
  }

  /** Records a released event; a finish gets the reason of what was delivered (`deliveredFinishReason`). */
  private deliver(event: StreamEvent): StreamEvent {
    this.committed = true;
    if (event.type === 'text-delta') this.releasedText.push(event.text);
    else if (event.type === 'tool-call-delta') this.releasedToolCall = true;
    else if (event.type === 'finish') {
      const reason = deliveredFinishReason(event.reason, this.releasedToolCall);
      if (reason !== event.reason) return { ...event, reason };
    }
    return event;
  }

  private reportVerdicts(
    attempt: number,
    end: AttemptEnd,
    transformers: readonly NamedTransformer[],
    validators: readonly NamedValidator[],
    record: AttemptRecord,
  ): void {
    const { sink } = this.settings;
    const base = { requestId: this.options.requestId, model: this.request.model, attempt };
    for (const transformer of transformers) {
      if (end.kind === 'rejected' && end.filter === transformer.name) {
        sink.verdict({ ...base, filter: transformer.name, verdict: 'reject', reason: end.rejection.reason });
      } else sink.verdict({ ...base, filter: transformer.name, verdict: 'pass' });
    }
    validators.forEach((validator, index) => {
      const verdict = record.verdicts[index] ?? 'hold';
      if (verdict === 'reject' && end.kind === 'rejected') {
        sink.verdict({ ...base, filter: validator.name, verdict, reason: end.rejection.reason });
      } else sink.verdict({ ...base, filter: validator.name, verdict });
    });
  }
}

function failureReason(failure: GateFailure): string {
  switch (failure.kind) {
    case 'rejected':
      return failure.rejection.reason;
    case 'upstream-error':
      return `${failure.error.code}: ${failure.error.message}`;
    case 'cut':
      return failure.message;
    case 'over-budget':
      return `held ${failure.heldBytes} bytes`;
    case 'timeout':
      return `time budget ${failure.maxTotalMs} ms exceeded`;
  }
}
