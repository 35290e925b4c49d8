// The daemon: status server, job runner, watcher, resync scheduler and reconciler, started in steps and stopped in reverse.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { RequestInfo, ServiceClient } from '../service/client.js';
import type { DriftPolicy } from '../core/model.js';
import { HEALTH_STATUSES, SYNC_STATUSES, type HealthStatus, type SyncStatus } from '../core/health.js';
import type { JobEventsFeed } from '../queue/job-events.js';
import { openJobs, type Jobs } from '../jobs/open-jobs.js';
import { redactRedisUrl } from '../store/redis.js';
import type { Resync } from '../queue/resync-scheduler.js';
import type { JobRunner, WorkerSettings } from '../runner/worker.js';
import { ManifestCache } from '../observe/manifests.js';
import { VERSION } from '../service/version.js';
import { startStatusServer, type ReadinessCheck, type StatusServer } from './status-server.js';
import { LastGoodManifests } from './last-good.js';
import { createMetrics, SYNC_STATES, type DaemonMetrics } from './metrics.js';
import { OperatorRequests } from './operator-requests.js';
import type { ReconcileRequest } from './status-server.js';
import { errorLine, Reconciler } from './reconciler.js';
import type { Environment } from '../observe/environment.js';
import { watchEnvironment } from './environment-watcher.js';
import type { ManifestWatcher } from './watcher.js';
import { Leadership } from '../leader/leadership.js';
import { registerLeaseMetrics } from './lease-metrics.js';
import { stopPlan } from './stop-plan.js';
import type { Deliver } from '../core/notify/events.js';
import type { ReceiverConfig } from '../core/notify/receivers.js';
import { openNotifyQueue, type NotifyQueue, type NotifyWorker } from '../queue/notify-queue.js';
import { Notifier } from './notifier.js';

export const DAEMON_VERSION = VERSION;

/** A delivery in flight when the term or the daemon ends gets this long before its attempt is given up (docs/notifications.md). */
const NOTIFY_GRACE_MS = 2_000;

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
  allowLocalDiscovery: boolean;
  /** name_prefix: only deployments whose names start with it are listed, planned and reported as orphans. */
  namePrefix?: string | undefined;
  /** A new revision not active after this long is degraded (ProgressDeadlineExceeded); default 30 minutes. */
  progressDeadline?: number;
  /** How often building revisions are read; default 5 s. */
  healthPoll?: number;
  /** adopt, prune, max_deletes, prune_tracing_projects (see src/daemon/cycle.ts; default: auto, prune off). */
  adopt?: 'auto' | 'explicit';
  prune?: boolean;
  maxDeletes?: number;
  pruneTracingProjects?: boolean;
  /** The leader lease time (ms): only its holder watches, plans and enqueues. */
  lease: number;
  /** This replica's name in the lease (default hostname:pid). */
  replicaId?: string | undefined;
}

/** The service the daemon talks to (opened by the CLI: a URL, or the embedded emulator). */
export interface DaemonService {
  client: ServiceClient;
  url: string;
  close(): Promise<void>;
  /** Drops the connections now: requests in flight fail (the stop, before handing active jobs back). */
  dropConnections(): Promise<void>;
}

export interface DaemonOptions {
  dir: string;
  /** Variables files and overlay directories: read with `dir`, and watched like it (docs/environments.md). */
  environment?: Environment | undefined;
  settings: DaemonSettings;
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** True for the in-process emulator: jobs and applied state then live under a private Redis prefix. */
  embedded: boolean;
  /** Opens the service with the daemon's request hook (metrics, readiness). */
  openService(onRequest: (info: RequestInfo) => void): Promise<DaemonService>;
  /**
   * Notifications (docs/notifications.md): the receivers as configured (names and filters) and the sender, which
   * alone holds their URLs and secrets. Absent or no receiver: no delivery queue is opened.
   */
  notify?: { receivers: readonly ReceiverConfig[]; deliver: Deliver; close(): Promise<void> } | undefined;
}

export interface Daemon {
  /** http://host:port of the status server. */
  statusUrl: string;
  metrics: DaemonMetrics;
  status(): Record<string, unknown>;
  /** A failed revision's last build log lines (masked), for notifications; undefined before the service is open. */
  buildLogLines(deploymentId: string, revisionId: string): Promise<string[] | undefined>;
  /** Stops watching and taking jobs, finishes or hands back active jobs within shutdownTimeout, closes everything. */
  stop(reason: string): Promise<void>;
}

