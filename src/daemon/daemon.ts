// The daemon: status server, queue worker, watcher, resync scheduler and reconciler wired together; graceful stop.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RequestInfo, ServiceClient } from '../service/client.js';
import type { DriftPolicy } from '../core/model.js';
import { openQueueEvents, openQueueSession, type QueueSession } from '../enqueue/apply.js';
import { closeRedis } from '../enqueue/redis.js';
import { startWorker, type ReconcileWorker, type WorkerSettings } from '../enqueue/worker.js';
import { ManifestCache } from '../observe/manifests.js';
import { VERSION } from '../service/version.js';
import { DesiredMemory } from './drift.js';
import { startStatusServer, type ReadinessCheck, type StatusServer } from './status-server.js';
import { LastGoodManifests } from './last-good.js';
import { createMetrics, SYNC_STATES, type DaemonMetrics } from './metrics.js';
import { errorLine, Reconciler } from './reconciler.js';
import { startResync, type Resync } from '../enqueue/resync-scheduler.js';
import { watchManifestDir, type ManifestWatcher } from './watcher.js';

export const DAEMON_VERSION = VERSION;

/** The settings the daemon reads (src/cli/settings.ts Settings satisfies it). */
export interface DaemonSettings extends WorkerSettings {
  apiUrl: string;
  tenantId: string | undefined;
  resync: number;
  debounce: number;
  httpPort: number;
  httpHost: string;
  driftPolicy: DriftPolicy;
  shutdownTimeout: number;
  jobLock: number;
  allowLiteralSecrets: boolean;
  allowLocalDiscovery: boolean;
}

/** The service the daemon talks to (opened by the CLI: a URL, or the embedded emulator). */
export interface DaemonService {
  client: ServiceClient;
  url: string;
  close(): Promise<void>;
}

export interface DaemonOptions {
  dir: string;
  settings: DaemonSettings;
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** True for the in-process emulator: jobs and applied state then live under a private Redis prefix. */
  embedded: boolean;
  /** Opens the service with the daemon's request hook (metrics, readiness). */
  openService(onRequest: (info: RequestInfo) => void): Promise<DaemonService>;
}

export interface Daemon {
  /** http://host:port of the status server. */
  statusUrl: string;
  metrics: DaemonMetrics;
  status(): Record<string, unknown>;
  /** Stops watching and taking jobs, finishes or hands back active jobs within shutdownTimeout, closes everything. */
  stop(reason: string): Promise<void>;
}

/** A check that waits longer than this fails (Redis ping). */
const PING_TIMEOUT_MS = 1_000;
const MAX_CYCLES_KEPT = 200;
const CLOSE_GRACE_MS = 2_000;
/** While revisions build, their deployments are looked up this often (one list request per 100). */
const REVISION_POLL_MS = 3_000;

function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(unparseable URL)';
  }
}

