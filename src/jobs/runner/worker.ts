// The job runner (BullMQ workers): a worker on the shared queue running the processor (processor.ts), its job events, and handing jobs back.
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { DEFAULT_FLAP } from '../../core/flap-guard.js';
import { newestDesiredKey } from '../queue/enqueuer.js';
import { QUEUE_NAME, type JobSettings } from '../queue/jobs.js';
import { SILENT_LOGGER, throttledErrors, type ErrorReporter, type QueueLogger } from '../queue/log.js';
import type { ServiceClient } from '../../service/client.js';
import { AppliedStateStore } from '../../store/applied-state.js';
import { FlapStore } from '../../store/flap-store.js';
import { checkPrefix, closeRedis, connectProducer, connectWorker, type RedisSettings } from '../../store/redis.js';
import type { ReconcileJobResult } from '../../store/schema.js';
import { claimPrefix, type ServiceTarget } from '../../store/target.js';
import type { LiteralSecrets } from '../../sync/job-resource.js';
import { hostname } from 'node:os';
import { createProcessor, jitteredBackoff } from './processor.js';
import { ResourceFolds } from '../../store/resource-folds.js';
import { leaseKey } from '../../leader/lease.js';
import { redisNow } from '../../store/clock.js';
import { staleReason, wasNotRun } from './stale-job.js';

export { SILENT_LOGGER, type QueueLogger } from '../queue/log.js';
export { wasNotRun } from './stale-job.js';

/** Worker settings (src/cli/settings.ts Settings satisfies it). */
export interface WorkerSettings extends RedisSettings, JobSettings {
  /** Jobs in flight in this process. */
  concurrency: number;
  /** Jobs started per second across every worker of the queue; 0: no limit. */
  globalRate: number;
  /** The flap guard's window in ms (flap_window; default 30m). */
  flapWindow?: number;
  /** Heals of one desired state allowed within the window (flap_limit; default 3). */
  flapLimit?: number;
  /** The longest retry delay of a job this worker runs, in ms (max_backoff; default and most 5 minutes). */
  maxBackoff?: number;
}

export interface StartRunnerOptions {
  client: ServiceClient;
  env: NodeJS.ProcessEnv;
  log?: QueueLogger;
  /** Told of the worker's and its connections' error events (default: logged at warn, throttled by the caller). */
  onError?: ErrorReporter;
  /** Shown on every job this worker processes. */
  name?: string;
  /** Lock and stall-check tuning (tests use short ones to recover killed workers quickly). */
  lockDuration?: number;
  stalledInterval?: number;
  /** Backoff randomness (tests). */
  random?: () => number;
  /** Literal secret values the process read from the manifests (in-process apply only; see LiteralSecrets). */
  literalSecrets?: LiteralSecrets;
  /** The service the client writes to: the Redis prefix must not serve another (see target.ts). */
  target?: ServiceTarget;
  /** Log every write at info (default true; `apply` prints the writes of its own jobs itself). */
  logWrites?: boolean;
  /** Who records this runner's job results in the event log (default `worker@HOST:PID`). */
  recordedBy?: string;
}

/** What a runner tells of the jobs it runs (the daemon's metrics, apply's start-up). */
export type RunnerEvent =
  | { type: 'started'; jobId: string }
  /**
   * The job's processor returned: its desired state `desired` of `key` is brought about. Told before BullMQ records
   * the completion in Redis (which clears the deduplication id an enqueue looks up), so nothing in this process sees
   * the job neither in flight nor done. A job not run tells none.
   */
  | { type: 'done'; jobId: string; key: string; desired: string }
  /** BullMQ recorded the job completed; key: the job data's resource key (none for a job not run). */
  | {
      type: 'completed';
      jobId: string;
      outcome: ReconcileJobResult['outcome'] | undefined;
      key?: string;
      conflict?: ReconcileJobResult['conflict'];
    }
  /** `final`: no attempt is left (or the failure is not worth one); otherwise the job is retried. */
  | { type: 'failed'; jobId: string; final: boolean };

