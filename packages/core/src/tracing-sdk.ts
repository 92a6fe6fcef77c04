/**
 * The OpenTelemetry SDK part of tracing.ts, loaded only when tracing is on: a Node tracer provider
 * with the service's resource (environment detector last, so `OTEL_SERVICE_NAME` and
 * `OTEL_RESOURCE_ATTRIBUTES` win), a batch processor and the OTLP/HTTP exporter (JSON), registered
 * globally with the AsyncLocalStorage context manager and the W3C propagator.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export function registerTracerProvider(serviceName: string, serviceVersion: string): { shutdown(): Promise<void> } {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': serviceName, 'service.version': serviceVersion }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  return {
    shutdown: async () => {
      await provider.shutdown().catch(() => undefined);
    },
  };
}
