// The daemon of `converge run DIR`, loaded by run-run.ts once the status port is bound: logger, signals, start and stop.
import type { Server } from 'node:http';
import { resolve } from 'node:path';
import { createLogger, type Logger } from '../../daemon/telemetry/logger.js';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { stopPlan } from '../../daemon/lifecycle/stop-plan.js';
import { environmentOf } from '../environment.js';
import { EMBEDDED, EMBEDDED_BANNER, openTarget, type ServiceSettings } from '../target.js';
import { notificationSender, receiverSecrets } from '../../notify/wiring.js';
import { flushWithin, startTracing, type Tracing } from '../tracing.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** Hands the signals held so far to `handler` (in the order they came) and stops holding; later calls hand none. */
export type SignalHandOver = (handler: (signal: NodeJS.Signals) => void) => void;

/**
 * Runs the daemon of `converge run DIR` with its settings resolved and its status port bound (`listening`, which the
 * daemon's status server takes over); `handOverSignals` gives it the signals that came before; returns the exit code.
 */
export async function runDaemon(
  args: ParsedArgs,
  io: CommandIo,
  settings: ServiceSettings,
  listening: Server,
  handOverSignals: SignalHandOver,
): Promise<number> {
  const dir = resolve(io.cwd, args.positionals[0]!);
  // Receivers are checked before anything starts: a missing environment variable is one line naming it.
  // A rollout_failed carries the failed revision's last build log lines, which the daemon reads (masked) once it runs.
  let buildLogs: ((deploymentId: string, revisionId: string) => Promise<string[] | undefined>) | undefined;
  const notify = notificationSender(
    settings,
    io.env,
    (deploymentId, revisionId) => buildLogs?.(deploymentId, revisionId) ?? Promise.resolve(undefined),
  );
  const sensitive = [...(settings.apiKey ? [settings.apiKey] : []), ...receiverSecrets(notify)];
  const log = createLogger({ level: settings.logLevel, destination: io.stdout, env: io.env, sensitive });
  // First line: nothing this daemon does reaches a real service (warn: it shows at every level but error).
  if (settings.apiUrl === EMBEDDED) log.warn({ apiUrl: EMBEDDED }, EMBEDDED_BANNER);
  // Signals are caught from the start: one that arrives while the daemon starts stops it as soon as it is up.
  let stop: ((signal: NodeJS.Signals) => void) | undefined;
  let early: NodeJS.Signals | undefined;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      log.warn({ signal }, 'second signal: exiting without waiting for active jobs');
      process.exit(1);
    }
    if (stop) stop(signal);
    else early = signal;
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Those that came while the daemon's modules loaded (run-run.ts held them) count as if they came now.
  handOverSignals(onSignal);
  let daemon;
  let tracing: Tracing | undefined;
  try {
    // OpenTelemetry traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/monitoring.md); else nothing is loaded.
    tracing = await startTracing(io.env);
    daemon = await startDaemon({
      dir,
      environment: environmentOf(settings, io.cwd, dir),
      settings,
      env: io.env,
      log,
      listening,
      embedded: settings.apiUrl === EMBEDDED,
      openService: (onRequest) => openTarget(settings, { onRequest }),
      notify: notify && {
        receivers: settings.notifications,
        deliver: notify.sender.deliver,
        close: () => notify.sender.close(),
      },
    });
  } catch (error) {
    await notify?.sender.close();
    await tracing?.shutdown();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    throw error;
  }
  const running = daemon;
  const traces = tracing;
  buildLogs = (deploymentId, revisionId) => running.buildLogLines(deploymentId, revisionId);
  log.info({ status: running.statusUrl }, 'converge daemon running; SIGTERM or SIGINT stops it');
  const stopRunning = stopOf(running, traces, settings.shutdownTimeout, log);
  const code = await new Promise<number>((done) => {
    stop = (signal) => stopRunning(signal, done);
    if (early) stop(early);
  });
  // The stop closed what it could and dropped the rest; the log is written synchronously, so nothing is left to wait
  // for: the process ends now. Not on a timer: with Redis frozen, a library's retry of a command on a dropped
  // connection (BullMQ moving a failed job, answered "Connection is closed" at once) can keep the microtask queue
  // busy so that no timer fires again; this continuation still runs (docs/shutdown-and-leadership.md).
  process.exit(code);
}

/** Stops the running daemon on `signal`; `done` takes the exit code. */
type StopOnSignal = (signal: NodeJS.Signals, done: (code: number) => void) => void;

/**
 * The stop of the running daemon on a signal: its steps each have a bound, summing with a reserve to less than
 * shutdown_timeout (src/daemon/lifecycle/stop-plan.ts).
 */
function stopOf(running: Daemon, traces: Tracing, shutdownTimeout: number, log: Logger): StopOnSignal {
  const plan = stopPlan(shutdownTimeout);
  return (signal, done) => {
    // A stop still running at the safety net (22 s of the default 25 s) would be a bug: it ends with exit 1.
    setTimeout(() => {
      log.error({ signal, safetyNetMs: plan.safetyNetAt }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, plan.safetyNetAt).unref();
    running
      .stop(signal)
      .then(() => flushWithin(traces, plan.exitMs))
      .then(
        () => done(0),
        (error: unknown) => {
          log.error({ error: (error as Error)?.message }, 'shutdown failed');
          done(1);
        },
      );
  };
}
