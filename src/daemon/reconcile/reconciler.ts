// The outer reconcile: one at a time, bursts coalesced, and one `finally` that owns status, metrics, logs and retries.
import type { Logger } from 'pino';
import { ConvergeError, UsageError } from '../../core/errors.js';
import type { DesiredResource } from '../../core/model.js';
import type { BuildLogReads } from '../../service/build-log-tail.js';
import type { ReconcileJobResult } from '../../store/schema.js';
import type { StoredBuildLog } from '../../store/event-log.js';
import { FailedBuilds } from '../status/failed-builds.js';
import type { DaemonMetrics, ReconcileTrigger } from '../telemetry/metrics.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import { WatchScope, type ChangedPaths, type RunScope } from './watch-scope.js';
import { RunQueue } from './run-queue.js';
import type { CycleContext, EnqueuedJob } from '../cycle/cycle-context.js';
import { namingNone } from '../../core/holds.js';
import { releaseHolds } from './release-holds.js';
import { FindingsLog } from './findings-log.js';
import { followRollouts, holdFailedRevisions } from '../status/rollout.js';
import { StateFolds, type FoldStore, type RecordStore } from '../status/event-recorder.js';
import { healthTransitions } from './transition-log.js';
import { WaveSteps } from './wave-steps.js';
import { ProjectionReader, setResourceGauges } from '../status/projection.js';
import type { ResourceState } from '../../core/resource-state-model.js';
import { ResourceTracker, type HealthSettings } from '../status/resource-tracker.js';
import { healthChanged } from '../status/tracked-change.js';
import { type ReconcileRecord } from '../status/reconcile-record.js';
import { wasNotRun } from '../../jobs/runner/worker.js';
import { RetrySchedule } from './retry-schedule.js';
import { JobMemory } from './job-memory.js';
import { errorLine, observeRun, runRecord } from './run-record.js';
import { ReconcileClock, type TimedReconcile } from '../telemetry/reconcile-steps.js';
import { ReconcileLedger, ReconcilesRecord, type ReconcilesStore, type ReconcilesView } from './reconciles-record.js';

export interface ReconcilerOptions {
  context: Omit<CycleContext, 'onEnqueued'>;
  metrics: DaemonMetrics;
  log: Logger;
  /** First retry delay after a failed reconcile; doubles up to maxRetryMs (src/daemon/reconcile/retry-schedule.ts). */
  retryMs?: number;
  maxRetryMs: number;
  /** Rollout health: the progress deadline (default 30 minutes). */
  health?: HealthSettings;
  /** The resource states (src/store/resource-folds.ts) folded by replica `by`, the event log, the reconciles (src/store/reconcile-record.ts). */
  record?: { store: RecordStore; folds: FoldStore; by: string; reconciles?: ReconcilesStore } | undefined;
}

/**
 * Runs reconciles of the whole directory one at a time. A request while one runs is folded into a single next
 * run (however many arrive), which starts when the current one ends. A failed run schedules a retry with backoff.
 */
export class Reconciler {
  readonly tracker: ResourceTracker;
  private readonly options: ReconcilerOptions;
  private readonly queue = new RunQueue(
    (trigger, cycles, scope) => this.reconcile(trigger, cycles, scope),
    () => !this.stopped && this.leading(),
  );
  private readonly scope: WatchScope; // what a run covers: the changed files (a targeted reconcile) or the whole directory
  private readonly retries: RetrySchedule;
  private stopped = false;
  /** The reconciles run (numbered on from a former leader's), their plan: what the record in Redis is written from. */
  private readonly ledger = new ReconcileLedger();
  private readonly jobs = new JobMemory();
  /** The desired resources of the last reconcile that loaded: whose secret values a shown log line masks. */
  private desired: ReadonlyMap<string, DesiredResource> = new Map();
  /** The build log tail of failed revisions (shown by /status while that revision is its health), and the event log's writer. */
  private readonly failedBuilds: FailedBuilds;
  private readonly recorder: StateFolds | undefined;
  /** The projection in Redis as /status and the gauges read it (absent without an event log: this replica's rows). */
  private readonly projection: ProjectionReader | undefined;
  /** The reconciles' record in Redis (without one, or while Redis fails, /status shows this replica's own). */
  private readonly reconciles: ReconcilesRecord;
  /** The rows the resource gauges were last set from (the projection's rows stay the same array until its version moves). */
  private counted: readonly ResourceState[] | undefined;
  /** What a reconcile found, logged when it appears or changes. */
  private readonly findings: FindingsLog;
  private readonly waveSteps = new WaveSteps(() => void this.request('wave'));
  /** Whether the manifest directory loaded at the last attempt, and why not. */
  manifests: { loaded: boolean; everLoaded: boolean; error: string | null } = {
    loaded: false,
    everLoaded: false,
    error: null,
  };