/** A check that waits longer than this fails (Redis ping). */
const PING_TIMEOUT_MS = 1_000;
const MAX_CYCLES_KEPT = 200;
/** The applied-state epoch is read this often (a change or a vanishing means Redis lost converge's records). */
const EPOCH_CHECK_MS = 2_000;
/** Defaults of health_poll and progress_deadline (config/default.yaml holds the same). */
const HEALTH_POLL_MS = 5_000;
const PROGRESS_DEADLINE_MS = 30 * 60_000;

/** Resources by health (every health named, zeros included). */
function healthCounts(rows: ReadonlyArray<{ health: { status: HealthStatus } }>): Record<HealthStatus, number> {
  const out = Object.fromEntries(HEALTH_STATUSES.map((h) => [h, 0])) as Record<HealthStatus, number>;
  for (const row of rows) out[row.health.status] += 1;
  return out;
}

/** What to fix after a failed request, in the words the CLI uses (src/cli/main.ts): the key, or the URL. */
function requestHint(status: RequestInfo['status']): string {
  if (status === 401 || status === 403) {
    return '; check the API key in CONVERGE_API_KEY (--api-key), and for a key that spans several workspaces the workspace in CONVERGE_TENANT_ID (--tenant-id)';
  }
  if (status === 'network') return '; is the service up there? the URL comes from --api-url or CONVERGE_API_URL';
  return '';
}

/** Resources by sync status (every status named, zeros included): the SYNC column of `converge status`, counted. */
function syncCounts(rows: ReadonlyArray<{ sync: { status: SyncStatus } }>): Record<SyncStatus, number> {
  const out = Object.fromEntries(SYNC_STATUSES.map((s) => [s, 0])) as Record<SyncStatus, number>;
  for (const row of rows) out[row.sync.status] += 1;
  return out;
}

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
  const daemon = new ConvergeDaemon(options);
  await daemon.start();
  return daemon;
}

/**
 * The daemon's parts, each started by a step of its own (status server, jobs and service, job runner, reconciler,
 * job events, watcher, revision poll, resync scheduler) and stopped in the reverse order.
 */
class ConvergeDaemon implements Daemon {
  readonly metrics = createMetrics();
  private readonly options: DaemonOptions;
  private readonly settings: DaemonSettings;
  private readonly log: Logger;
  private readonly dir: string;
  private readonly startedAt = new Date().toISOString();
  private readonly warn: (source: string, error: unknown) => void;
  /** The last answered and the last failed request to the service (readiness). */
  private readonly health = { okAt: 0, failAt: 0, failure: '' };
  private readonly cycles: string[] = [];
  private readonly stopSignal = new AbortController();
  private stopping = false;
  private stopped: Promise<void> | undefined;
  private server: StatusServer | undefined;
  private jobs: Jobs | undefined;
  private service: DaemonService | undefined;
  private runner: JobRunner | undefined;
  private reconciler: Reconciler | undefined;
  private jobEvents: JobEventsFeed | undefined;
  private watcher: ManifestWatcher | undefined;
  private revisionTimer: NodeJS.Timeout | undefined;
  private resync: Resync | undefined;
  /** The leader lease's election loop: this replica leads (watches, plans, enqueues) while it holds the lease. */
  private leadership: Leadership | undefined;
  /**
   * The current term as leader: the watcher, the first reconcile, then the resync scheduler (started in the
   * background); ended (aborted, then each part stopped) when the lease is lost or the daemon stops.
   */
  private term: { abort: AbortController; run: Promise<void> } | undefined;
  /** Secrets held as SecretsUnknown that an operator asked to write (POST /reconcile writeSecrets). */
  private readonly secretWrites = new OperatorRequests();
  /** Released holds of failed revisions to rebuild (POST /reconcile retryFailed). */
  private readonly rebuilds = new OperatorRequests();
  /** Manual reconciles (POST /reconcile) run one at a time, so each one's secret-write requests are its own. */
  private manual: Promise<unknown> = Promise.resolve();
  /** The epoch of the prefix this daemon knows, and whether Redis lost converge's records while it ran. */
  private appliedState: { epoch: string | null; lost: boolean; lostAt: string | null; losses: number; detail: string | null } = { epoch: null, lost: false, lostAt: null, losses: 0, detail: null };
  private epochTimer: NodeJS.Timeout | undefined;
  /** Notifications: the queue of deliveries, its worker (while this replica leads), and the hook on status. */
  private notifyQueue: NotifyQueue | undefined;
  private notifyWorker: NotifyWorker | undefined;
  private notifier: Notifier | undefined;

