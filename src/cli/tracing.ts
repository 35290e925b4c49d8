// Starts OpenTelemetry tracing for `converge run` and `converge worker` when OTEL_EXPORTER_OTLP_ENDPOINT is set; without it the SDK is never imported and every span is the API's no-op.
/** What the CLI holds of tracing: the shutdown that exports what is still buffered (a no-op when tracing is off). */
export interface Tracing {
  enabled: boolean;
  shutdown(): Promise<void>;
}

/** The SDK's module, imported on demand (src/cli/tracing-sdk.ts). */
type SdkModule = { startSdk(env: NodeJS.ProcessEnv): () => Promise<void> };

const OFF: Tracing = { enabled: false, shutdown: () => Promise.resolve() };

/**
 * Tracing on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and OTEL_SDK_DISABLED is not
 * "true"): the SDK is imported then, and only then (`load`, replaced in tests).
 */
export async function startTracing(
  env: NodeJS.ProcessEnv,
  load: () => Promise<SdkModule> = () => import('./tracing-sdk.js'),
): Promise<Tracing> {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return OFF;
  const shutdown = (await load()).startSdk(env);
  return { enabled: true, shutdown };
}

/** Shuts tracing down (its buffered spans exported), waiting at most `ms`: a collector that does not answer never holds up an exit. */
export async function flushWithin(tracing: Tracing, ms: number): Promise<void> {
  if (!tracing.enabled) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([tracing.shutdown().catch(() => undefined), late]);
  clearTimeout(timer);
}
