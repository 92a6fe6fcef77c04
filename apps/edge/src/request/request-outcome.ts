/**
 * The one owner of a client request's outcome. Created as the inference pipeline takes the request
 * (request/inference.ts), it gathers the facts as the request runs — the model, the path taken
 * (relayed or through the gate, and its policy), each run started and the provider that served it,
 * the first byte's time, the usage per attempt (`usage`, attempt/usage-recorder.ts), the finish
 * reasons, an in-band error that ended a stream — and `settle` turns them into the request's
 * status and records it, once, whatever the exit: the usage billed (an estimate when the backend
 * did work and sent none), its cost at the price table (ledger/pricing.ts) counted against the
 * key's limits and budget (`Admission.finish`), the usage-ledger row, the Prometheus series
 * (`EdgeMetrics.recordRequest`, the answer's tokens), the completion log line. The request span
 * (telemetry/request-tracing.ts) ends with the same facts when the response closes.
 *
 * The status: 499 when the client left before the end (nginx's convention), else the in-band
 * error's status for a stream that ended with one (its HTTP status was 200), else the HTTP status;
 * for a request that failed before an answer, the error's status in the client's dialect
 * (Anthropic renders `overloaded` and `no_capacity` as 529), 500 for anything not an `IopError`.
 * A ledger row is written for every request that reached admission (refused ones included).
 */
import type { Request, Response } from 'express';
import type { Span } from '@opentelemetry/api';
import { IopError, type Dialect } from '@iop/core';
import type { EdgeContext } from '../edge-context.js';
import { policyLabel } from '../gate/gate-registry.js';
import { costOf, priceOf } from '../ledger/pricing.js';
import type { LedgerRow } from '../ledger/usage-ledger.js';
import type { Admission } from '../limits/key-limiter.js';
import { NO_RESPONSE_MODE, PASSTHROUGH_LABELS, type ResponseLabels } from '../metrics.js';
import type { PoolPick } from '../pool/provider-pool.js';
import type { RunStream } from '../pool/run-stream.js';
import { headerValue } from '../http/header-value.js';
import { OPEN_IDENTITY } from '../http/key-check.js';
import { locals, type RequestLocals } from '../http/request-context.js';
import { endRequestSpan, type RequestOutcome as SpanOutcome } from '../telemetry/request-tracing.js';
import type { InFlightRequest } from '../telemetry/in-flight-requests.js';
import { ClientGone, RequestDeadline } from '../attempt/request-deadline.js';
import { RequestRuns } from '../attempt/request-runs.js';
import { UsageRecorder } from '../attempt/usage-recorder.js';
import { admitRequest } from './admission.js';

/** How the answer is produced: bytes relayed, or normalized through the gate with the model's policy. */
export type ResponseMode =
  { mode: 'passthrough' } | { mode: 'normalized'; policy: ReturnType<EdgeContext['gates']['policyOf']> };

export class RequestOutcome {
  /** The request's one stop signal (client gone, deadline, write stall). */
  readonly deadline: RequestDeadline;
  /** The request's backend runs, cancelled through it. */
  readonly runs: RequestRuns;
  /** The usage of each attempt. */
  readonly usage: UsageRecorder;
  /** The answer's finish reasons (the request span's `gen_ai.response.finish_reasons`). */
  readonly finishReasons: string[] = [];
  private readonly context: RequestLocals;
  private readonly tracked: InFlightRequest;
  private readonly span: SpanOutcome = {};
  /** The model the request is counted under (the client's name; `unknown` until the body is read). */
  private model = 'unknown';
  private servedModel: string | undefined;
  private attempts = 0;
  private mode: ResponseMode | undefined;
  private ttftSeconds: number | undefined;
  private inFlight: { inc(): void; dec(): void } | undefined;
  /** A stream that ended with an in-band error after its first byte: the status and error it is counted with. */
  private inBand: { status: number; error: string } | undefined;
  /** The model admission was asked for: set when the request reached admission (it then gets a ledger row). */
  private admittedModel: string | undefined;
  private admission: Admission | undefined;
  /** The prompt's token estimate, for usage billed without the backend's (set with the path). */
  private promptTokens: () => number;
  private settled = false;

  constructor(
    private readonly edge: EdgeContext,
    private readonly dialect: Dialect,
    req: Request,
    private readonly res: Response,
    span: Span,
  ) {
    this.context = locals(res);
    this.deadline = new RequestDeadline(edge.config.requestDeadlineMs);
    this.runs = new RequestRuns(this.deadline.signal);
    this.usage = new UsageRecorder(edge.metrics);
    this.span.finishReasons = this.finishReasons;
    this.promptTokens = () => bodyTokenEstimate(req.body);
    this.tracked = edge.requests.open(this.context.requestId, dialect.name, this.context.identity?.keyId);
    res.once('close', () => this.closed(span));
  }