  constructor(options: DaemonOptions) {
    this.options = options;
    this.settings = options.settings;
    this.log = options.log;
    this.dir = resolve(options.dir);
    this.warn = throttledWarn(options.log);
  }

  get statusUrl(): string {
    return this.server!.url;
  }

  async start(): Promise<void> {
    await this.startStatusServer();
    try {
      await this.openJobsAndService();
      await this.checkRedisState();
      await this.openNotifications();
      await this.startRunner();
      this.startReconciler();
      await this.followJobEvents();
      this.startRevisionPoll();
      this.startEpochWatch();
      this.startLeadership();
    } catch (error) {
      await this.shutdown();
      throw error;
    }
  }

  stop(reason: string): Promise<void> {
    this.stopped ??= (async () => {
      this.log.info({ reason, deadlineMs: this.settings.shutdownTimeout }, 'shutting down: no new reconciles or jobs');
      await this.shutdown();
      this.log.info({}, 'stopped');
    })();
    return this.stopped;
  }

  /**
   * The start steps in reverse; each skips a part that never started, and each has its own bound
   * (src/daemon/stop-plan.ts; docs/shutdown-and-leadership.md). The lease goes first (it lapses by itself anyway);
   * the reconcile in progress and the active jobs get the work window; then the service's connections are dropped and
   * the jobs still active handed back; then everything closes at once, and what did not close in its bound is
   * dropped (Redis frozen, a service that never answers), so nothing holds the process after the stop.
   */
  private async shutdown(): Promise<void> {
    this.stopping = true;
    this.stopSignal.abort();
    const plan = stopPlan(this.settings.shutdownTimeout);
    const started = Date.now();
    const until = (offset: number): number => Math.max(0, started + offset - Date.now());
    await this.bounded('lease', this.releaseLease(), plan.leaseMs);
    this.stopRevisionPoll();
    clearInterval(this.epochTimer);
    await this.bounded('watcher', this.stopWatcher(), plan.watcherMs);
    const reconcile = await within(this.stopReconcilerAndResync(), until(plan.workEndsAt));
    if (!reconcile.done) this.log.warn({ workWindowMs: plan.workEndsAt }, 'the reconcile in progress did not end in the work window; left behind');
    // Deliveries in flight get their short grace inside the work window (docs/notifications.md); never past its end.
    await this.bounded('notifications', this.closeNotifications(), until(plan.workEndsAt));
    const finished = await this.stopRunner(until(plan.workEndsAt), plan.handBackMs);
    await this.closeAll(plan.closeMs, !finished);
  }

  /** One step, given at most `ms`; one warning when it is left unfinished. True when it finished. */
  private async bounded(step: string, promise: Promise<void>, ms: number): Promise<boolean> {
    const done = await within(promise.catch((e: unknown) => this.warn(step, e)), ms);
    if (!done.done) this.log.warn({ step, boundMs: ms }, 'shutdown step did not finish within its bound; left behind');
    return done.done;
  }

  /**
   * The last step: the job runner, the job events, Redis, the service and the status server close at once, each
   * within `ms`; a part not closed by then has its connections dropped (nothing is waited on after the stop).
   */
  private async closeAll(ms: number, forceRunner: boolean): Promise<void> {
    const { runner, jobEvents, jobs, service, server } = this;
    const steps: Array<[string, Promise<void> | undefined, () => unknown]> = [
      ['worker', runner?.close(forceRunner), () => runner?.disconnect()],
      ['job events', jobEvents?.close(), () => jobEvents?.disconnect()],
      ['redis', jobs?.close(), () => jobs?.disconnect()],
      ['service', service?.close(), () => service?.dropConnections()],
      ['status server', server?.close(), () => undefined],
    ];
    await Promise.all(
      steps.map(async ([step, closing, drop]) => {
        if (!closing) return;
        if (await this.bounded(step, closing, ms)) return;
        await Promise.resolve(drop()).catch((e: unknown) => this.warn(step, e));
      }),
    );
  }

  private async startStatusServer(): Promise<void> {
    this.server = await startStatusServer({
      host: this.settings.httpHost,
      port: this.settings.httpPort,
      handlers: {
        readiness: () => this.readiness(),
        status: () => this.status(),
        metrics: () => this.metrics.render(),
        reconcile: (request) => this.reconcileNow(request),
      },
      onError: (error, path) => this.warn(`http ${path}`, error),
      ...(this.options.env.CONVERGE_WEBHOOK_TOKEN ? { webhookToken: this.options.env.CONVERGE_WEBHOOK_TOKEN } : {}),
    });
    this.log.info({ url: this.server.url, port: this.server.port }, 'status server listening');
  }