export interface JobRunner {
  /** Jobs this runner runs at once (its concurrency). */
  slots: number;
  /** The applied-state store the jobs of this runner write to (its own connection). */
  store: AppliedStateStore;
  /** Calls `listener` for each job event of this runner; returns the function that stops it. */
  onJob(listener: (event: RunnerEvent) => void): () => void;
  /** Takes no new job; resolves once the active ones have finished. */
  drain(): Promise<void>;
  /** Resolves once the runner has closed (close() was called, or BullMQ closed its worker). */
  closed: Promise<void>;
  /** Stops taking jobs, waits for the active ones (or hands them back when `force`), closes Redis. */
  close(force?: boolean): Promise<void>;
  /**
   * Stops taking jobs and moves the active ones back to waiting, releasing their locks at once, so another replica
   * (or the next apply) takes them now rather than after their lock lapses (an interrupted apply, a daemon's stop).
   * Returns their ids. `dropInFlight` (the daemon's stop: destroy the service's connections) runs first, so no job is
   * handed to another replica while its request may still be on its way from here; the failures it causes are not
   * attempts (the jobs go back to waiting). A processor still running keeps running until the process ends; its
   * result is then refused by BullMQ (its lock is gone), and a write it already sent is settled by the next attempt
   * from live state and its pending record, without writing again.
   */
  handBack(dropInFlight?: () => Promise<void>): Promise<string[]>;
  /** Drops its Redis connections at once (a stop whose close did not end in time: Redis frozen). */
  disconnect(): void;
}

/** Limiter of the worker: the global rate when set; otherwise one so high it only makes 429 pauses queue-wide. */
export function limiterFor(globalRate: number): { max: number; duration: number } {
  return globalRate > 0 ? { max: globalRate, duration: 1_000 } : { max: 1_000_000_000, duration: 1_000 };
}

/** Whether a failed attempt was the job's last. */
function isFinalFailure(job: Job | undefined, error: Error | undefined): boolean {
  return error?.name === 'UnrecoverableError' || !job || job.attemptsMade >= (job.opts.attempts ?? 1);
}

/** A runner's two Redis connections: the producer (applied state, flap records, the stale check) and the worker's. */
interface RunnerConnections {
  producer: Redis;
  connection: Redis;
}

/** Connects the producer, claims the prefix for the service written to (when given), then the worker's connection; a failure closes what was opened. */
async function connectRunner(
  settings: WorkerSettings,
  options: StartRunnerOptions,
  onError: ErrorReporter,
): Promise<RunnerConnections> {
  // Applied-state commands sit between a job's steps (read, mark pending, PATCH, record): sent at once, not batched. In the
  // apply benchmark (20 jobs in flight) batching made each of those round trips about 1 ms longer.
  const producer: Redis = await connectProducer(settings, {
    name: 'converge-worker-state',
    autoPipelining: false,
    onError: (e) => onError('worker state connection', e),
  });
  try {
    if (options.target) await claimPrefix(producer, settings.redisPrefix, options.target);
    const connection = await connectWorker(settings, { onError: (e) => onError('worker connection', e) });
    return { producer, connection };
  } catch (error) {
    await closeRedis(producer);
    throw error;
  }
}

/** What the processor of a runner's jobs uses of the runner: its log, its producer connection and store, the queue's pause. */
interface RunnerParts {
  log: QueueLogger;
  producer: Redis;
  store: AppliedStateStore;
  /** Pauses the whole queue for `ms` (the runner's worker, once it exists). */
  rateLimit: (ms: number) => Promise<void>;
}

