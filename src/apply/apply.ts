// Apply through the queue: start in-process workers, enqueue one job per change a batch at a time, wait for every job's end (its raw result, folded by src/apply/apply-state.ts).
import { hostname } from 'node:os';
import type { ServiceClient } from '../service/client.js';
import { literalSecretsOf } from '../sync/job-resource.js';
import { jobDataOf, type DecidedJob, type JobDataOptions } from '../jobs/queue/decided-jobs.js';
import { ENQUEUE_BATCH } from '../jobs/queue/enqueuer.js';
import type { QueueLogger } from '../jobs/queue/log.js';
import type { Jobs } from '../jobs/open-jobs.js';
import type { VersionedState } from '../store/resource-folds.js';
import { JobWaiter, type JobEnd } from './wait-jobs.js';
import type { JobRunner, StartRunnerOptions } from '../jobs/runner/worker.js';

export interface RunApplyOptions {
  jobs: Jobs;
  client: ServiceClient;
  env: NodeJS.ProcessEnv;
  changes: readonly DecidedJob[];
  /** Whether deletes take the tracing project too (prune_tracing_projects), the manifests planned from, and the origin (default apply). */
  jobOptions?: Partial<JobDataOptions>;
  /** In-process workers (default true). Other worker processes on the same Redis may take jobs too. */
  startWorkers?: boolean;
  worker?: Partial<Omit<StartRunnerOptions, 'client' | 'env' | 'onError' | 'target'>>;
  log?: QueueLogger;
  onProgress?: (finished: number, total: number, latest: JobEnd) => void;
  /** How often unfinished jobs are looked up directly, in case an event was missed. */
  pollMs?: number;
  /**
   * Aborted on SIGINT or SIGTERM: enqueueing stops, the jobs in flight get `graceMs` to finish, the rest are handed
   * back and withdrawn (nothing stays locked or queued), and the unfinished changes come back `interrupted`.
   */
  signal?: AbortSignal;
  /** How long jobs in flight may finish after `signal` aborts (default 5 s). */
  graceMs?: number;
  /**
   * Called about once a second while changes wait behind a job that is not ours (an interrupted run's, or another
   * process's): each resource, that job, and at most how long its lock still holds (undefined: not running, it is waiting).
   */
  onWaitingBehind?: (waiting: Array<{ key: string; behind: string; lockTtlMs: number | undefined }>) => void;
}

/** Who an apply is in the event log (`by` of its entries): this host and process. */
export function applyRecordedBy(): string {
  return `apply@${hostname()}:${process.pid}`;
}

/** The job lock of converge's workers (job_lock, 30s by default): how long a dead worker's job stays locked at most. */
const DEAD_LOCK_MS = 30_000;
/** How often the in-process worker of apply checks for stalled jobs (src/cli/commands/apply-run.ts passes it). */
export const STALLED_CHECK_MS = 5_000;

/** What an interrupted apply did with its unfinished changes. */
const NOT_ENQUEUED = 'not enqueued: the apply was interrupted first';
const WITHDRAWN = 'not started: withdrawn from the queue when the apply was interrupted';
const HANDED_BACK =
  'interrupted while running: handed back and withdrawn; a write already sent may have landed, and the next apply or plan settles it';
const LEFT = 'interrupted: still queued or running elsewhere';

const GRACE_MS = 5_000;

/**
 * Jobs enqueued after the first ENQUEUE_BATCH: smaller batches, so that building and adding one holds the jobs
 * already running (their replies wait behind it) for a shorter time.
 */
const LATER_ENQUEUE_BATCH = 20;

/** Longest wait for the in-process worker to fill its slots before the rest is enqueued (other workers may take the jobs). */
const RAMP_WAIT_MS = 100;

/** Resolves once `runner` has started `slots` jobs (or `ms` passed); counts from the call. */
function slotsFilled(runner: JobRunner, slots: number): { wait(ms: number): Promise<void>; stop(): void } {
  let started = 0;
  let done: (() => void) | undefined;
  const stop = runner.onJob((event) => {
    if (event.type !== 'started') return;
    started += 1;
    if (started >= slots) done?.();
  });
  return {
    async wait(ms) {
      if (started >= slots) return;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        done = resolve;
        timer = setTimeout(resolve, ms);
      });
      clearTimeout(timer);
    },
    stop,
  };
}