  private async openJobsAndService(): Promise<void> {
    const { settings } = this;
    this.jobs = await openJobs(settings, {
      private: this.options.embedded,
      target: { apiUrl: settings.apiUrl, tenantId: settings.tenantId },
      log: this.log.child({ component: 'jobs' }),
    });
    this.service = await this.options.openService((info) => this.onRequest(info));
  }

  /**
   * Reads (or writes, on a first start) the prefix's epoch, and warns once when Redis may evict keys: an evicted
   * applied record or job is lost work (BullMQ and converge need maxmemory-policy noeviction).
   */
  private async checkRedisState(): Promise<void> {
    const jobs = this.jobs!;
    this.appliedState.epoch = await jobs.epoch.ensure();
    const eviction = await jobs.evictionPolicy();
    if ('unknown' in eviction) this.log.debug({ reason: eviction.unknown }, 'Redis maxmemory-policy not checked (managed Redis often refuses CONFIG); make sure it is noeviction');
    else if (eviction.policy !== 'noeviction') {
      this.log.warn({ maxmemoryPolicy: eviction.policy }, `Redis maxmemory-policy is ${eviction.policy}, not noeviction: under memory pressure Redis may evict converge's jobs and applied state; set maxmemory-policy noeviction (see docs/daemon.md, "In production")`);
    }
  }

  /** Reads the epoch every EPOCH_CHECK_MS; a change or a vanishing is one error, a metric and a /status field. */
  private startEpochWatch(): void {
    const jobs = this.jobs!;
    let checking = false;
    this.epochTimer = setInterval(() => {
      if (checking || this.stopping) return;
      checking = true;
      void (async () => {
        const now = await jobs.epoch.read();
        if (now === this.appliedState.epoch || this.stopping) return;
        const detail = now === null ? 'the epoch key vanished' : 'the epoch key changed';
        this.appliedState = { epoch: null, lost: true, lostAt: new Date().toISOString(), losses: this.appliedState.losses + 1, detail };
        this.metrics.appliedStateLost.set(1);
        this.publish();
        this.log.error(
          { detail },
          "Redis lost converge's records (applied state, desired-state memory, jobs): restarted without persistence, flushed, evicted or failed over to an empty replica. Secrets that cannot be compared are not rewritten (SecretsUnknown) and drift under report is not healed; run Redis with appendonly yes and maxmemory-policy noeviction",
        );
        this.appliedState.epoch = await jobs.epoch.ensure();
      })()
        .catch(() => undefined) // Redis away: the next tick reads again.
        .finally(() => (checking = false));
    }, EPOCH_CHECK_MS);
    this.epochTimer.unref();
  }

  /** POST /reconcile: one reconcile now, with the secret writes it asks for; answers once that reconcile ended. */
  private reconcileNow(request: ReconcileRequest): Promise<{ status: number; body: unknown }> {
    const run = this.manual.then(async () => {
      if (this.stopping || !this.reconciler) return { status: 503, body: { error: 'the daemon is stopping or not started' } };
      if (this.leadership?.token() === undefined) {
        const leader = this.leadership?.status().leader ?? null;
        return { status: 503, body: { error: `this replica is a standby: the leader${leader ? ` (${leader.holder})` : ''} reconciles; send the request to it`, leader } };
      }
      const requested = request.writeSecrets;
      const held = this.reconciler.tracker.secretsUnknown();
      if (requested) this.secretWrites.add(requested);
      const retried = request.retryFailed ? await this.reconciler.releaseHolds(request.retryFailed) : undefined;
      if (retried) this.rebuilds.add(retried.rebuild);
      let record;
      let written: string[] = [];
      let rebuilt: string[];
      try {
        record = await this.reconciler.request('manual');
      } finally {
        written = this.secretWrites.take();
        rebuilt = this.rebuilds.take();
      }
      if (requested) this.log.info({ requested: requested === true ? 'all' : requested, written }, 'secrets written on request (converge reconcile --write-secrets)');
      const body: Record<string, unknown> = {
        reconcile: record ? { id: record.id, ok: record.ok, error: record.error, enqueued: record.enqueued, summary: record.summary } : null,
      };
      if (requested) {
        const unknownNames = requested === true ? [] : requested.filter((n) => !written.some((k) => k === n || k.slice(k.indexOf('/') + 1) === n));
        body.writeSecrets = { requested: requested === true ? 'all' : requested, written, notWritten: unknownNames, heldBefore: held };
      }
      if (request.retryFailed && retried) {
        // A name the manifests do not declare (read after the reconcile, so its plan is the one that counts) is said apart.
        const undeclared = this.reconciler.undeclared(retried.unmatched);
        const notHeld = retried.unmatched.filter((name) => !undeclared.includes(name));
        body.retryFailed = { requested: request.retryFailed === true ? 'all' : request.retryFailed, released: retried.released, rebuilt, notHeld, undeclared };
      }
      return { status: record ? (record.ok ? 200 : 502) : 503, body };
    });
    this.manual = run.catch(() => undefined);
    return run;
  }

