// The OpenTelemetry SDK of converge's traces, imported only by src/cli/tracing.ts when OTEL_EXPORTER_OTLP_ENDPOINT is set: a Node tracer provider exporting OTLP over HTTP.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { VERSION } from '../service/version.js';

/**
 * Registers the global tracer provider (with the async context manager and the W3C propagator) and returns its
 * shutdown, which exports the spans still buffered. The exporter reads the OTEL_EXPORTER_OTLP_* variables itself
 * (endpoint, headers, protocol, timeout), the batch processor OTEL_BSP_*, the sampler OTEL_TRACES_SAMPLER*.
 */
export function startSdk(env: NodeJS.ProcessEnv): () => Promise<void> {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME || 'converge',
      'service.version': VERSION,
    }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  return () => provider.shutdown();
}