  constructor(options: ReconcilerOptions) {
    this.options = options;
    this.tracker = new ResourceTracker(options.health);
    this.findings = new FindingsLog(options.log);
    this.scope = new WatchScope(options.log);
    this.retries = new RetrySchedule(options, () => void this.request('retry'));
    this.failedBuilds = new FailedBuilds(
      this.tracker,
      options.log,
      () => ({ desired: this.desired, env: options.context.env }),
      options.record?.store,
    );
    this.tracker.record(healthTransitions(options.log, options.metrics.revisionFailures));
    // A row whose health moved since its last decision joins the next targeted run (src/daemon/reconcile/watch-scope.ts).
    this.tracker.record({
      changed: ({ key, before, after }) =>
        void (healthChanged(before?.health, after.health) && this.scope.touch([key])),
      removed() {},
    });
    this.tracker.record(this.waveSteps); // the next rollout wave at once, when the one before turns healthy
    const local = (): ReconcilesView => ({
      ...this.ledger.snapshot(),
      manifests: this.manifests,
      orphans: this.tracker.orphans(),
    });
    const by = options.record?.by ?? 'daemon';
    this.reconciles = new ReconcilesRecord(options.record?.reconciles, { by, log: options.log, local });
    if (!options.record) return;
    const { store } = options.record,
      parts = { by, log: options.log, leading: () => this.leading(), fence: options.context.fence };
    this.recorder = new StateFolds(
      options.record.folds,
      { ...parts, buildLogs: () => store.buildLogs() },
      this.tracker,
    );
    const order = (): string[] => this.tracker.states().map((state) => state.key);
    const onError = (error: unknown): void =>
      options.log.warn(
        { error: errorLine(error) },
        "could not read the projection from Redis; /status shows this replica's rows",
      );
    this.projection = new ProjectionReader(options.record.folds, {
      written: () => this.recorded(),
      order,
      fallback: () => this.tracker.states(),
      onError,
    });
  }

  /** Every resource's state as /status and the gauges show it: the projection in Redis (src/daemon/status/projection.ts). */
  resourceStates = async (): Promise<ResourceState[]> =>
    this.projection ? this.projection.rows() : this.tracker.states();

  /** Sets the resource gauges from the projection (at each scrape of /metrics), unless they were set from these rows. */
  countResources = async (): Promise<void> => {
    const rows = await this.resourceStates();
    if (rows === this.counted) return;
    this.counted = rows;
    setResourceGauges(this.options.metrics, rows);
  };

  /** Takes up what the last leader recorded (a restart, a failover): reconciles, rows, the failed builds' log lines. */
  restoreRecord = async (): Promise<number> => {
    await this.reconciles.restore(this.ledger);
    return (await this.recorder?.restore(this.failedBuilds)) ?? 0;
  };

  /** Whether /status shows rows Redis has no state of (lost): they are rebuilt by the next reconcile. */
  stateRebuilding = (): boolean => this.tracker.rebuilding() || this.projection?.fromMemory === true;

  /** Resolves when every change so far is written to the event log and the reconcile record. */
  recorded = async (): Promise<void> => void (await Promise.all([this.recorder?.flushed(), this.reconciles.written()]));

  /** What /status shows of the leader's reconciles, its plan, orphans and manifests (the record in Redis). */
  reconcilesView = (): Promise<ReconcilesView> => this.reconciles.view();

  /** Writes the reconcile record while this replica leads (fenced by its token in Redis). */
  private writeRecord(): void {
    const token = this.options.context.fence?.();
    if (!this.options.context.fence || token !== undefined) this.reconciles.write(token);
  }

  /** Redis lost its records: every row is rebuilt from the service by a reconcile now (nothing is written to Redis before). */
  recordLost = (): void => void this.recorder?.lost(() => this.request('retry'));

  /** Asks for a reconcile (of the changed files of a watch burst, else full); resolves with the record of the run that covered it (undefined once stopping). */
  request(trigger: ReconcileTrigger, cycle?: string, changed?: ChangedPaths): Promise<ReconcileRecord | undefined> {
    if (this.stopped || !this.leading()) return Promise.resolve(undefined);
    if (trigger !== 'retry') this.retries.cancel();
    return this.queue.add(trigger, cycle, changed);
  }