  private async startRunner(): Promise<void> {
    const { settings } = this;
    this.runner = await this.jobs!.startRunner({
      client: this.service!.client,
      env: this.options.env,
      log: this.log.child({ component: 'worker' }),
      name: `converge-daemon@${hostname()}:${process.pid}`,
      lockDuration: settings.jobLock,
      stalledInterval: settings.jobLock,
    });
    this.runner.onJob((event) => {
      if (event.type === 'completed') {
        this.metrics.jobs.inc({ outcome: event.outcome ?? 'unchanged' });
        if (event.conflict?.declared && event.key) this.metrics.conflicts.inc({ kind: event.key.slice(0, event.key.indexOf('/')), reason: event.conflict.reason });
        if (event.key && event.desired) this.reconciler?.jobFinishedHere(event.key, event.desired);
      }
      if (event.type === 'failed') this.metrics.jobs.inc({ outcome: event.final ? 'failed' : 'retried' });
    });
  }

  /**
   * Takes no new job and lets the active ones finish until the work window ends (`workMs`); then drops the service's
   * connections and hands the jobs still active back to the queue within `handBackMs` (another replica takes them at
   * once; with Redis away their locks lapse after job_lock and the stalled check does it). True when none was left.
   */
  private async stopRunner(workMs: number, handBackMs: number): Promise<boolean> {
    const runner = this.runner;
    if (!runner) return true;
    const finished = await within(runner.drain(), workMs);
    if (finished.done) return true;
    const service = this.service;
    const handed = await within(runner.handBack(() => service?.dropConnections() ?? Promise.resolve()), handBackMs);
    this.log.warn({ handedBack: handed.done ? handed.value.length : 0 }, 'active jobs did not finish before the deadline; handing them back to the queue');
    return false;
  }

  private startReconciler(): void {
    const { settings } = this;
    const jobs = this.jobs!;
    this.reconciler = new Reconciler({
      context: {
        fence: () => this.leadership?.token(),
        dir: this.dir,
        environment: this.options.environment,
        env: this.options.env,
        client: this.service!.client,
        enqueuer: jobs.enqueuer,
        applied: jobs.applied,
        memory: jobs.desired,
        lastGood: new LastGoodManifests(),
        manifestCache: new ManifestCache(),
        settings,
        secretWrites: this.secretWrites,
        holds: jobs.holds,
        rebuilds: this.rebuilds,
        conflicts: jobs.flap,
      },
      health: { progressDeadlineMs: settings.progressDeadline ?? PROGRESS_DEADLINE_MS },
      metrics: this.metrics,
      log: this.log,
      maxRetryMs: Math.min(60_000, Math.max(1_000, settings.resync)),
      onPublished: () => this.publish(),
    });
  }

  /** Opens the delivery queue when receivers are configured (its worker runs while this replica leads). */
  private async openNotifications(): Promise<void> {
    const notify = this.options.notify;
    if (!notify || notify.receivers.length === 0) return;
    const log = this.log.child({ component: 'notify' });
    this.notifyQueue = await openNotifyQueue({ ...this.settings, redisPrefix: this.jobs!.prefix }, { log });
    this.notifier = new Notifier({
      receivers: notify.receivers,
      enqueue: (deliveries) => this.notifyQueue!.enqueue(deliveries),
      leading: () => this.leadership?.token() !== undefined,
      log,
      counter: this.metrics.notifications,
    });
    log.info({ receivers: notify.receivers.map((r) => `${r.name} (${r.type})`) }, 'notifications on: the leader sends each event once per receiver');
  }

