/**
 * The edge's spans (OpenTelemetry; no-ops while tracing is off, see @iop/core tracing.ts):
 *
 * ```
 * chat {model}                 SERVER  one per client request (request/inference.ts); parent: the client's traceparent
 * └─ iop.attempt               INTERNAL one per pool acquisition (iop.attempt = 1, 2, …)
 *    ├─ iop.queue              INTERNAL the wait in the group's admission queue
 *    ├─ iop.pool.pick          INTERNAL the provider chosen (iop.provider.id, gen_ai.response.model)
 *    └─ iop.tunnel.run         CLIENT  the run on an agent, RunAssignment to its END/ERROR; its
 *       │                               traceparent travels in the RunAssignment headers
 *       └─ iop.agent.run       (agent) └─ iop.backend.request (agent) → the backend
 * ```
 *
 * An attempt on a tunnelled agent ends with its run (`endRunSpans`, called when the run registry
 * reports the run finished); on a direct provider it ends once the provider is picked.
 * Attributes follow the OpenTelemetry GenAI and HTTP conventions where they apply
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/): `gen_ai.operation.name`,
 * `gen_ai.request.model`, `gen_ai.response.model`, `http.response.status_code`, `error.type`
 * (errors only), and at the request span's end (`RequestOutcome`) `gen_ai.provider.name` (the
 * provider that answered, `providerNameOf` in pool/provider.ts; absent when none was picked),
 * `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`
 * (when non-zero) — the usage the request is billed, as in the ledger — and
 * `gen_ai.response.finish_reasons` (one per choice, in OpenAI's terms: `stop`, `length`,
 * `tool_calls`, `content_filter`, or the backend's own value).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { SpanKind, SpanStatusCode, createContextKey, type Context, type Span } from '@opentelemetry/api';
import { extractContext, injectHeaders, otelContext, otelTrace, tracer, type Usage } from '@iop/core';

const ATTEMPTS = createContextKey('iop.attempts');
const ATTEMPT_SPAN = createContextKey('iop.attempt-span');

/** Per request: attempts begun so far. */
interface AttemptCount {
  count: number;
}

/** Starts the request span (parent: the client's `traceparent`); returns it and the context to run the request in. */
export function startRequestSpan(
  headers: IncomingHttpHeaders,
  path: string,
  requestId: string,
): { span: Span; context: Context } {
  const parent = extractContext(headers);
  const span = tracer().startSpan(
    'chat',
    {
      kind: SpanKind.SERVER,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'http.request.method': 'POST',
        'url.path': path,
        'iop.request_id': requestId,
      },
    },
    parent,
  );
  const counter: AttemptCount = { count: 0 };
  return { span, context: otelTrace.setSpan(parent, span).setValue(ATTEMPTS, counter) };
}

/** Names the active request span after its model (`chat {model}`, GenAI convention). */
export function nameRequestSpan(model: string): void {
  const span = otelTrace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return;
  span.updateName(`chat ${model}`);
  span.setAttribute('gen_ai.request.model', model);
}

/** What the request span reports at its end, filled in while the request runs (request/inference.ts). */
export interface RequestOutcome {
  /** `gen_ai.provider.name` of the provider that answered. */
  providerName?: string | undefined;
  /** The usage the request is billed. */
  usage?: Usage | undefined;
  /** The answer's finish reasons, one per choice. */
  finishReasons?: string[] | undefined;
}