/** Reports, about once a second, the changes that wait behind a job that is not ours, until they stop waiting. */
function watchWaitingBehind(
  waiter: JobWaiter,
  jobs: Jobs,
  report: NonNullable<RunApplyOptions['onWaitingBehind']>,
): () => void {
  let stopped = false;
  const firstSeen = new Map<string, number>();
  /**
   * At most how long a running job that is not ours keeps its lock: BullMQ exposes no lock's expiry, so the bound is
   * counted from when this apply first saw the job: a dead worker's lock lasts at most the job lock, and the stalled
   * check that hands the job on runs every STALLED_CHECK_MS.
   */
  const lockBound = (jobId: string): number => {
    const seen = firstSeen.get(jobId) ?? Date.now();
    firstSeen.set(jobId, seen);
    return Math.max(0, DEAD_LOCK_MS + STALLED_CHECK_MS - (Date.now() - seen));
  };
  void (async () => {
    while (!stopped) {
      const behind = waiter.waitingBehind();
      if (behind.length === 0) return;
      const waiting = await Promise.all(
        behind.map(async (w) => ({
          ...w,
          lockTtlMs: (await jobs.enqueuer.isActive(w.behind).catch(() => false)) ? lockBound(w.behind) : undefined,
        })),
      );
      if (stopped) return;
      report(waiting);
      await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
    }
  })().catch(() => undefined);
  return () => {
    stopped = true;
  };
}

/** After an interrupt: the jobs in flight get `graceMs`; the rest are handed back; every unfinished job is withdrawn. */
async function stopInterrupted(
  waiter: JobWaiter,
  runner: JobRunner | undefined,
  jobs: Jobs,
  graceMs: number,
): Promise<{ handed: Set<string>; withdrawn: Set<string> }> {
  let handed: string[] = [];
  if (runner) {
    const drained = runner.drain().then(() => true);
    const finished = await Promise.race([
      drained,
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), graceMs).unref()),
    ]);
    if (!finished && !waiter.allFinished()) handed = await runner.handBack();
  }
  const withdrawn = await jobs.enqueuer.withdraw(waiter.unfinishedJobs());
  await waiter.settleStored();
  return { handed: new Set(handed), withdrawn: new Set(withdrawn) };
}

/**
 * The failed ends with the hold their job's fold made in Redis (the fold is the one place a failure becomes a hold:
 * src/core/resource-state.ts), read where the state's job is that end's job; the others as they are. Unreadable
 * states leave the ends as the queue told them.
 */
async function holdsOfFailures(jobs: Jobs, ends: JobEnd[]): Promise<JobEnd[]> {
  const failed = ends.filter((end) => end.event.type === 'job-failed');
  if (failed.length === 0) return ends;
  const states = await jobs.folds.read(failed.map((end) => end.key)).catch(() => new Map<string, VersionedState>());
  return ends.map((end) => {
    const state = end.event.type === 'job-failed' ? states.get(end.key)?.state : undefined;
    return state?.hold && state.job?.id === end.jobId ? { ...end, hold: state.hold } : end;
  });
}

/** Enqueues every change, runs workers, and resolves with one job end per change (in the given order). */
export async function runApply(options: RunApplyOptions): Promise<JobEnd[]> {
  const { jobs, signal } = options;
  const total = options.changes.length;
  if (total === 0) return [];
  const waiter = new JobWaiter(jobs.enqueuer, total, options.onProgress);
  const events = await jobs.watchEvents(
    {
      completed: (jobId, value) => waiter.completed(jobId, value),
      failed: (jobId, reason) => waiter.failed(jobId, reason),
    },
    'converge-apply-events',
  );
  let runner: JobRunner | undefined;
  try {
    runner = options.startWorkers !== false ? await startWorkers(options) : undefined;
    await enqueueInBatches(options, waiter, runner);
    await waitForJobs(options, waiter);
    if (!signal?.aborted || waiter.allFinished())
      return holdsOfFailures(
        jobs,
        waiter.partial().map((p) => p.result!),
      );
    const stopped = await stopInterrupted(waiter, runner, jobs, options.graceMs ?? GRACE_MS);
    return interruptedEnds(waiter, stopped, options.changes);
  } finally {
    await events.close();
    // After an interrupt every job of ours is finished, handed back or withdrawn: nothing left to wait for.
    await runner?.close(signal?.aborted === true);
  }
}