/** The processor of a runner's jobs: the flap guard on the prefix, the stale check against the prefix's counters. */
function runnerProcessor(
  settings: WorkerSettings,
  options: StartRunnerOptions,
  parts: RunnerParts,
): (job: Job) => Promise<ReconcileJobResult> {
  const { log, producer, store, rateLimit } = parts;
  return createProcessor({
    client: options.client,
    store,
    env: options.env,
    log,
    rateLimit,
    ...(options.literalSecrets ? { literalSecrets: options.literalSecrets } : {}),
    ...(options.logWrites === false ? { logWrites: false } : {}),
    flap: {
      store: new FlapStore(producer, settings.redisPrefix),
      settings: {
        windowMs: settings.flapWindow ?? DEFAULT_FLAP.windowMs,
        limit: settings.flapLimit ?? DEFAULT_FLAP.limit,
      },
      now: () => redisNow(producer),
    },
    stale: (data) => staleReason(producer, newestDesiredKey(settings.redisPrefix), settings.redisPrefix, data),
    record: {
      folds: new ResourceFolds(producer, settings.redisPrefix, leaseKey(settings.redisPrefix)),
      by: options.recordedBy ?? `worker@${hostname()}:${process.pid}`,
    },
  });
}

/** The jobs a runner is running, each with the token that holds its lock: what a hand-back moves back to waiting. */
interface ActiveJobs {
  /** The worker's processor: runs `job` through the runner's processor while it is tracked. */
  run: (job: Job, token?: string) => Promise<ReconcileJobResult>;
  /** JobRunner.handBack of the runner whose worker is `worker`. */
  handBack: (worker: Worker<unknown, ReconcileJobResult>, dropInFlight?: () => Promise<void>) => Promise<string[]>;
}

function trackActiveJobs(processor: (job: Job) => Promise<ReconcileJobResult>): ActiveJobs {
  // The jobs running now, with the token that holds each one's lock (for handBack).
  const active = new Map<string, { job: Job; token: string | undefined }>();
  // While active jobs are handed back: settles when the hand-back ended, with the ids it moved back to waiting.
  let handingBack: Promise<ReadonlySet<string>> | undefined;
  const run = async (job: Job, token?: string): Promise<ReconcileJobResult> => {
    active.set(job.id!, { job, token });
    try {
      return await processor(job);
    } catch (error) {
      // A job being handed back failed because its request was dropped: once it is back in waiting it is no longer
      // this worker's (BullMQ would refuse its failure, the lock is gone), so its outcome is left unsettled.
      const handed = handingBack ? await handingBack : undefined;
      if (handed?.has(job.id!)) await new Promise<never>(() => undefined);
      throw error;
    } finally {
      active.delete(job.id!);
    }
  };
  const handBack = async (
    worker: Worker<unknown, ReconcileJobResult>,
    dropInFlight?: () => Promise<void>,
  ): Promise<string[]> => {
    const handed = new Set<string>();
    let ended!: (ids: ReadonlySet<string>) => void;
    handingBack = new Promise((resolve) => (ended = resolve));
    try {
      await worker.pause(true);
      const jobs = [...active];
      await dropInFlight?.();
      for (const [jobId, { job, token }] of jobs) {
        try {
          await job.moveToWait(token);
          handed.add(jobId);
        } catch {
          // Finished meanwhile, or its lock is gone: nothing to hand back.
        }
      }
      return [...handed];
    } finally {
      ended(handed);
    }
  };
  return { run, handBack };
}

/** The BullMQ worker of a runner: the queue of its prefix, its concurrency and limiter, the jobs' backoff, the lock tuning. */
function newWorker(
  settings: WorkerSettings,
  options: StartRunnerOptions,
  connection: Redis,
  run: ActiveJobs['run'],
): Worker<unknown, ReconcileJobResult> {
  return new Worker<unknown, ReconcileJobResult>(QUEUE_NAME, run, {
    connection,
    prefix: settings.redisPrefix,
    concurrency: Math.max(1, settings.concurrency),
    limiter: limiterFor(settings.globalRate),
    settings: { backoffStrategy: jitteredBackoff(options.random, settings.maxBackoff) },
    maxStalledCount: 2,
    ...(options.name ? { name: options.name } : {}),
    ...(options.lockDuration ? { lockDuration: options.lockDuration } : {}),
    ...(options.stalledInterval ? { stalledInterval: options.stalledInterval } : {}),
  });
}

