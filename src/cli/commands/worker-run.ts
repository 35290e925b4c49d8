// What `converge worker` runs (its flags and --help are in worker.ts, loaded without this).
import { createLogger } from '../../daemon/telemetry/logger.js';
import { startWorkerProcess } from '../../jobs/runner/worker-process.js';
import { refuseLiteralSecrets } from '../literal-secrets.js';
import { resolveSettings } from '../settings.js';
import { requireApiUrl } from '../target.js';
import { flushWithin, startTracing } from '../tracing.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** How long a stopping worker waits for its last spans to be exported. */
const TRACE_FLUSH_MS = 1_000;

/** Runs `converge worker`; returns the exit code. */
export async function runWorkerCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const settings = requireApiUrl(await resolveSettings(args, io.env));
  refuseLiteralSecrets('worker', settings);
  const log = createLogger({
    level: settings.logLevel,
    destination: io.stdout,
    env: io.env,
    sensitive: settings.apiKey ? [settings.apiKey] : [],
  });
  // OpenTelemetry traces of the jobs when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/monitoring.md); else nothing is loaded.
  const tracing = await startTracing(io.env);
  const worker = await startWorkerProcess(settings, { env: io.env, log });
  // SIGTERM/SIGINT: take no new job, let the active ones finish within shutdown_timeout, then exit.
  const onSignal = (): void => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    void worker
      .stop()
      .then(() => flushWithin(tracing, TRACE_FLUSH_MS))
      .then(() => process.exit(process.exitCode ?? 0));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  log.info({ concurrency: settings.concurrency }, 'worker started');
  await worker.closed;
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  await flushWithin(tracing, TRACE_FLUSH_MS);
  log.info({}, 'worker stopped');
  return 0;
}