/** The in-process workers of this apply. */
async function startWorkers(options: RunApplyOptions): Promise<JobRunner> {
  // Literal secret values (--allow-literal-secrets) reach only these in-process workers, from the resources in memory.
  const resources = options.changes.flatMap((change) => (change.resource ? [change.resource] : []));
  const literalSecrets = literalSecretsOf(resources);
  return options.jobs.startRunner({
    client: options.client,
    env: options.env,
    ...(options.log ? { log: options.log } : {}),
    ...(literalSecrets ? { literalSecrets } : {}),
    recordedBy: applyRecordedBy(),
    ...options.worker,
  });
}

/** Enqueues the changes a batch at a time (until `signal` aborts), each job tracked by the waiter. */
async function enqueueInBatches(options: RunApplyOptions, waiter: JobWaiter, runner?: JobRunner): Promise<void> {
  const { jobs, signal } = options;
  const total = options.changes.length;
  // A batch at a time: the first jobs start while the payloads of the later ones are still being built.
  const fill = runner ? slotsFilled(runner, Math.min(runner.slots, total)) : undefined;
  try {
    for (let from = 0; from < total && !signal?.aborted;) {
      // BullMQ fetches a worker's first jobs one round trip after another and starts none before all its slots
      // are filled: enqueue work between those round trips would leave every slot empty meanwhile.
      if (from === ENQUEUE_BATCH && fill) await fill.wait(RAMP_WAIT_MS);
      const size = from === 0 ? ENQUEUE_BATCH : LATER_ENQUEUE_BATCH;
      const batch = options.changes.slice(from, from + size);
      const at = from;
      const data = batch.map((job) => jobDataOf(job, { origin: 'apply', ...options.jobOptions }));
      await jobs.enqueuer.enqueue(data, (enqueued, i) => waiter.track(at + i, batch[i]!, enqueued, data[i]!.operation));
      from += size;
    }
  } finally {
    fill?.stop();
  }
}

/** Waits for every job's end, or for `signal` to abort; meanwhile reports the changes waiting behind others' jobs. */
async function waitForJobs(options: RunApplyOptions, waiter: JobWaiter): Promise<void> {
  const { jobs, signal } = options;
  const report = options.onWaitingBehind;
  const stopWatching = report ? watchWaitingBehind(waiter, jobs, report) : () => undefined;
  const onAbort = (): void => waiter.abandon();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) waiter.abandon();
  try {
    await waiter.wait(options.pollMs ?? 5_000);
  } finally {
    stopWatching();
    signal?.removeEventListener('abort', onAbort);
  }
}

/** One end per change after an interrupt: a job's result where it finished, else what became of its change. */
function interruptedEnds(
  waiter: JobWaiter,
  stopped: { handed: Set<string>; withdrawn: Set<string> },
  changes: readonly DecidedJob[],
): JobEnd[] {
  return waiter.partial().map((p, i) => {
    if (p.result) return p.result;
    const change = changes[i]!.change;
    const message =
      p.jobId === undefined
        ? NOT_ENQUEUED
        : stopped.handed.has(p.jobId)
          ? HANDED_BACK
          : stopped.withdrawn.has(p.jobId)
            ? WITHDRAWN
            : LEFT;
    const key = `${change.kind}/${change.name}`;
    const event = { type: 'interrupted' as const, message };
    const end: JobEnd = { kind: change.kind, name: change.name, key, jobId: p.jobId ?? '', event };
    return p.operation ? { ...end, operation: p.operation } : end;
  });
}