  /** Whether this replica may plan and enqueue: it holds the leader lease, or the daemon runs without one. */
  private leading(): boolean {
    const fence = this.options.context.fence;
    return fence === undefined || fence() !== undefined;
  }

  /** The outer step: everything about the run's bookkeeping happens in its one `finally`. */
  private async reconcile(trigger: ReconcileTrigger, cycles: string[], scope: RunScope): Promise<ReconcileRecord> {
    const id = this.ledger.next();
    const started = Date.now();
    const clock = new ReconcileClock({ trigger, id });
    let outcome: ReconcileOutcome | undefined;
    let failure: unknown;
    let followUp = false;
    let record!: ReconcileRecord;
    const finishedSince = this.jobs.finishedSince(started);
    const waveMark = this.waveSteps.started();
    try {
      ({ outcome, followUp } = await clock.within(() =>
        this.scope.run(
          {
            ...this.options.context,
            onEnqueued: (job) => this.jobEnqueued(job),
            finishedSince,
            rollouts: this.tracker,
            steps: clock,
          },
          scope,
        ),
      ));
      await this.recorder?.refresh([...outcome.outcomes.keys()]);
      this.waveSteps.decided(outcome.outcomes, waveMark);
    } catch (error) {
      failure = error;
    } finally {
      const timed = clock.end(outcome ? undefined : (failure ?? 'failed'));
      record = runRecord({ id, trigger, cycles, started, outcome, failure });
      this.finish(record, timed, outcome, failure, cycles);
      this.writeRecord();
      this.scope.folded();
    }
    // Rows that moved during a targeted run and that it did not decide: decided again at once (src/daemon/reconcile/watch-scope.ts).
    if (followUp) void this.request('watch', undefined, { paths: [], overflow: false });
    if (outcome) {
      // What it found is logged once its decisions are in Redis: 10,000 lines must not hold the rows off /status.
      await this.recorded();
      this.findings.diagnostics(outcome);
      this.findings.secretsUnknown(this.tracker.secretsUnknown());
      this.findings.drift.found(outcome);
      this.findings.notWritten(outcome);
      await this.findings.reconciled(record, outcome, this.recorded);
      await holdFailedRevisions(this.tracker, () => this.recorded()).catch((error: unknown) =>
        this.options.log.warn(
          { error: errorLine(error) },
          'could not record the hold of a failed revision; the next reconcile tries again',
        ),
      );
    }
    return record;
  }

  private finish(
    record: ReconcileRecord,
    timed: TimedReconcile,
    outcome: ReconcileOutcome | undefined,
    failure: unknown,
    cycles: string[],
  ): void {
    const { metrics, log } = this.options;
    observeRun(metrics, record, timed, outcome, cycles);
    const lostLease = failure instanceof ConvergeError && failure.code === 'E_NOT_LEADER';
    this.ledger.ended(record, outcome?.plan, !outcome && !lostLease);

    if (outcome) {
      this.retries.failures = 0;
      this.manifests = { loaded: true, everLoaded: true, error: null };
      this.tracker.update(outcome);
      this.desired = outcome.resources;
      for (const key of outcome.released ?? [])
        log.info({ key }, 'conflict released: the desired state changed to a new one; writing again');
      return;
    }
    if (failure instanceof ConvergeError && failure.code === 'E_NOT_LEADER') {
      // The lease was lost mid-reconcile: the new leader reconciles; nothing to retry here.
      log.info(
        { reconcile: record.id, trigger: record.trigger, ms: record.durationMs },
        'reconcile stopped: this replica lost the leader lease',
      );
      return;
    }
    const usage = failure instanceof UsageError;
    this.manifests = {
      loaded: !usage && this.manifests.loaded,
      everLoaded: this.manifests.everLoaded,
      error: usage ? errorLine(failure) : this.manifests.error,
    };
    const delay = this.retries.failed();
    const code = failure instanceof ConvergeError ? failure.code : undefined;
    log.warn(
      {
        reconcile: record.id,
        trigger: record.trigger,
        ms: record.durationMs,
        error: record.error,
        code,
        retryInMs: this.stopped ? undefined : delay,
      },
      'reconcile failed',
    );
  }

  private jobEnqueued(job: EnqueuedJob): void {
    this.jobs.enqueued(job);
    if (!job.inFlight) this.options.metrics.jobsEnqueued.inc({ operation: job.operation });
  }

  /**
   * A job finished in this process's runner (any job, enqueued by this daemon or another process): noted at once for
   * finishedSince (the QueueEvents message that jobCompleted acts on arrives a little later).
   */
  jobFinishedHere(key: string, desired: string): void {
    this.jobs.finishedNow(key, desired);
  }