  /**
   * The notifications' hook point: what the daemon publishes (the status rows, the manifests read, the applied-state
   * watch) goes to the notifier after every change of it; it derives the events and queues them without waiting.
   */
  private publish(): void {
    const reconciler = this.reconciler;
    if (!this.notifier || !reconciler) return;
    this.notifier.published(() => ({
      resources: reconciler.tracker.resources(),
      manifestVersion: reconciler.manifestVersion(),
      appliedState: { lost: this.appliedState.lost, lostAt: this.appliedState.lostAt },
    }));
  }

  /** Starts sending notifications (a new term as leader). */
  private async startNotifyWorker(): Promise<void> {
    const notify = this.options.notify;
    if (!this.notifyQueue || !this.notifier || !notify || this.notifyWorker) return;
    this.notifier.reset();
    const notifier = this.notifier;
    this.notifyWorker = await this.notifyQueue.startWorker(notify.deliver, (receiver, event, result, detail) => notifier.delivered(receiver, event, result, detail));
  }

  /** Stops sending (the term ended): deliveries in flight get a moment, then wait in the queue for the next leader. */
  private async stopNotifyWorker(): Promise<void> {
    const worker = this.notifyWorker;
    this.notifyWorker = undefined;
    await worker?.close(NOTIFY_GRACE_MS);
  }

  private async closeNotifications(): Promise<void> {
    this.notifier?.stop();
    await this.stopNotifyWorker();
    await this.notifyQueue?.close().catch((e: unknown) => this.warn('notifications', e));
    await this.options.notify?.close().catch((e: unknown) => this.warn('notifications', e));
  }

  private async stopReconcilerAndResync(): Promise<void> {
    await this.reconciler?.stop();
    await this.leadership?.transitionsDone();
    await this.endTerm();
  }

  /** The replica's name in the lease, /status and metrics. */
  private replicaId(): string {
    return this.settings.replicaId ?? `${hostname()}:${process.pid}`;
  }

  /** Starts the election loop: the lease holder leads (lead()); a lost lease ends the term at once (standBy()). */
  private startLeadership(): void {
    const lease = this.jobs!.lease(this.replicaId(), this.settings.lease);
    const leadership = new Leadership(lease, {
      onLead: (token) => this.lead(token),
      onStandby: (why) => this.standBy(why),
      onError: (error) => this.warn('lease', error),
    });
    this.leadership = leadership;
    registerLeaseMetrics(this.metrics.registry, () => leadership.status());
    this.log.info({ replica: lease.holder, leaseMs: lease.ttlMs }, 'trying to take the leader lease (the holder watches, plans and enqueues; every replica runs jobs)');
    leadership.start();
  }

  private async releaseLease(): Promise<void> {
    if (!this.leadership) return;
    const released = await this.leadership.stop();
    if (released) this.log.info({ replica: this.replicaId() }, 'leader lease released: a standby takes over');
  }

  /** This replica took the lease: a new term (watcher, first reconcile, resync scheduler) starts in the background. */
  private async lead(token: number): Promise<void> {
    if (this.stopping) return;
    await this.endTerm();
    this.log.info({ replica: this.replicaId(), fencingToken: token }, 'leader lease taken: this replica watches, plans and enqueues');
    await this.startNotifyWorker().catch((e: unknown) => this.warn('notifications', e));
    const abort = new AbortController();
    this.term = { abort, run: this.runTerm(abort.signal) };
  }

  /** This replica lost the lease: it stops watching, planning and enqueueing (the enqueue in progress already refuses). */
  private async standBy(why: string): Promise<void> {
    this.log.warn({ replica: this.replicaId(), why }, 'leader lease lost: this replica stops planning and enqueueing and runs jobs only');
    await this.endTerm();
  }

  /** Ends the current term: no new step starts, then the watcher and the resync scheduler close. */
  private async endTerm(): Promise<void> {
    await this.stopNotifyWorker();
    const term = this.term;
    if (!term) return;
    this.term = undefined;
    term.abort.abort();
    await term.run;
    await this.stopWatcher();
    this.watcher = undefined;
    const resync = this.resync;
    this.resync = undefined;
    await resync?.close().catch((e: unknown) => this.warn('resync', e));
  }

  /** Completions and failures of jobs on any replica: status and the memory of desired states seen in sync. */
  private async followJobEvents(): Promise<void> {
    const reconciler = this.reconciler!;
    this.jobEvents = await this.jobs!.watchEvents(
      {
        completed: (jobId, value) => void reconciler.jobCompleted(jobId, value).catch((e: unknown) => this.warn('drift memory', e)),
        failed: (jobId, reason) => reconciler.jobFailed(jobId, reason),
      },
      'converge-daemon-events',
    );
  }

