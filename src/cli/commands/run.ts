// `converge run DIR`: the daemon, until SIGTERM or SIGINT (then a graceful stop and exit 0).
import { resolve } from 'node:path';
import { createLogger } from '../../daemon/logger.js';
import { startDaemon } from '../../daemon/daemon.js';
import type { Command } from '../command.js';
import { refuseLiteralSecrets } from '../literal-secrets.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { EMBEDDED, EMBEDDED_BANNER, openTarget, requireApiUrl } from '../target.js';
import { notificationSender, receiverSecrets } from '../notifications.js';

/** After a signal-driven stop, a handle left open (a force-stopped job's request) must not keep the process alive. */
const EXIT_GRACE_MS = 3_000;
/** How long after shutdown_timeout a stop that is still running is cut short (exit 1). */
const SAFETY_NET_MS = 2_000;

export const runCommand: Command = {
  name: 'run',
  summary: 'the daemon: watch DIR, resync on a timer, apply through jobs, serve /healthz /readyz /metrics /status',
  usage: 'converge run DIR [options]',
  positionals: [1, 1],
  options: settingOptions(
    'apiUrl',
    'apiKey',
    'tenantId',
    'namePrefix',
    'emulatorState',
    'redisUrl',
    'redisPrefix',
    'redisCluster',
    'resync',
    'debounce',
    'driftPolicy',
    'httpHost',
    'httpPort',
    'concurrency',
    'attempts',
    'backoff',
    'globalRate',
    'requestTimeout',
    'shutdownTimeout',
    'jobLock',
    'progressDeadline',
    'healthPoll',
    'flapWindow',
    'flapLimit',
    'lease',
    'replicaId',
    'allowLiteralSecrets',
    'allowLocalDiscovery',
    'logLevel',
    'adopt',
    'prune',
    'maxDeletes',
    'pruneTracingProjects',
  ),
  async run(args, io) {
    const settings = requireApiUrl(resolveSettings(args, io.env));
    refuseLiteralSecrets('run', settings);
    const dir = resolve(io.cwd, args.positionals[0]!);
    // Receivers are checked before anything starts: a missing environment variable is one line naming it.
    const notify = notificationSender(settings, io.env);
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
    let daemon;
    try {
      daemon = await startDaemon({
        dir,
        settings,
        env: io.env,
        log,
        embedded: settings.apiUrl === EMBEDDED,
        openService: (onRequest) => openTarget(settings, { onRequest }),
        notify: notify && { receivers: settings.notifications, deliver: notify.sender.deliver, close: () => notify.sender.close() },
      });
    } catch (error) {
      await notify?.sender.close();
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      throw error;
    }
    const running = daemon;
    log.info({ status: running.statusUrl }, 'converge daemon running; SIGTERM or SIGINT stops it');
    let stopAt = 0;
    const code = await new Promise<number>((done) => {
      stop = (signal) => {
        stopAt = Date.now();
        // shutdown_timeout bounds the whole stop (the daemon bounds each step by it): a stop still running SAFETY_NET_MS
        // later is a bug, and ends with exit 1 (at the 25s default, still inside Kubernetes' 30s grace period).
        setTimeout(() => {
          log.error({ signal }, 'shutdown did not finish in time; exiting');
          process.exit(1);
        }, settings.shutdownTimeout + SAFETY_NET_MS).unref();
        running.stop(signal).then(
          () => done(0),
          (error: unknown) => {
            log.error({ error: (error as Error)?.message }, 'shutdown failed');
            done(1);
          },
        );
      };
      if (early) stop(early);
    });
    // Within shutdown_timeout: a socket left to a frozen Redis must not hold the exit.
    setTimeout(() => process.exit(code), Math.max(0, Math.min(EXIT_GRACE_MS, stopAt + settings.shutdownTimeout - Date.now() - 100))).unref();
    return code;
  },
};