async function within<T>(promise: Promise<T>, ms: number): Promise<{ done: true; value: T } | { done: false }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise.then((value) => ({ done: true as const, value })),
      new Promise<{ done: false }>((r) => (timer = setTimeout(() => r({ done: false }), Math.max(0, ms)))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Logs an error at most once per `ms` per source (a Redis outage makes workers report every reconnect). */
function throttledWarn(log: Logger, ms = 10_000) {
  const last = new Map<string, number>();
  return (source: string, error: unknown) => {
    const now = Date.now();
    if ((last.get(source) ?? 0) + ms > now) return;
    last.set(source, now);
    log.warn({ source, error: errorLine(error) }, 'background error');
  };
}

/** Starts the daemon. Fails (one line) when Redis is unreachable or the status port cannot be bound. */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { settings, log } = options;
  const dir = resolve(options.dir);
  const startedAt = new Date().toISOString();
  const metrics = createMetrics();
  const warn = throttledWarn(log);
  const health = { okAt: 0, failAt: 0, failure: '' };
  const cycles: string[] = [];
  let stopping = false;
  const stopSignal = new AbortController();
  let session: QueueSession | undefined;
  let service: DaemonService | undefined;
  let worker: ReconcileWorker | undefined;
  let events: QueueEvents | undefined;
  let eventsConnection: Redis | undefined;
  let reconciler: Reconciler | undefined;
  let watcher: ManifestWatcher | undefined;
  let resync: Resync | undefined;
  let server: StatusServer | undefined;
  let startup: Promise<void> | undefined;
  let revisionTimer: NodeJS.Timeout | undefined;

  function onRequest(info: RequestInfo): void {
    metrics.observeRequest(info);
    const failed = info.status === 'network' || info.status >= 500 || info.status === 401 || info.status === 403;
    if (failed) {
      health.failAt = Date.now();
      health.failure = `${info.method} ${info.route} answered ${info.status === 'network' ? 'nothing (network error)' : info.status}`;
    } else {
      health.okAt = Date.now();
    }
  }

  async function readiness(): Promise<ReadinessCheck[]> {
    const checks: ReadinessCheck[] = [];
    checks.push(stopping ? { name: 'running', ok: false, detail: 'shutting down' } : { name: 'running', ok: true });
    if (!session) checks.push({ name: 'redis', ok: false, detail: 'not connected yet' });
    else {
      const ping = await within(session.redis.ping().then(() => true, (e: unknown) => errorLine(e)), PING_TIMEOUT_MS);
      checks.push(ping.done && ping.value === true ? { name: 'redis', ok: true } : { name: 'redis', ok: false, detail: ping.done ? `ping failed: ${String(ping.value)}` : `no answer to PING within ${PING_TIMEOUT_MS} ms` });
    }
    if (health.okAt === 0 && health.failAt === 0) checks.push({ name: 'service', ok: false, detail: 'no request answered yet' });
    else if (health.failAt > health.okAt) checks.push({ name: 'service', ok: false, detail: `last request failed: ${health.failure}` });
    else checks.push({ name: 'service', ok: true });
    const manifests = reconciler?.manifests;
    if (manifests?.loaded) checks.push({ name: 'manifests', ok: true });
    else checks.push({ name: 'manifests', ok: false, detail: manifests?.error ?? 'not loaded yet' });
    return checks;
  }

  function status(): Record<string, unknown> {
    const snapshot = reconciler?.snapshot();
    const counts: Record<string, Record<string, number>> = {};
    for (const [kind, byState] of reconciler?.tracker.counts() ?? new Map()) {
      counts[kind] = Object.fromEntries(SYNC_STATES.map((s) => [s, byState.get(s) ?? 0]));
    }
    return {
      format_version: '1',
      daemon: {
        version: DAEMON_VERSION,
        dir,
        pid: process.pid,
        hostname: hostname(),
        startedAt,
        stopping,
        service: service ? redactUrl(service.url) : null,
        embedded: options.embedded,
        driftPolicy: settings.driftPolicy,
        resyncMs: settings.resync,
        debounceMs: settings.debounce,
      },
      manifests: reconciler?.manifests ?? null,
      lastReconcile: snapshot?.lastReconcile ?? null,
      lastSuccessfulReconcileAt: snapshot?.lastSuccessfulReconcileAt ?? null,
      reconciles: snapshot?.reconciles ?? null,
      resync: { everyMs: settings.resync, cyclesRun: [...cycles] },
      counts,
      resources: reconciler?.tracker.resources() ?? [],
      orphans: reconciler?.tracker.orphans() ?? [],
      history: snapshot?.history ?? [],
      plan: snapshot?.plan ?? null,
    };
  }

  async function closeAll(): Promise<void> {
    clearInterval(revisionTimer);
    await watcher?.close().catch((e: unknown) => warn('watcher', e));
    await within(
      (async () => {
        await reconciler?.stop();
        await startup;
        await resync?.close();
      })(),
      Math.max(0, deadline - Date.now()),
    );
    await closeWorker();
    await events?.close().catch((e: unknown) => warn('events', e));
    await closeRedis(eventsConnection);
    await session?.close().catch((e: unknown) => warn('redis', e));
    // Requests of force-stopped jobs may still be in flight: give them a moment, not the whole request timeout.
    if (service) await within(service.close().catch((e: unknown) => warn('service', e)), CLOSE_GRACE_MS);
    await server?.close();
  }

  let deadline = Number.POSITIVE_INFINITY;
  async function closeWorker(): Promise<void> {
    if (!worker) return;
    // Take no new job; let the active ones finish until the deadline; then close without waiting: their locks
    // lapse after job_lock and BullMQ hands them to another worker (or to this daemon when it restarts).
    const finished = await within(worker.worker.pause(false), Math.max(0, deadline - Date.now()));
    if (!finished.done) log.warn({ deadlineMs: settings.shutdownTimeout }, 'active jobs did not finish before the deadline; handing them back to the queue');
    await worker.close(!finished.done).catch((e: unknown) => warn('worker', e));
  }

  server = await startStatusServer({
    host: settings.httpHost,
    port: settings.httpPort,
    handlers: { readiness, status, metrics: () => metrics.render() },
    onError: (error, path) => warn(`http ${path}`, error),
  });
  log.info({ url: server.url, port: server.port }, 'status server listening');

  try {
    session = await openQueueSession(settings, { private: options.embedded, target: { apiUrl: settings.apiUrl, tenantId: settings.tenantId } });
    service = await options.openService(onRequest);
    const redisSettings = { redisUrl: settings.redisUrl, redisPrefix: session.prefix };
    worker = await startWorker(
      { ...settings, redisPrefix: session.prefix },
      { client: service.client, env: options.env, log: log.child({ component: 'worker' }), name: `converge-daemon@${hostname()}:${process.pid}`, lockDuration: settings.jobLock, stalledInterval: settings.jobLock },
    );
    worker.worker.on('completed', (_job, result) => metrics.jobs.inc({ outcome: (result as { outcome?: string } | undefined)?.outcome ?? 'unchanged' }));
    worker.worker.on('failed', (job, error) => {
      const final = error?.name === 'UnrecoverableError' || !job || job.attemptsMade >= (job.opts.attempts ?? 1);
      metrics.jobs.inc({ outcome: final ? 'failed' : 'retried' });
    });

    const memory = new DesiredMemory(session.redis, session.prefix);
    reconciler = new Reconciler({
      context: { dir, env: options.env, client: service.client, queue: session.queue, redis: session.redis, applied: session.store, memory, lastGood: new LastGoodManifests(), manifestCache: new ManifestCache(), settings },
      metrics,
      log,
      maxRetryMs: Math.min(60_000, Math.max(1_000, settings.resync)),
    });
    const tracked = reconciler;
    const opened = await openQueueEvents(session, redisSettings.redisUrl, 'converge-daemon-events');
    events = opened.events;
    eventsConnection = opened.connection;
    events.on('error', (e) => warn('events', e));
    events.on('completed', ({ jobId, returnvalue }) => {
      tracked.jobCompleted(jobId, returnvalue).catch((e: unknown) => warn('drift memory', e));
    });
    events.on('failed', ({ jobId, failedReason }) => tracked.jobFailed(jobId, failedReason));
    await events.waitUntilReady();

    watcher = await watchManifestDir({
      dir,
      debounceMs: settings.debounce,
      onBurst: (burst) => {
        log.debug({ events: burst.events, sample: burst.sample, quietMs: Date.now() - burst.lastAt }, 'manifest change');
        void tracked.request('watch');
      },
      onError: (e) => warn('watcher', e),
    });
    log.info({ dir, watched: watcher.watchedCount(), driftPolicy: settings.driftPolicy, resyncMs: settings.resync, debounceMs: settings.debounce }, 'watching the manifest directory');
    let following = false;
    const client = service.client;
    revisionTimer = setInterval(() => {
      // While the service fails, only the reconciles (with their backoff) probe it: polling on top would not back off.
      if (following || stopping || health.failAt > health.okAt) return;
      following = true;
      tracked.followRevisions(client).catch((e: unknown) => warn('revisions', e)).finally(() => (following = false));
    }, REVISION_POLL_MS);
    revisionTimer.unref();
    // The first reconcile runs in the background (a big directory or a slow service must not delay stop());
    // the resync scheduler starts after it, so the first cycle does not repeat it.
    const producer = session.redis;
    startup = (async () => {
      await tracked.request('startup');
      // Redis may be away right now: keep trying to start the scheduler (file changes still reconcile meanwhile).
      for (let attempt = 1; !stopping; attempt++) {
        try {
          resync = await startResync({
            redis: redisSettings,
            producer,
            everyMs: settings.resync,
            run: async (cycle) => {
              cycles.push(cycle);
              if (cycles.length > MAX_CYCLES_KEPT) cycles.splice(0, cycles.length - MAX_CYCLES_KEPT);
              await tracked.request('resync', cycle);
            },
            onError: (e) => warn('resync', e),
          });
          break;
        } catch (error) {
          const waitMs = Math.min(30_000, 1_000 * 2 ** Math.min(attempt - 1, 5));
          log.warn({ error: errorLine(error), attempt, retryInMs: waitMs }, 'resync scheduler did not start; retrying');
          await sleep(waitMs, undefined, { signal: stopSignal.signal }).catch(() => undefined);
        }
      }
      if (stopping) await resync?.close();
    })().catch((error: unknown) => warn('resync', error));
  } catch (error) {
    stopping = true;
    stopSignal.abort();
    deadline = Date.now() + settings.shutdownTimeout;
    await closeAll();
    throw error;
  }

  let stopped: Promise<void> | undefined;
  return {
    statusUrl: server.url,
    metrics,
    status,
    stop(reason) {
      stopped ??= (async () => {
        stopping = true;
        stopSignal.abort();
        deadline = Date.now() + settings.shutdownTimeout;
        log.info({ reason, deadlineMs: settings.shutdownTimeout }, 'shutting down: no new reconciles or jobs');
        await closeAll();
        log.info({}, 'stopped');
      })();
      return stopped;
    },
  };
}