  private async startWatcher(): Promise<void> {
    const { settings, log } = this;
    const reconciler = this.reconciler!;
    this.watcher = await watchEnvironment({
      dir: this.dir,
      environment: this.options.environment,
      debounceMs: settings.debounce,
      onBurst: (burst) => {
        log.debug({ events: burst.events, sample: burst.sample, quietMs: Date.now() - burst.lastAt }, 'manifest change');
        void reconciler.request('watch');
      },
      onError: (e) => this.warn('watcher', e),
      // The loader reports the loop as a manifest warning (E_SYMLINK_LOOP); the watcher only says it did not follow it.
      onSkippedLink: (link, target) => log.debug({ link, target }, 'symbolic link not followed by the watcher: it leads to a folder already watched'),
    });
    const environment = this.options.environment;
    const inputs = environment ? { vars: environment.vars.map((v) => v.label), overlays: environment.overlays.map((o) => o.label) } : {};
    log.info({ dir: this.dir, ...inputs, watched: this.watcher.watchedCount(), driftPolicy: settings.driftPolicy, resyncMs: settings.resync, debounceMs: settings.debounce }, 'watching the manifest directory');
  }

  private async stopWatcher(): Promise<void> {
    await this.watcher?.close().catch((e: unknown) => this.warn('watcher', e));
  }

  /** Follows building revisions every health_poll, one poll at a time, while this replica leads. */
  private startRevisionPoll(): void {
    const reconciler = this.reconciler!;
    const client = this.service!.client;
    let following = false;
    this.revisionTimer = setInterval(() => {
      // While the service fails, only the reconciles (with their backoff) probe it: polling on top would not back off.
      // Only the leader follows rollouts (a standby's rows are its last term's; its reads would double the leader's).
      if (following || this.stopping || !this.term || this.health.failAt > this.health.okAt) return;
      following = true;
      reconciler.followRevisions(client).catch((e: unknown) => this.warn('revisions', e)).finally(() => (following = false));
    }, this.settings.healthPoll ?? HEALTH_POLL_MS);
    this.revisionTimer.unref();
  }

  private stopRevisionPoll(): void {
    clearInterval(this.revisionTimer);
  }

  /**
   * One term as leader, in the background (a big directory or a slow service must not delay stop()): the watcher,
   * the first reconcile, then the resync scheduler, so the first cycle does not repeat it. Redis may be away right
   * now: the scheduler's start is retried with backoff (file changes still reconcile meanwhile).
   */
  private async runTerm(ended: AbortSignal): Promise<void> {
    const reconciler = this.reconciler!;
    const jobs = this.jobs!;
    try {
      await this.startWatcher();
      if (ended.aborted) return;
      await reconciler.request('startup');
      for (let attempt = 1; !this.stopping && !ended.aborted; attempt++) {
        try {
          this.resync = await jobs.startResync({
            everyMs: this.settings.resync,
            run: async (cycle) => {
              this.cycles.push(cycle);
              if (this.cycles.length > MAX_CYCLES_KEPT) this.cycles.splice(0, this.cycles.length - MAX_CYCLES_KEPT);
              // Never read the directory in the middle of an edit burst: wait until the watcher has reported it.
              await this.watcher?.quiet();
              await reconciler.request('resync', cycle);
            },
          });
          break;
        } catch (error) {
          const waitMs = Math.min(30_000, 1_000 * 2 ** Math.min(attempt - 1, 5));
          this.log.warn({ error: errorLine(error), attempt, retryInMs: waitMs }, 'resync scheduler did not start; retrying');
          await sleep(waitMs, undefined, { signal: AbortSignal.any([this.stopSignal.signal, ended]) }).catch(() => undefined);
        }
      }
    } catch (error) {
      this.warn('resync', error);
    }
  }

  private onRequest(info: RequestInfo): void {
    this.metrics.observeRequest(info);
    const failed = info.status === 'network' || info.status >= 500 || info.status === 401 || info.status === 403;
    if (failed) {
      this.health.failAt = Date.now();
      this.health.failure = `${info.method} ${info.route} answered ${info.status === 'network' ? 'nothing (network error)' : info.status}${requestHint(info.status)}`;
    } else {
      this.health.okAt = Date.now();
    }
  }