/** Ends the request span with the response's status, served model, provider, usage and finish reasons. */
export function endRequestSpan(
  span: Span,
  status: number,
  servedModel: string | undefined,
  agent: string | undefined,
  outcome?: RequestOutcome,
): void {
  if (!span.isRecording()) return;
  span.setAttribute('http.response.status_code', status);
  if (servedModel !== undefined) span.setAttribute('gen_ai.response.model', servedModel);
  if (agent !== undefined) span.setAttribute('iop.provider.id', agent);
  if (outcome?.providerName !== undefined) span.setAttribute('gen_ai.provider.name', outcome.providerName);
  const usage = outcome?.usage;
  if (usage?.inputTokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
  if (usage?.outputTokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
  if (usage?.cachedInputTokens !== undefined && usage.cachedInputTokens > 0)
    span.setAttribute('gen_ai.usage.cache_read.input_tokens', usage.cachedInputTokens);
  if (outcome?.finishReasons !== undefined && outcome.finishReasons.length > 0)
    span.setAttribute('gen_ai.response.finish_reasons', outcome.finishReasons);
  if (status >= 500) span.setAttributes({ 'error.type': String(status) }).setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** One pool acquisition's spans (see the module comment). */
export class AttemptTrace {
  private readonly span: Span;
  private readonly context: Context;
  private readonly queuedAt = Date.now();
  private ended = false;

  constructor(group: string) {
    const parent = otelContext.active();
    const counter = parent.getValue(ATTEMPTS) as AttemptCount | undefined;
    const number = counter === undefined ? 1 : ++counter.count;
    this.span = tracer().startSpan(
      'iop.attempt',
      { attributes: { 'iop.attempt': number, 'iop.group': group } },
      parent,
    );
    this.context = otelTrace.setSpan(parent, this.span).setValue(ATTEMPT_SPAN, this.span);
  }

  /**
   * Records the queue wait and the pick, then calls `start` (which sends the run) inside the
   * attempt's context, so the tunnel span is its child even when a queue notification runs it.
   */
  started<T>(
    provider: { id: string; kind: 'agent' | 'direct'; providerName: string },
    model: string,
    start: () => T,
  ): T {
    if (!this.span.isRecording()) return start();
    const now = Date.now();
    tracer().startSpan('iop.queue', { startTime: this.queuedAt }, this.context).end(now);
    tracer()
      .startSpan(
        'iop.pool.pick',
        {
          startTime: now,
          attributes: {
            'iop.provider.id': provider.id,
            'iop.provider.kind': provider.kind,
            'gen_ai.provider.name': provider.providerName,
            'gen_ai.response.model': model,
          },
        },
        this.context,
      )
      .end();
    this.span.setAttributes({
      'iop.provider.id': provider.id,
      'gen_ai.provider.name': provider.providerName,
      'gen_ai.response.model': model,
    });
    const result = otelContext.with(this.context, start);
    if (provider.kind === 'direct') this.end();
    return result;
  }

  /** Ends the attempt with the error that stopped it before a run started (queue full, no provider, abort). */
  failed(error: unknown): void {
    if (this.ended) return;
    if (this.span.isRecording()) {
      const code = (error as { code?: unknown }).code;
      this.span.setAttribute(
        'error.type',
        typeof code === 'string' ? code : error instanceof Error ? error.name : 'error',
      );
      this.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end();
  }
}

/** Spans to end when a tunnelled run finishes, by run id. */
const runSpans = new Map<string, Span[]>();

/**
 * Starts the tunnel span of a run about to be assigned (inside the attempt's context) and returns
 * the headers for its RunAssignment with the span's `traceparent`; `bind` ties it (and its
 * attempt) to the run id so `endRunSpans` ends them. Unchanged headers while tracing is off.
 */
export function traceTunnelRun(
  headers: Record<string, string> | undefined,
  agentId: string,
): { headers: Record<string, string> | undefined; bind(runId: string, finished: boolean): void } {
  const active = otelContext.active();
  const attempt = active.getValue(ATTEMPT_SPAN) as Span | undefined;
  if (attempt === undefined || !attempt.isRecording()) return { headers, bind: () => undefined };
  const span = tracer().startSpan(
    'iop.tunnel.run',
    { kind: SpanKind.CLIENT, attributes: { 'iop.provider.id': agentId } },
    active,
  );
  return {
    headers: injectHeaders(headers ?? {}, span),
    bind: (runId, finished) => {
      span.setAttribute('iop.run_id', runId);
      runSpans.set(runId, [span, attempt]);
      if (finished) endRunSpans(runId, true); // ended before it was handed back (its agent went away)
    },
  };
}

/** Ends the tunnel and attempt spans of a finished run (no-op when it had none). */
export function endRunSpans(runId: string, failed: boolean): void {
  const spans = runSpans.get(runId);
  if (spans === undefined) return;
  runSpans.delete(runId);
  for (const span of spans) {
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}
