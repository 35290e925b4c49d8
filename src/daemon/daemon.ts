// The daemon: status server, job runner, watcher, resync scheduler and reconciler, started in steps and stopped in reverse.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { RequestInfo } from '../service/client.js';
import type { JobEventsFeed } from '../jobs/queue/job-events.js';
import { openJobs, type Jobs } from '../jobs/open-jobs.js';
import type { JobRunner } from '../jobs/runner/worker.js';
import { serverTokens, startStatusServer, type ReadinessCheck, type StatusServer } from './server/status-server.js';
import { createMetrics, type DaemonMetrics } from './telemetry/metrics.js';
import { OperatorRequests } from './cycle/operator-requests.js';
import type { Reconciler } from './reconcile/reconciler.js';
import { daemonReconciler } from './daemon-reconciler.js';
import { startDaemonRunner } from './daemon-runner.js';
import { startRevisionPoll } from './lifecycle/revision-poll.js';
import type { Leadership } from '../leader/leadership.js';
import { HEALTH_POLL_MS, type DaemonOptions, type DaemonService, type DaemonSettings } from './daemon-options.js';
import { statusDocument } from './server/daemon-status.js';
import { noteRequest, readinessChecks, type RequestHealth } from './lifecycle/readiness.js';
import { stopInOrder } from './lifecycle/stop-steps.js';
import { pruneRechecks } from './reconcile/prune-recheck.js';
import { ManualReconciles } from './server/manual-reconcile.js';
import type { LeaderTerms } from './lifecycle/leader-term.js';
import { electionOf } from './lifecycle/election.js';
import { DaemonNotifications } from '../notify/daemon-notifications.js';
import { AppliedStateWatch } from './lifecycle/applied-state-watch.js';
import { ClockWatch } from './lifecycle/clock-watch.js';
import { throttledWarn } from './background-warn.js';
import { readAppliedStateDocument } from './server/applied-state-route.js';
import { WindowGate } from './cycle/window-gate.js';

export interface Daemon {
  /** http://host:port of the status server. */
  statusUrl: string;
  metrics: DaemonMetrics;
  status(): Promise<Record<string, unknown>>;
  /** A failed revision's last build log lines (masked), for notifications; undefined before the service is open. */
  buildLogLines(deploymentId: string, revisionId: string): Promise<string[] | undefined>;
  /** Stops watching and taking jobs, finishes or hands back active jobs within shutdownTimeout, closes everything. */
  stop(reason: string): Promise<void>;
}

/** Starts the daemon. Fails (one line) when Redis is unreachable or the status port cannot be bound. */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const daemon = new ConvergeDaemon(options);
  await daemon.start();
  return daemon;
}

