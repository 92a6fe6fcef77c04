/** When tracing turns on, which trace a log line belongs to, and which log format a process picks. */
import { logFormat } from '../src/logger.js';
import { traceFieldsOf, tracingEnabled } from '../src/tracing.js';

describe('tracingEnabled (OpenTelemetry SDK environment variables)', () => {
  it('is off by default and on with an OTLP endpoint or exporter', () => {
    expect(tracingEnabled({})).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingEnabled({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
  });

  it('stays off when the SDK is disabled or the exporter is none', () => {
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  });
});

describe('traceFieldsOf (W3C Trace Context traceparent)', () => {
  it('gives the trace id of a sampled traceparent only', () => {
    expect(traceFieldsOf({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })).toEqual({
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
    expect(traceFieldsOf({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00' })).toEqual({});
    expect(traceFieldsOf({ traceparent: 'garbage' })).toEqual({});
    expect(traceFieldsOf({})).toEqual({});
  });
});

describe('logFormat', () => {
  it('is pretty on a terminal and JSON otherwise; the logFormat setting forces one', () => {
    expect(logFormat(undefined, true)).toBe('pretty');
    expect(logFormat(undefined, false)).toBe('json');
    expect(logFormat('json', true)).toBe('json');
    expect(logFormat('pretty', false)).toBe('pretty');
  });
});