  /** A job finished on any replica (QueueEvents). Remembers its desired state as in sync; updates status. */
  async jobCompleted(jobId: string, value: unknown): Promise<void> {
    const job = this.jobs.ended(jobId);
    // A job a former leader (or this daemon before its restart) enqueued: its row was taken up from the record.
    if (!job) return void (this.leading() && this.scope.touchKey(this.tracker.completed(jobId, value)));
    // A job not run (a former leader's, superseded, live changed since its decision) did not bring its desired state about.
    const ran = !wasNotRun(value);
    this.scope.touch([job.key]);
    if (ran && job.desired) this.jobs.finishedNow(job.key, job.desired);
    const notRun = (value as ReconcileJobResult | undefined)?.notRun;
    if (notRun !== undefined && notRun !== 'superseded') {
      if (this.leading()) this.retries.jobNotRun(this.options.log, job.key, jobId, value as ReconcileJobResult);
    } else if (ran) this.retries.liveChanges = 0;
    this.tracker.completed(jobId, value, undefined, ran ? job.fingerprint : undefined, job.version);
    if (ran && job.fingerprint) await this.options.context.memory.set(new Map([[job.key, job.fingerprint]]));
  }

  /** A job failed for good on any replica. */
  jobFailed(jobId: string, reason: string): void {
    const job = this.jobs.ended(jobId);
    if (!job) return void (this.leading() && this.tracker.failed(jobId, reason));
    this.scope.touch([job.key]);
    this.tracker.failed(jobId, reason);
    this.options.log.warn(
      { key: job.key, jobId, error: reason },
      'job failed; its result is folded into its state (a refusal for good holds it), the next reconcile decides again',
    );
  }

  /**
   * One poll of the rollouts that build (src/daemon/status/rollout.ts): one read per deployment still building, none for
   * healthy ones; a failed revision holds its desired state. Returns the number of requests sent.
   */
  async followRevisions(
    client: Parameters<typeof followRollouts>[0]['client'] & BuildLogReads,
    limit = 500,
  ): Promise<number> {
    const result = await followRollouts({
      tracker: this.tracker,
      client,
      flushed: () => this.recorded(),
      limit,
      stopped: () => this.stopped,
    });
    for (const f of result.failed) await this.failedBuilds.logTail(client, f);
    // A failure this replica did not see happen (apply's, a former leader's): its log lines are read once too.
    return result.requests + (await this.failedBuilds.fetchMissing(client, await this.resourceStates()));
  }

  /** The build log lines of a failed revision, for a notification (FailedBuilds.lines). */
  buildLogLines(client: BuildLogReads, deploymentId: string, revisionId: string): Promise<string[] | undefined> {
    return this.failedBuilds.lines(client, deploymentId, revisionId);
  }

  /** For /status: the build log tail of each of `rows` whose latest revision failed (kept in Redis). */
  failedBuildLogs(rows: readonly ResourceState[]): Promise<Record<string, StoredBuildLog>> {
    return this.failedBuilds.shown(rows);
  }

  /** Of `names` (`Kind/name` or `name`), those the last plan found in no manifest (a typo, or a resource not declared). */
  undeclared(names: readonly string[]): string[] {
    const declared = this.tracker
      .resources()
      .filter((row) => row.action !== 'delete')
      .map((row) => row.key);
    return namingNone(names, declared);
  }

  /**
   * Releases the holds of the named resources (true: every one) in Redis and in status, so the next reconcile writes
   * them again: the operator's `converge reconcile --retry-failed [NAME...]` (src/daemon/reconcile/release-holds.ts).
   */
  releaseHolds(
    request: true | readonly string[],
    beforeRelease?: (rebuild: readonly string[]) => Promise<void>,
  ): Promise<{ released: string[]; unmatched: string[]; rebuild: string[] }> {
    const touch = (keys: readonly string[]): void => this.scope.touch(keys);
    const deps = { context: this.options.context, tracker: this.tracker, log: this.options.log, touch };
    return releaseHolds(deps, request, beforeRelease);
  }

  /** Refuses new requests, cancels a pending retry, waits for the run in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.retries.stop();
    await this.queue.idle();
  }

  /** The manifests the last reconcile that read them read (git commit or content hash). */
  manifestVersion(): ReconcileRecord['manifestVersion'] {
    return this.ledger.manifestVersion();
  }

  /** This replica's own reconciles (the record in Redis is written from them: reconcilesView reads it). */
  snapshot(): ReturnType<ReconcileLedger['snapshot']> {
    return this.ledger.snapshot();
  }
}