  private async readiness(): Promise<ReadinessCheck[]> {
    const { health } = this;
    const checks: ReadinessCheck[] = [];
    checks.push(this.stopping ? { name: 'running', ok: false, detail: 'shutting down' } : { name: 'running', ok: true });
    if (!this.jobs) checks.push({ name: 'redis', ok: false, detail: 'not connected yet' });
    else {
      const ping = await within(this.jobs.ping().then(() => true, (e: unknown) => errorLine(e)), PING_TIMEOUT_MS);
      const silent = `Redis at ${redactRedisUrl(this.settings.redisUrl)} gave no answer to PING within ${PING_TIMEOUT_MS} ms: check that it is up, or set --redis-url or REDIS_URL`;
      checks.push(ping.done && ping.value === true ? { name: 'redis', ok: true } : { name: 'redis', ok: false, detail: ping.done ? String(ping.value) : silent });
    }
    // A standby serves jobs: it is ready without having read the manifests or (until a job) talked to the service.
    const standby = this.leadership !== undefined && this.leadership.token() === undefined;
    if (health.okAt === 0 && health.failAt === 0) checks.push(standby ? { name: 'service', ok: true, detail: 'standby: no request sent yet' } : { name: 'service', ok: false, detail: 'no request answered yet' });
    else if (health.failAt > health.okAt) checks.push({ name: 'service', ok: false, detail: `last request failed: ${health.failure}` });
    else checks.push({ name: 'service', ok: true });
    const manifests = this.reconciler?.manifests;
    const serviceFailed = health.failAt > health.okAt;
    if (manifests?.loaded) checks.push({ name: 'manifests', ok: true });
    // The first reconcile waits for the service: its failing check names the one cause; "not loaded yet" would be a second.
    else if (serviceFailed && !manifests?.error) return checks;
    else if (standby) checks.push({ name: 'manifests', ok: true, detail: 'standby: the leader reads the manifests' });
    else checks.push({ name: 'manifests', ok: false, detail: manifests?.error ?? 'not loaded yet' });
    return checks;
  }

  buildLogLines(deploymentId: string, revisionId: string): Promise<string[] | undefined> {
    const client = this.service?.client;
    if (!client || !this.reconciler) return Promise.resolve(undefined);
    return this.reconciler.buildLogLines(client, deploymentId, revisionId);
  }

  status(): Record<string, unknown> {
    const { settings, reconciler } = this;
    const snapshot = reconciler?.snapshot();
    // One set of rows: the summaries below and the table of `converge status` count the same outcomes.
    const rows = reconciler?.tracker.resources() ?? [];
    const counts: Record<string, Record<string, number>> = {};
    for (const [kind, byState] of reconciler?.tracker.counts() ?? new Map()) {
      counts[kind] = Object.fromEntries(SYNC_STATES.map((s) => [s, byState.get(s) ?? 0]));
    }
    return {
      format_version: '1',
      daemon: {
        version: DAEMON_VERSION,
        dir: this.dir,
        pid: process.pid,
        hostname: hostname(),
        startedAt: this.startedAt,
        stopping: this.stopping,
        service: this.service ? redactUrl(this.service.url) : null,
        embedded: this.options.embedded,
        driftPolicy: settings.driftPolicy,
        resyncMs: settings.resync,
        debounceMs: settings.debounce,
      },
      lease: this.leadership?.status() ?? null,
      appliedState: { lost: this.appliedState.lost, lostAt: this.appliedState.lostAt, losses: this.appliedState.losses, detail: this.appliedState.detail },
      secretsUnknown: reconciler?.tracker.secretsUnknown() ?? [],
      held: reconciler?.tracker.heldKeys() ?? [],
      health: healthCounts(rows),
      sync: syncCounts(rows),
      conflicts: reconciler?.tracker.conflicts() ?? [],
      manifestVersion: snapshot?.lastReconcile?.manifestVersion ?? null,
      manifests: reconciler?.manifests ?? null,
      lastReconcile: snapshot?.lastReconcile ?? null,
      lastSuccessfulReconcileAt: snapshot?.lastSuccessfulReconcileAt ?? null,
      reconciles: snapshot?.reconciles ?? null,
      resync: { everyMs: settings.resync, cyclesRun: [...this.cycles] },
      counts,
      resources: rows,
      failedBuildLogs: reconciler?.failedBuildLogs() ?? {},
      orphans: reconciler?.tracker.orphans() ?? [],
      history: snapshot?.history ?? [],
      plan: snapshot?.plan ?? null,
    };
  }
}