  /** The model the client named (`named`: in the body or the path): the in-flight entry and gauge. */
  asked(model: string, named: boolean): void {
    this.tracked.model = named ? model : null;
    this.inFlight = this.edge.metrics.inFlight.labels(this.labels(model));
    this.inFlight.inc();
  }

  /** The path the answer takes. */
  answeredBy(mode: ResponseMode): void {
    this.mode = mode;
  }

  /** The model the request is counted under (unchanged when undefined), and its prompt's token estimate. */
  counted(model: string | undefined, promptTokens: () => number): void {
    if (model !== undefined) this.model = model;
    this.promptTokens = promptTokens;
  }

  /**
   * Admission for `model` (request/admission.ts); the request then gets a ledger row, refused or not.
   * @throws what `admitRequest` throws (403, 429, 503).
   */
  async admit(model: string): Promise<void> {
    this.admittedModel = model;
    this.admission = await admitRequest(
      this.edge,
      this.res,
      this.dialect,
      this.context.identity ?? OPEN_IDENTITY,
      model,
    );
  }

  /** A run of an attempt started on `pick`'s provider (`openRun`'s `onRun`): the serving provider's headers. */
  readonly onRun = (run: RunStream, pick: PoolPick): void => {
    this.attempts++;
    this.servedModel = pick.model;
    Object.assign(this.tracked, { attempts: this.attempts, servedModel: pick.model, agent: run.providerId });
    this.span.providerName = pick.provider.providerName;
    if (!this.res.headersSent) {
      this.res.setHeader('x-iop-agent-id', headerValue(run.providerId));
      this.res.setHeader('x-iop-model', headerValue(pick.model));
    }
  };

  /** The first byte went to the client (TTFT). */
  readonly onFirstByte = (): void => {
    this.ttftSeconds = (performance.now() - this.context.startedAt) / 1000;
    this.edge.metrics.ttft.observe(this.labels(this.model), this.ttftSeconds);
  };

  /**
   * The answer ended: `failure` is what ended a stream after its first byte (undefined for a
   * complete answer). Its tokens count as a failed attempt's; a client that left mid-stream
   * stopped it (499 `client_gone`, not the upstream error).
   */
  ended(failure: IopError | undefined, runId: string | undefined): void {
    if (failure === undefined) return;
    this.settleUsage();
    this.usage.flush(this.labels(this.model).model, this.responseLabels(), 'failed');
    const gone = this.deadline.clientGone;
    this.inBand = gone
      ? { status: 499, error: 'client_gone' }
      : { status: this.statusOf(failure), error: failure.code };
    if (!gone)
      this.context.log.warn(
        { runId, code: failure.code, error: failure.message },
        'stream ended with an in-band error',
      );
  }

  /** Whether the request ended because its client left (nothing to send). */
  clientLeft(error: unknown): boolean {
    return error instanceof ClientGone || this.deadline.clientGone;
  }

  /**
   * Settles the request, once (later calls do nothing): `error` is what ended it before an answer, undefined when it
   * was answered (completely, or a stream ended in band). Records its bill, ledger row, metrics and log line.
   */
  settle(error?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.deadline.clear();
    this.settleUsage();
    this.span.usage = this.usage.value;
    const gone = this.clientLeft(error);
    const status =
      error === undefined ? this.answeredStatus() : gone ? 499 : error instanceof IopError ? this.statusOf(error) : 500;
    this.bill(status);
    if (error === undefined) this.recordAnswer(status);
    else if (gone) this.recordGone();
    else if (error instanceof IopError) this.record(status, undefined, error.code);
  }

  private labels(model: string): { dialect: string; model: string } {
    return { dialect: this.dialect.name, model: this.edge.knownModel(model) };
  }

  private responseLabels(): ResponseLabels {
    if (this.mode === undefined) return NO_RESPONSE_MODE;
    return this.mode.mode === 'passthrough'
      ? PASSTHROUGH_LABELS
      : { mode: 'normalized', policy: policyLabel(this.mode.policy) };
  }

  /** The status the client gets for an error, in its dialect. */
  private statusOf(error: IopError): number {
    return this.dialect.errorResponse(error, '').status;
  }

  /** The status of a request that got an answer (see the module docstring). */
  private answeredStatus(): number {
    return this.deadline.clientGone ? 499 : (this.inBand?.status ?? this.res.statusCode);
  }

  /** Bills an estimate when the backend did work but sent no usage (usage-recorder.ts). */
  private settleUsage(): void {
    this.usage.settle(this.runs.stoppedMidRun, this.promptTokens);
  }

