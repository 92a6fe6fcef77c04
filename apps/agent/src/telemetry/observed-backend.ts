/**
 * A Backend decorator that measures and traces every backend call without touching the run
 * lifecycle: metrics (agent-metrics.ts) and, when tracing is on, two spans — `iop.agent.run`, a
 * child of the edge's tunnel span (its W3C `traceparent` arrives in the RunAssignment headers),
 * and inside it `iop.backend.request`, whose own `traceparent` replaces the edge's on the call to
 * the backend (vLLM and other OpenTelemetry-aware servers continue the trace).
 *
 * Both end when the body ends, breaks off or is abandoned (the relay stops reading on cancel).
 */
import { Readable, finished } from 'node:stream';
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { extractContext, failSpan, injectHeaders, tracer } from '@iop/core';
import type { Backend, BackendMetrics, BackendRequest, BackendResponse } from '../backends/backend.js';
import type { AgentMetrics } from './agent-metrics.js';

/** The served model named in a JSON request body (`"model":"…"`), bounded to the backend's models. */
function modelOf(body: Uint8Array, known: ReadonlySet<string>): string {
  if (known.size === 1) return known.values().next().value!;
  // Look only at the head of the body: the model field comes first in what the edge sends.
  const head = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, 512)).toString('utf8');
  const match = /"model"\s*:\s*"([^"]{1,256})"/.exec(head);
  return match !== null && known.has(match[1]!) ? match[1]! : 'other';
}

export class ObservedBackend implements Backend {
  private known: ReadonlySet<string> = new Set();
  /** The inner backend's load figures, when it has them. */
  readonly metrics?: () => Promise<BackendMetrics>;

  constructor(
    private readonly inner: Backend,
    private readonly observed: AgentMetrics,
  ) {
    if (inner.metrics !== undefined) this.metrics = () => inner.metrics!();
    if (inner.tokenizeChat !== undefined)
      this.tokenizeChat = (model, messages, options) => inner.tokenizeChat!(model, messages, options);
  }

  /** The inner backend's `/tokenize`, when it has one. */
  readonly tokenizeChat?: Backend['tokenizeChat'];

  get kind() {
    return this.inner.kind;
  }

  get capabilities() {
    return this.inner.capabilities;
  }

  async models() {
    const models = await this.inner.models();
    this.known = new Set(models.map((model) => model.id));
    return models;
  }

  async handle(request: BackendRequest): Promise<BackendResponse> {
    const model = modelOf(request.body, this.known);
    const startedAt = performance.now();
    const parent = extractContext(request.headers);
    const run = tracer().startSpan(
      'iop.agent.run',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'iop.request_id': request.requestId,
          'gen_ai.request.model': model,
          'http.request.method': request.method,
          'url.path': request.path,
        },
      },
      parent,
    );
    const call = tracer().startSpan(
      'iop.backend.request',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.path,
          'iop.backend.kind': this.inner.kind,
        },
      },
      trace.setSpan(parent, run),
    );
    const headers = injectHeaders(request.headers, call);
    let response: BackendResponse;
    try {
      response = await this.inner.handle(headers === request.headers ? request : { ...request, headers });
    } catch (error) {
      this.observed.backendRequests.inc({ model, status: 'error' });
      if (!request.signal.aborted) this.observed.backendErrors.inc({ model, kind: 'connect' });
      failSpan(call, error);
      failSpan(run, error);
      call.end();
      run.end();
      throw error;
    }
    this.observed.backendFirstByte.observe({ model }, (performance.now() - startedAt) / 1000);
    this.observed.backendRequests.inc({ model, status: String(response.status) });
    if (response.status >= 500) this.observed.backendErrors.inc({ model, kind: 'status_5xx' });
    else if (response.status >= 400) this.observed.backendErrors.inc({ model, kind: 'status_4xx' });
    call.setAttribute('http.response.status_code', response.status);
    if (response.status >= 500) call.setStatus({ code: SpanStatusCode.ERROR });
    return { ...response, body: this.observeBody(response.body, model, startedAt, call, run, request.signal) };
  }

  /**
   * The body, passed through as the same slices; ends the spans and observes the duration once
   * it ends, breaks or is abandoned. A Node `Readable` (undici's body) is returned as it is and
   * watched with `finished`: nothing runs per slice. Any other iterable is wrapped in a plain
   * iterator (one `then` per slice, not an async generator, which would queue every slice once
   * more).
   */
  private observeBody(
    body: AsyncIterable<Uint8Array>,
    model: string,
    startedAt: number,
    call: Span,
    run: Span,
    signal: AbortSignal,
  ): AsyncIterable<Uint8Array> {
    let done = false;
    const finish = (error?: unknown) => {
      if (done) return;
      done = true;
      this.observed.backendDuration.observe({ model }, (performance.now() - startedAt) / 1000);
      if (error !== undefined) {
        this.observed.backendErrors.inc({ model, kind: 'body' });
        failSpan(call, error);
      }
      call.end();
      run.end();
    };
    // A run cancelled (client gone, timeout, shutdown) aborts the body: not the backend's failure.
    const fail = (error: unknown) => {
      if (signal.aborted) {
        run.setAttribute('iop.run.cancelled', true);
        finish();
      } else finish(error);
    };
    if (body instanceof Readable) {
      finished(body, (error) => (error === undefined || error === null ? finish() : fail(error)));
      return body;
    }
    return {
      [Symbol.asyncIterator]: () => {
        const inner = body[Symbol.asyncIterator]();
        return {
          next: () =>
            inner.next().then(
              (result) => {
                if (result.done === true) finish();
                return result;
              },
              (error: unknown) => {
                fail(error);
                throw error;
              },
            ),
          return: (value?: unknown) => {
            finish();
            return inner.return?.(value) ?? Promise.resolve({ done: true as const, value: undefined });
          },
        };
      },
    };
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