/** The event of a completed job. */
function completedEvent(job: Job, result: unknown): RunnerEvent {
  const data = job.data as { key?: unknown } | undefined;
  const event: RunnerEvent = {
    type: 'completed',
    jobId: job.id!,
    outcome: (result as ReconcileJobResult | undefined)?.outcome,
  };
  if (!wasNotRun(result) && typeof data?.key === 'string') event.key = data.key;
  const conflict = (result as ReconcileJobResult | undefined)?.conflict;
  if (conflict) event.conflict = conflict;
  return event;
}

/** The event of a job whose processor brought its desired state about (none for a job not run, or without one). */
function doneEvent(job: Job, result: ReconcileJobResult): RunnerEvent | undefined {
  const data = job.data as { key?: unknown; desired?: unknown } | undefined;
  if (wasNotRun(result) || typeof data?.key !== 'string' || typeof data.desired !== 'string') return undefined;
  return { type: 'done', jobId: job.id!, key: data.key, desired: data.desired };
}

/** The runner's listeners, and the function that tells them an event. */
function listenersOfJobs(): { tell: (event: RunnerEvent) => void; onJob: JobRunner['onJob'] } {
  const listeners = new Set<(event: RunnerEvent) => void>();
  return {
    tell: (event) => {
      for (const listener of listeners) listener(event);
    },
    onJob: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** Tells each job the worker starts, completes or fails with `tell`. */
function tellJobEvents(worker: Worker<unknown, ReconcileJobResult>, tell: (event: RunnerEvent) => void): void {
  worker.on('active', (job) => tell({ type: 'started', jobId: job.id! }));
  worker.on('completed', (job, result) => tell(completedEvent(job, result)));
  worker.on('failed', (job, error) =>
    tell({ type: 'failed', jobId: job?.id ?? '', final: isFinalFailure(job, error) }),
  );
}

/** Starts a runner on the shared queue. Fails with E_REDIS (one line) when Redis is unreachable. */
export async function startJobRunner(settings: WorkerSettings, options: StartRunnerOptions): Promise<JobRunner> {
  const log = options.log ?? SILENT_LOGGER;
  const onError = options.onError ?? throttledErrors(log);
  checkPrefix(settings.redisPrefix);
  const { producer, connection } = await connectRunner(settings, options, onError);
  const store = new AppliedStateStore(producer, settings.redisPrefix);
  let worker: Worker<unknown, ReconcileJobResult> | undefined;
  const rateLimit = async (ms: number): Promise<void> => {
    await worker!.rateLimit(ms);
  };
  const { tell, onJob } = listenersOfJobs();
  const processor = runnerProcessor(settings, options, { log, producer, store, rateLimit });
  const jobs = trackActiveJobs(async (job) => {
    const result = await processor(job);
    const done = doneEvent(job, result);
    if (done) tell(done);
    return result;
  });
  worker = newWorker(settings, options, connection, jobs.run);
  const running = worker;
  running.on('error', (error) => onError('worker', error));
  tellJobEvents(running, tell);
  const closed = new Promise<void>((resolve) => running.once('closed', () => resolve()));
  // The client's one-time notices (a service without an endpoint beyond the spec, and the fallback chosen) go to this runner's log.
  const stopNotices = options.client.onNotice((message) => log.info({}, message));
  void closed.then(stopNotices);
  try {
    await running.waitUntilReady();
  } catch (error) {
    stopNotices();
    await running.close(true).catch(() => undefined);
    await closeRedis(connection, producer);
    throw error;
  }
  return {
    slots: Math.max(1, settings.concurrency),
    store,
    closed,
    onJob,
    async drain() {
      await running.pause(false);
    },
    async close(force = false) {
      await running.close(force);
      await closeRedis(connection, producer);
    },
    handBack: (dropInFlight) => jobs.handBack(running, dropInFlight),
    disconnect() {
      void running.close(true).catch(() => undefined);
      connection.disconnect();
      producer.disconnect();
    },
  };
}
