/**
 * OpenTelemetry tracing for the edge and the agent: off unless the standard `OTEL_*` variables
 * ask for it (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/):
 *
 * - on when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set, or
 *   `OTEL_TRACES_EXPORTER` names `otlp`; off when `OTEL_SDK_DISABLED=true` or
 *   `OTEL_TRACES_EXPORTER=none`;
 * - spans go to an OTLP/HTTP (JSON) exporter, which reads the endpoint, `OTEL_EXPORTER_OTLP_HEADERS`
 *   and timeouts itself, through a batch processor (`OTEL_BSP_*`); sampling follows
 *   `OTEL_TRACES_SAMPLER` (default parent-based always-on); `OTEL_SERVICE_NAME` and
 *   `OTEL_RESOURCE_ATTRIBUTES` override the resource.
 *
 * Context crosses processes as W3C Trace Context (`traceparent`, `tracestate`): from the client to
 * the edge, from the edge to the agent in the RunAssignment headers, from the agent to the backend.
 * While tracing is off every helper here is a no-op of the OpenTelemetry API (no allocation per
 * request beyond the API's non-recording span).
 */
import type * as TracingSdkModule from './tracing-sdk.js';
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

export interface TracingOptions {
  /** `service.name` unless `OTEL_SERVICE_NAME` says otherwise, e.g. `iop-edge`. */
  serviceName: string;
  serviceVersion: string;
  env?: NodeJS.ProcessEnv;
}

export interface TracingHandle {
  /** Exports what is buffered and stops (call before exit). */
  shutdown(): Promise<void>;
}

/** Whether the environment turns tracing on (see the module comment). */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  if (exporters.includes('otlp')) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

let active: TracingHandle | undefined;

type TracingSdk = typeof TracingSdkModule;

/**
 * Starts tracing when the environment asks for it (`tracingEnabled`), registering the global
 * tracer provider, the AsyncLocalStorage context manager and the W3C propagator.
 * @returns the handle, or undefined when tracing stays off.
 */
export function startTracing(options: TracingOptions): TracingHandle | undefined {
  const env = options.env ?? process.env;
  if (active !== undefined || !tracingEnabled(env)) return active;
  // The SDK (provider, exporter, resources) is loaded only when tracing is on: every process
  // importing @iop/core would otherwise pay for loading it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('./tracing-sdk.js') as TracingSdk;
  active = sdk.registerTracerProvider(options.serviceName, options.serviceVersion);
  return active;
}

/** iop's tracer (a no-op one while tracing is off). */
export function tracer(): Tracer {
  return trace.getTracer('iop');
}

/** The context carried by `headers` (`traceparent`, `tracestate`; lower-case names), or the root context. */
export function extractContext(headers: Readonly<Record<string, string | string[] | undefined>>): Context {
  if (headers.traceparent === undefined) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers);
}

/**
 * `headers` with the W3C trace context of `span` (replacing any `traceparent`/`tracestate`);
 * the same object, uncopied, when the span is not recording (tracing off or not sampled).
 */
export function injectHeaders(headers: Record<string, string>, span: Span): Record<string, string> {
  if (!span.isRecording()) return headers;
  const out: Record<string, string> = { ...headers };
  delete out.traceparent;
  delete out.tracestate;
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), out);
  return out;
}

/** Adds the active span's W3C trace context to `headers` (in place); nothing while tracing is off or unsampled. */
export function injectActive(headers: Record<string, string>): void {
  const span = trace.getSpan(context.active());
  if (span !== undefined && span.isRecording()) propagation.inject(context.active(), headers);
}

/** Marks a span failed with the error's message and type (`error.type`). */
export function failSpan(span: Span, error: unknown, type?: string): void {
  if (!span.isRecording()) return;
  const message = error instanceof Error ? error.message : String(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute(
    'error.type',
    type ??
      (error instanceof Error ? (((error as { code?: unknown }).code as string | undefined) ?? error.name) : 'error'),
  );
}

/** `trace_id` and `span_id` of the active span, for log lines; undefined outside a sampled span. */
export function activeTraceFields(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getSpan(context.active());
  if (span === undefined) return undefined;
  const spanContext = span.spanContext();
  if ((spanContext.traceFlags & 1) === 0) return undefined;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** `trace_id` of a W3C `traceparent` header (sampled only), for the log lines of work it started; {} otherwise. */
export function traceFieldsOf(headers: Readonly<Record<string, string>>): { trace_id?: string } {
  const match = headers.traceparent === undefined ? null : TRACEPARENT.exec(headers.traceparent);
  return match === null || (Number.parseInt(match[3]!, 16) & 1) === 0 ? {} : { trace_id: match[1]! };
}

export { context as otelContext, trace as otelTrace, type Context, type Span };