/**
 * The daemon's parts, each started by a step of its own (status server, jobs and service, job runner, reconciler,
 * job events, watcher, revision poll, resync scheduler) and stopped in the reverse order. The watcher and the resync
 * scheduler run in the leader's term (src/daemon/lifecycle/leader-term.ts); the stop's closing steps are src/daemon/lifecycle/stop-steps.ts.
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
  private readonly health: RequestHealth = { okAt: 0, failAt: 0, failure: '' };
  private readonly stopSignal = new AbortController();
  private stopping = false;
  private stopped: Promise<void> | undefined;
  private server: StatusServer | undefined;
  private jobs: Jobs | undefined;
  private service: DaemonService | undefined;
  private runner: JobRunner | undefined;
  private reconciler: Reconciler | undefined;
  private jobEvents: JobEventsFeed | undefined;
  private revisionTimer: NodeJS.Timeout | undefined;
  /** The leader lease's election loop: this replica leads (watches, plans, enqueues) while it holds the lease. */
  private leadership: Leadership | undefined;
  /** The terms as leader (watcher, first reconcile, resync scheduler), one at a time while this replica leads. */
  private terms: LeaderTerms | undefined;
  /**
   * What operators asked through POST /reconcile: secrets held as SecretsUnknown to write (writeSecrets), released
   * holds of failed revisions to rebuild (retryFailed), pending deletes confirmed (confirmDelete; prune_mode confirm).
   */
  private readonly secretWrites = new OperatorRequests();
  private readonly rebuilds = new OperatorRequests();
  private readonly deleteConfirms = new OperatorRequests();
  private readonly windows: WindowGate; // change windows (src/daemon/cycle/window-gate.ts): a timer reconciles at a window's end
  /** Manual reconciles (POST /reconcile, /webhook): one at a time, a burst coalesced into at most two. */
  private readonly manual = new ManualReconciles(() => {
    const { stopping, reconciler, leadership, secretWrites, rebuilds, deleteConfirms, windows, log } = this;
    const kept = { confirmations: this.jobs?.applied, requests: this.jobs?.requests, replica: this.replicaId() };
    const overflow = (): void => this.metrics.recordOverflow.inc({ what: 'requests' });
    return {
      stopping,
      reconciler,
      leadership,
      secretWrites,
      rebuilds,
      deleteConfirms,
      windows,
      ...kept,
      overflow,
      log,
    };
  });
  /** Whether Redis lost converge's records while the daemon ran (the applied-state epoch). */
  private readonly appliedState: AppliedStateWatch;
  /** Notifications: the queue of deliveries, its worker (while this replica leads), and the hook on status. */
  private readonly notifications: DaemonNotifications;
  /** This replica's wall clock against Redis' (converge_clock_skew_seconds; a warning beyond the bound). */
  private readonly clock: ClockWatch;

  constructor(options: DaemonOptions) {
    this.options = options;
    this.settings = options.settings;
    this.log = options.log;
    this.dir = resolve(options.dir);
    this.warn = throttledWarn(options.log);
    this.windows = new WindowGate(
      options.settings.windows ?? [],
      pruneRechecks(() => void this.reconciler?.request('window')),
    );
    this.notifications = new DaemonNotifications(options.notify, this.warn);
    this.clock = new ClockWatch({
      log: options.log,
      gauge: this.metrics.clockSkew,
      read: () => this.jobs!.clockSkew(),
      stopping: () => this.stopping,
    });
    this.appliedState = new AppliedStateWatch({
      log: options.log,
      stopping: () => this.stopping,
      onLost: () => {
        this.metrics.appliedStateLost.set(1);
        this.reconciler?.recordLost();
        this.notifyLost();
      },
    });
  }

  get statusUrl(): string {
    return this.server!.url;
  }

  async start(): Promise<void> {
    await this.startStatusServer();
    try {
      await this.openJobsAndService();
      await this.appliedState.check(this.jobs!);
      this.clock.start();
      await this.openNotifications();
      await this.startRunner();
      this.startReconciler();
      await this.followJobEvents();
      this.startRevisionPoll();
      this.appliedState.start(this.jobs!);
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

  /** The start steps in reverse, each bounded (src/daemon/lifecycle/stop-steps.ts): nothing holds the process after. */
  private async shutdown(): Promise<void> {
    this.stopping = true;
    this.stopSignal.abort();
    const { runner, jobEvents, jobs, service, server } = this;
    await stopInOrder(
      { log: this.log, warn: this.warn },
      {
        shutdownTimeout: this.settings.shutdownTimeout,
        releaseLease: () => this.releaseLease(),
        stopTimers: () => {
          clearInterval(this.revisionTimer);
          this.appliedState.stop();
          this.clock.stop();
        },
        stopWatcher: () => this.terms?.stopWatcher() ?? Promise.resolve(),
        stopReconcile: () => this.stopReconcilerAndResync(),
        closeNotifications: () => this.notifications.close(),
        runner,
        jobEvents,
        jobs,
        service,
        server,
      },
    );
  }

  private async startStatusServer(): Promise<void> {
    this.server = await startStatusServer({
      host: this.settings.httpHost,
      port: this.settings.httpPort,
      listening: this.options.listening,
      handlers: {
        readiness: () => this.readiness(),
        status: () => this.status(),
        metrics: async () => (await this.reconciler?.countResources(), this.metrics.render()),
        history: (key, limit) => (this.jobs ? this.jobs.record.history(key, { limit }) : Promise.resolve([])),
        reconcile: (request) => this.manual.request(request),
        appliedState: () => (this.jobs ? readAppliedStateDocument(this.jobs) : Promise.resolve(undefined)),
      },
      onError: (error, path) => this.warn(`http ${path}`, error),
      ...serverTokens(this.options.env),
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

  private async startRunner(): Promise<void> {
    const { jobs, settings, log, metrics } = this;
    const parts = { jobs: jobs!, client: this.service!.client, env: this.options.env, settings, log, metrics };
    const onFinishedHere = (key: string, desired: string): void => this.reconciler?.jobFinishedHere(key, desired);
    this.runner = await startDaemonRunner({ ...parts, recordedBy: this.replicaId(), onFinishedHere });
  }

  private startReconciler(): void {
    const { options, settings, dir, windows, metrics, log, secretWrites, rebuilds, deleteConfirms } = this;
    this.reconciler = daemonReconciler({
      options,
      settings,
      dir,
      windows,
      metrics,
      log,
      jobs: this.jobs!,
      client: this.service!.client,
      requests: { secretWrites, rebuilds, deleteConfirms },
      fence: () => this.leadership?.token(),
      requestPrune: () => void this.reconciler?.request('prune'),
      replicaId: this.replicaId(),
    });
  }

  /** Opens the delivery queue when receivers are configured (its worker runs while this replica leads). */
  private async openNotifications(): Promise<void> {
    await this.notifications.open({
      settings: this.settings,
      prefix: this.jobs!.prefix,
      log: this.log,
      source: this.jobs!.record,
      counter: this.metrics.notifications,
    });
  }

  /** Redis lost converge's records: applied_state_lost (the other events come from the event log). */
  private notifyLost(): void {
    if (this.appliedState.current.lost)
      this.notifications.appliedStateLost(this.appliedState.current.lostAt, this.reconciler?.manifestVersion());
  }

  private async stopReconcilerAndResync(): Promise<void> {
    await this.reconciler?.stop();
    await this.reconciler?.recorded();
    await this.leadership?.transitionsDone();
    await this.endTerm();
  }

  /** The replica's name in the lease, /status and metrics. */
  private replicaId(): string {
    return this.settings.replicaId ?? `${hostname()}:${process.pid}`;
  }

  /** Starts the election loop: the lease holder leads (lead()); a lost lease ends the term at once (standBy()). */
  private startLeadership(): void {
    const { dir, settings, log, warn, metrics } = this;
    const events = {
      onLead: (token: number) => this.lead(token),
      onStandby: (why: string) => this.standBy(why),
      onError: (error: unknown) => this.warn('lease', error),
    };
    const stopping = (): boolean => this.stopping;
    const parts = { dir, environment: this.options.environment, settings, log, warn, metrics, stopping, events };
    const running = { reconciler: this.reconciler!, jobs: this.jobs!, stopSignal: this.stopSignal.signal };
    const election = electionOf({ ...parts, ...running, replicaId: this.replicaId() });
    this.leadership = election.leadership;
    this.terms = election.terms;
    election.leadership.start();
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
    this.log.info(
      { replica: this.replicaId(), fencingToken: token },
      'leader lease taken: this replica watches, plans and enqueues',
    );
    // Every row as the last leader recorded it (its last job, appliedFrom, hold, a failed build's log lines) before the first reconcile.
    await this.reconciler!.restoreRecord().catch((e: unknown) => this.warn('event log', e));
    await this.notifications.startWorker().catch((e: unknown) => this.warn('notifications', e));
    this.notifyLost();
    this.terms?.begin();
    // What operators asked of a former leader that it did not serve (POST /reconcile is kept in Redis until served).
    await this.manual.takeUp().catch((e: unknown) => this.warn('operator requests', e));
  }

  /** This replica lost the lease: it stops watching, planning and enqueueing (the enqueue in progress already refuses). */
  private async standBy(why: string): Promise<void> {
    this.log.warn(
      { replica: this.replicaId(), why },
      'leader lease lost: this replica stops planning and enqueueing and runs jobs only',
    );
    await this.endTerm();
  }

  /** Ends the current term: notifications stop being sent, then the term's parts close (src/daemon/lifecycle/leader-term.ts). */
  private async endTerm(): Promise<void> {
    await this.notifications.stopWorker();
    await this.terms?.end();
  }

  /** Completions and failures of jobs on any replica: status and the memory of desired states seen in sync. */
  private async followJobEvents(): Promise<void> {
    const reconciler = this.reconciler!;
    const handlers = {
      completed: (jobId: string, value: unknown) =>
        void reconciler.jobCompleted(jobId, value).catch((e: unknown) => this.warn('drift memory', e)),
      failed: (jobId: string, reason: string) => reconciler.jobFailed(jobId, reason),
    };
    this.jobEvents = await this.jobs!.watchEvents(handlers, 'converge-daemon-events');
  }

  /** Follows building revisions every health_poll, one poll at a time, while this replica leads. */
  private startRevisionPoll(): void {
    this.revisionTimer = startRevisionPoll({
      reconciler: this.reconciler!,
      client: this.service!.client,
      health: this.health,
      leading: () => this.terms?.active === true,
      stopping: () => this.stopping,
      intervalMs: this.settings.healthPoll ?? HEALTH_POLL_MS,
      warn: this.warn,
    });
  }

  private onRequest(info: RequestInfo): void {
    this.metrics.observeRequest(info);
    noteRequest(this.health, info);
  }

  private readiness(): Promise<ReadinessCheck[]> {
    const { stopping, jobs, health } = this;
    const standby = this.leadership !== undefined && this.leadership.token() === undefined;
    const manifests = this.reconciler?.manifests;
    return readinessChecks({ stopping, jobs, redisUrl: this.settings.redisUrl, standby, health, manifests });
  }

  buildLogLines(deploymentId: string, revisionId: string): Promise<string[] | undefined> {
    const client = this.service?.client;
    return client && this.reconciler
      ? this.reconciler.buildLogLines(client, deploymentId, revisionId)
      : Promise.resolve(undefined);
  }

  status(): Promise<Record<string, unknown>> {
    return statusDocument({
      dir: this.dir,
      startedAt: this.startedAt,
      stopping: this.stopping,
      serviceUrl: this.service?.url,
      embedded: this.options.embedded,
      reconcileEndpoint: Boolean(this.options.env.CONVERGE_WEBHOOK_TOKEN),
      settings: this.settings,
      lease: this.leadership?.status() ?? null,
      appliedState: this.appliedState.current,
      reconciler: this.reconciler,
      requests: this.jobs?.requests,
      cycles: this.terms?.cycles ?? [],
      window: async () =>
        this.windows.configured
          ? this.windows.verdict((await this.jobs?.now().catch(() => undefined)) ?? Date.now())
          : undefined,
    });
  }
}