  private durationMs(): number {
    return performance.now() - this.context.startedAt;
  }

  /** The request's cost counted against the key's limits and budget, and its ledger row (once admission was asked). */
  private bill(status: number): void {
    const model = this.admittedModel;
    if (model === undefined || this.edge.state === undefined) return;
    const usage = this.usage.value;
    const tokens = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
    // Read per request: a reload may change the price table.
    const price = priceOf(this.edge.config.pricing, [model, this.edge.knownModel(model), this.servedModel]);
    const costUsd = costOf(price, usage);
    if (this.admission !== undefined) void this.admission.finish(tokens, costUsd);
    this.edge.state.ledger.record(this.ledgerRow(model, status, costUsd));
  }

  private ledgerRow(model: string, status: number, costUsd: number): LedgerRow {
    const usage = this.usage.value;
    const agentId = this.runs.current?.providerId;
    return {
      tsMs: Date.now(),
      requestId: this.context.requestId,
      keyId: (this.context.identity ?? OPEN_IDENTITY).keyId,
      requestedModel: model,
      ...(this.servedModel === undefined ? {} : { servedModel: this.servedModel }),
      ...(agentId === undefined ? {} : { agentId }),
      dialect: this.dialect.name,
      inputTokens: usage?.inputTokens ?? 0,
      outputTokens: usage?.outputTokens ?? 0,
      cachedTokens: usage?.cachedInputTokens ?? 0,
      reasoningTokens: usage?.reasoningTokens ?? 0,
      attempts: this.attempts,
      ...(this.usage.estimated ? { tokensEstimated: true } : {}),
      ...(this.ttftSeconds === undefined ? {} : { ttftMs: Math.round(this.ttftSeconds * 10_000) / 10 }),
      durationMs: Math.round(this.durationMs() * 10) / 10,
      status,
      costUsd,
    };
  }

  /** The metrics and log line of an answered request. */
  private recordAnswer(status: number): void {
    const tokens = this.usage.flush(this.labels(this.model).model, this.responseLabels());
    const failed =
      this.res.statusCode >= 400
        ? String(this.res.statusCode)
        : (this.inBand?.error ?? (status === 499 ? 'client_gone' : undefined));
    const durationMs = this.durationMs();
    this.record(status, tokens, failed, this.ttftSeconds);
    this.context.log.info(
      {
        model: this.model,
        servedModel: this.servedModel,
        agentId: this.runs.current?.providerId,
        status,
        durationMs: Math.round(durationMs * 10) / 10,
        usage: tokens,
        usageEstimated: this.usage.estimated || undefined,
        ...this.mode,
        aborted: this.deadline.signal.aborted || undefined,
      },
      'request completed',
    );
  }

  /** The client left before an answer (queued, or its run assigned: whatever failed after that follows from it). */
  private recordGone(): void {
    this.record(499, undefined, 'client_gone');
    const tokens = this.usage.flush(this.labels(this.model).model, this.responseLabels(), 'failed');
    this.context.log.info(
      {
        model: this.model,
        durationMs: Math.round(this.durationMs() * 10) / 10,
        usage: tokens,
        usageEstimated: this.usage.estimated || undefined,
      },
      'client disconnected before the answer',
    );
  }

  private record(
    status: number,
    usage: ReturnType<UsageRecorder['flush']>,
    errorType: string | undefined,
    ttftSeconds?: number,
  ): void {
    this.edge.metrics.recordRequest({
      ...this.labels(this.model),
      servedModel: this.servedModel,
      agent: this.runs.current?.providerId,
      providerName: this.span.providerName,
      keyId: this.context.identity?.keyId,
      status,
      durationSeconds: this.durationMs() / 1000,
      ttftSeconds,
      usage,
      errorType,
      response: this.responseLabels(),
    });
  }

  /** The response closed: the request span ends, the request leaves the in-flight list, a client gone stops it. */
  private closed(span: Span): void {
    const res = this.res;
    endRequestSpan(
      span,
      res.statusCode,
      res.getHeader('x-iop-model') as string | undefined,
      res.getHeader('x-iop-agent-id') as string | undefined,
      this.span,
    );
    this.edge.requests.close(this.tracked);
    this.inFlight?.dec();
    this.deadline.clear();
    if (res.writableFinished) return;
    const running = this.runs.running();
    this.deadline.stop(new ClientGone());
    if (running) this.context.log.info({ runId: this.runs.current?.runId }, 'client disconnected; run cancelled');
  }
}

/** A prompt estimate from the body's size alone (~4 bytes of JSON per token), for a body that did not decode. */
function bodyTokenEstimate(raw: unknown): number {
  return Math.ceil((Buffer.isBuffer(raw) ? raw.length : 0) / 4);
}
