// The job runner (BullMQ workers): runs reconcile jobs, classify failures once (retry with jittered backoff, pause on 429, fail at once).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { BlockedError, JobInputError } from '../core/errors.js';
import type { ServiceClient } from '../service/client.js';
import { classifyFailure } from '../service/errors.js';
import { backoffDelay } from '../service/backoff.js';
import { recordWrites, sendingOnce, type WriteRecord } from '../service/call-scope.js';
import { fieldLine } from '../plan/render/text.js';
import { AppliedStateStore } from '../store/applied-state.js';
import { JobAppliedState } from './job-applied-state.js';
import { newestDesiredKey } from '../queue/enqueuer.js';
import { currentFence } from '../leader/lease.js';
import { QUEUE_NAME, type JobSettings } from '../queue/jobs.js';
import { removeResource, syncResource } from '../sync/sync.js';
import { checkPrefix, closeRedis, connectProducer, connectWorker, isRedisUnavailable, type RedisSettings } from '../store/redis.js';
import { ReconcileJobData, type ReconcileJobResult } from '../store/schema.js';
import { claimPrefix, type ServiceTarget } from '../store/target.js';
import { fromJobResource, type LiteralSecrets } from '../sync/job-resource.js';
import { SILENT_LOGGER, throttledErrors, type ErrorReporter, type QueueLogger } from '../queue/log.js';
import { DEFAULT_FLAP, type FlapSettings } from '../core/flap-guard.js';
import { versionLabel } from '../core/manifest-version.js';
import { JobGate } from './flap-gate.js';
import { FlapStore } from '../store/flap-store.js';

export { SILENT_LOGGER, type QueueLogger } from '../queue/log.js';

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
}

/** Longest wait between two attempts of a job. */
export const MAX_BACKOFF_MS = 5 * 60_000;

/** Pause of the queue after a 429 that carries no Retry-After. */
export const DEFAULT_RATE_LIMIT_MS = 1_000;

/** Shortest queue pause (a Retry-After of 0 still gives the service a moment). */
const MIN_RATE_LIMIT_MS = 50;

/** A failure worth another attempt; carries the service's Retry-After (on 503) as a floor of the next delay. */
export class RetryableJobError extends Error {
  readonly retryAfterMs: number | undefined;

  constructor(message: string, retryAfterMs?: number) {
    super(message);
    this.name = 'RetryableJobError';
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * The job's backoff strategy: the one backoff of converge (src/service/backoff.ts) with `base` the job's backoff.delay
 * (the `backoff` setting), capped at MAX_BACKOFF_MS, never below a Retry-After the service sent (itself capped there).
 */
export function jitteredBackoff(random: () => number = Math.random) {
  return function backoffStrategy(attemptsMade: number, _type?: string, error?: Error, job?: { opts?: { backoff?: unknown } }): number {
    const options = job?.opts?.backoff;
    const base = typeof options === 'object' && options !== null && typeof (options as { delay?: unknown }).delay === 'number' ? (options as { delay: number }).delay : 1_000;
    const retryAfter = error instanceof RetryableJobError && error.retryAfterMs !== undefined ? Math.min(error.retryAfterMs, MAX_BACKOFF_MS) : undefined;
    return backoffDelay(attemptsMade, { baseMs: base, capMs: MAX_BACKOFF_MS }, retryAfter, random);
  };
}

export interface ProcessorContext {
  client: ServiceClient;
  store: AppliedStateStore;
  env: NodeJS.ProcessEnv;
  log: QueueLogger;
  /** Pauses the whole queue (every worker process) for `ms`. */
  rateLimit(ms: number): Promise<void>;
  /** Literal secret values this process read from the manifests (in-process apply only; see LiteralSecrets). */
  literalSecrets?: LiteralSecrets;
  /** Log every write at info (default true; `apply` prints its writes itself). */
  logWrites?: boolean;
  /** The flap guard: every write asks it first (absent: no guard). */
  flap?: { store: FlapStore; settings: FlapSettings };
  /**
   * Why the job must not run (a newer desired state of its resource was enqueued since, or it was enqueued by a
   * former leader: an older fencing token than the newest handed out), or undefined when it may.
   */
  stale?(data: ReconcileJobData): Promise<StaleJob | undefined>;
}

/**
 * The worker's check of a job against Redis' counters (no wall clock): the resource's desired-state sequence and the
 * lease's fencing token. A job without a sequence or a token (older versions, `apply`'s jobs) passes that check.
 */
/** Why a job is not run: its code (the result's `notRun`) and one line. */
export interface StaleJob {
  code: NonNullable<ReconcileJobResult['notRun']>;
  message: string;
}

export async function staleReason(redis: Pick<Redis, 'hget' | 'get'>, seqKey: string, prefix: string, data: ReconcileJobData): Promise<StaleJob | undefined> {
  const [seq, fence] = await Promise.all([
    data.seq === undefined ? undefined : redis.hget(seqKey, data.key),
    data.fence === undefined ? undefined : currentFence(redis, prefix),
  ]);
  if (fence !== undefined && data.fence !== undefined && fence > data.fence) {
    return { code: 'former_leader', message: `${FORMER_LEADER} (fencing token ${data.fence}, current ${fence}); dropped, nothing sent` };
  }
  if (seq !== undefined && seq !== null && data.seq !== undefined && Number(seq) > data.seq) return { code: 'superseded', message: `${SUPERSEDED}; nothing sent` };
  return undefined;
}

const FORMER_LEADER = 'enqueued by a former leader';
const SUPERSEDED = 'superseded by a newer desired state enqueued since';

/**
 * Whether a job's result says it was not run (a former leader's, or superseded): it did not bring its desired state
 * about. Its `notRun`; a result of an older version says it in its message only.
 */
export function wasNotRun(result: unknown): boolean {
  if ((result as { notRun?: unknown } | undefined)?.notRun !== undefined) return true;
  const message = (result as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && (message.startsWith(FORMER_LEADER) || message.startsWith(SUPERSEDED));
}

/**
 * One line per write, at info: the resource, the fields changed (paths, and values as the plan shows them: a secret
 * is "(sensitive)"), whether a revision started, and the service's request id when it sent one.
 */
function logWrite(ctx: ProcessorContext, data: ReconcileJobData, jobId: string | undefined, result: ReconcileJobResult, writes: WriteRecord[]): void {
  if (writes.length === 0 || ctx.logWrites === false) return;
  const fields = result.fields ?? [];
  const requestIds = writes.map((w) => w.requestId).filter((id): id is string => id !== undefined);
  const from = data.manifestVersion ? versionLabel(data.manifestVersion) : undefined;
  ctx.log.info(
    {
      key: data.key,
      jobId,
      ...(from ? { appliedFrom: from, manifestVersion: data.manifestVersion } : {}),
      outcome: result.outcome,
      new_revision: result.new_revision,
      fields: fields.map((f) => f.path),
      changes: fields.map((f) => fieldLine(f)),
      requests: writes.map((w) => `${w.method} ${w.route} ${w.status}`),
      ...(requestIds.length > 0 ? { requestIds } : {}),
    },
    (result.new_revision ? 'wrote; a new revision started' : 'wrote; no new revision') + (from ? ` (applied from ${from})` : ''),
  );
}

/** Inner step: job data in, result out (a write the flap guard refuses is a result too); throws whatever went wrong. */
export async function runJob(
  data: ReconcileJobData,
  ctx: ProcessorContext,
  gate?: JobGate,
  appliedState: JobAppliedState = new JobAppliedState(ctx.store, data),
): Promise<ReconcileJobResult> {
  const adopt = data.adoptPolicy ? { adoptPolicy: data.adoptPolicy } : {};
  // A delete (--prune) is not a write the flap guard weighs: it is sent by id, once, to what converge owns.
  if (data.remove) return removeResource(data.remove, { service: ctx.client, appliedState, secretEnv: ctx.env, ...adopt });
  const resource = fromJobResource(data.resource!, ctx.literalSecrets);
  const writeGate = gate ? { writeGate: () => gate.check() } : {};
  const result = await syncResource(resource, { service: ctx.client, appliedState, secretEnv: ctx.env, ...adopt, ...writeGate }, data.deploymentId, data.rebuild ? { rebuild: true } : undefined);
  if (!gate?.refusal) await gate?.recorded(result);
  return result;
}

/** The flap guard's gate of one job (none without a guard). */
function gateFor(data: ReconcileJobData, ctx: ProcessorContext, jobId: string | undefined, appliedState: JobAppliedState): JobGate | undefined {
  if (!ctx.flap) return undefined;
  return new JobGate({
    store: ctx.flap.store,
    appliedRecord: (key) => appliedState.firstRead(key),
    key: data.key,
    desired: data.desired,
    manifestVersion: data.manifestVersion,
    settings: ctx.flap.settings,
    now: () => new Date(),
    onReleased: (conflict) => ctx.log.info({ key: data.key, jobId, reason: conflict.reason }, 'conflict released: the desired state changed to a new one; writing again'),
  });
}

/** A job whose write the flap guard refused: it completes, having sent nothing (nothing was marked pending); the conflict is logged once, when found. */
function heldByConflict(refusal: NonNullable<JobGate['refusal']>, data: ReconcileJobData, ctx: ProcessorContext, jobId: string | undefined): void {
  const { reason, message } = refusal.conflict;
  if (refusal.declared) ctx.log.warn({ key: data.key, jobId, reason, conflict: refusal.conflict }, `Conflict: ${message}`);
  else ctx.log.debug({ key: data.key, jobId, reason }, 'conflict standing; nothing sent');
}

/**
 * Outer step (owns classification and logging): the one place where a failure becomes a retry, a queue pause
 * (429: no attempt spent) or a final failure carrying the service's detail.
 */
export function createProcessor(ctx: ProcessorContext) {
  return async function process(job: Job): Promise<ReconcileJobResult> {
    const parsed = ReconcileJobData.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(`job ${job.id} is not a converge reconcile job this version understands (${parsed.error.issues[0]?.message ?? 'bad shape'})`);
    }
    const data = parsed.data;
    const started = Date.now();
    // A job of an older run (its worker died, or it was handed back) never writes an older desired state over a newer
    // one, and a job of a former leader never writes at all (the current leader enqueues its own).
    const stale = await ctx.stale?.(data);
    if (stale !== undefined) {
      ctx.log.info({ key: data.key, jobId: job.id, seq: data.seq, fence: data.fence }, `job not run: ${stale.message}`);
      return { outcome: 'unchanged', new_revision: false, message: stale.message, notRun: stale.code };
    }
    const appliedState = new JobAppliedState(ctx.store, data);
    const gate = gateFor(data, ctx, job.id, appliedState);
    try {
      // The job's attempts are the one retry layer of its requests: each is sent once per attempt (sendingOnce).
      const { value: result, writes } = await recordWrites(() => sendingOnce(() => runJob(data, ctx, gate, appliedState)));
      if (gate?.refusal) heldByConflict(gate.refusal, data, ctx, job.id);
      logWrite(ctx, data, job.id, result, writes);
      ctx.log.debug({ key: data.key, jobId: job.id, outcome: result.outcome, new_revision: result.new_revision, ms: Date.now() - started }, 'job done');
      return result;
    } catch (error) {
      if (error instanceof BlockedError || error instanceof JobInputError) {
        // The resource cannot be synced as things stand, or the job asks for what this process does not have.
        ctx.log.warn({ key: data.key, jobId: job.id, error: error.message }, 'job failed');
        throw new UnrecoverableError(error.message);
      }
      if (isRedisUnavailable(error)) {
        // The applied-state store could not be read or written: Redis, not the service, failed. Nothing is lost by
        // trying again (a write already sent is settled from live state and its pending record on the next attempt).
        const message = `Redis was unavailable: ${(error as Error).message.split('\n')[0]}`;
        ctx.log.info({ key: data.key, jobId: job.id, attempt: job.attemptsMade + 1, error: message }, 'job attempt failed; will retry');
        throw new RetryableJobError(message);
      }
      const failure = classifyFailure(error);
      if (failure.kind === 'rate_limited') {
        const wait = Math.max(failure.retryAfterMs ?? DEFAULT_RATE_LIMIT_MS, MIN_RATE_LIMIT_MS);
        ctx.log.info({ key: data.key, jobId: job.id, waitMs: wait }, 'rate limited by the service; pausing the queue');
        await ctx.rateLimit(wait);
        throw Worker.RateLimitError();
      }
      if (failure.kind === 'retry') {
        ctx.log.info({ key: data.key, jobId: job.id, attempt: job.attemptsMade + 1, error: failure.message }, 'job attempt failed; will retry');
        throw new RetryableJobError(failure.message, failure.retryAfterMs);
      }
      ctx.log.warn({ key: data.key, jobId: job.id, error: failure.message }, 'job failed');
      throw new UnrecoverableError(failure.message);
    }
  };
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
}

/** What a runner tells of the jobs it runs (the daemon's metrics, apply's start-up). */
export type RunnerEvent =
  | { type: 'started'; jobId: string }
  /** key and desired: the job data's resource key and desired-state fingerprint (when it carries one). */
  | { type: 'completed'; jobId: string; outcome: ReconcileJobResult['outcome'] | undefined; key?: string; desired?: string; conflict?: ReconcileJobResult['conflict'] }
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

/** Starts a runner on the shared queue. Fails with E_REDIS (one line) when Redis is unreachable. */
export async function startJobRunner(settings: WorkerSettings, options: StartRunnerOptions): Promise<JobRunner> {
  const log = options.log ?? SILENT_LOGGER;
  const onError = options.onError ?? throttledErrors(log);
  checkPrefix(settings.redisPrefix);
  // Applied-state commands sit between a job's steps (read, mark pending, PATCH, record): sent at once, not batched. In the
  // apply benchmark (20 jobs in flight) batching made each of those round trips about 1 ms longer.
  const producer: Redis = await connectProducer(settings, { name: 'converge-worker-state', autoPipelining: false, onError: (e) => onError('worker state connection', e) });
  let connection: Redis;
  try {
    if (options.target) await claimPrefix(producer, settings.redisPrefix, options.target);
    connection = await connectWorker(settings, { onError: (e) => onError('worker connection', e) });
  } catch (error) {
    await closeRedis(producer);
    throw error;
  }
  const store = new AppliedStateStore(producer, settings.redisPrefix);
  let worker: Worker<unknown, ReconcileJobResult> | undefined;
  const processor = createProcessor({
    client: options.client,
    store,
    env: options.env,
    log,
    rateLimit: async (ms) => {
      await worker!.rateLimit(ms);
    },
    ...(options.literalSecrets ? { literalSecrets: options.literalSecrets } : {}),
    ...(options.logWrites === false ? { logWrites: false } : {}),
    flap: {
      store: new FlapStore(producer, settings.redisPrefix),
      settings: { windowMs: settings.flapWindow ?? DEFAULT_FLAP.windowMs, limit: settings.flapLimit ?? DEFAULT_FLAP.limit },
    },
    stale: (data) => staleReason(producer, newestDesiredKey(settings.redisPrefix), settings.redisPrefix, data),
  });
  // The jobs running now, with the token that holds each one's lock (for handBack).
  const active = new Map<string, { job: Job; token: string | undefined }>();
  // While active jobs are handed back: settles when the hand-back ended, with the ids it moved back to waiting.
  let handingBack: Promise<ReadonlySet<string>> | undefined;
  const tracked = async (job: Job, token?: string): Promise<ReconcileJobResult> => {
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
  worker = new Worker<unknown, ReconcileJobResult>(QUEUE_NAME, tracked, {
    connection,
    prefix: settings.redisPrefix,
    concurrency: Math.max(1, settings.concurrency),
    limiter: limiterFor(settings.globalRate),
    settings: { backoffStrategy: jitteredBackoff(options.random) },
    maxStalledCount: 2,
    ...(options.name ? { name: options.name } : {}),
    ...(options.lockDuration ? { lockDuration: options.lockDuration } : {}),
    ...(options.stalledInterval ? { stalledInterval: options.stalledInterval } : {}),
  });
  const running = worker;
  running.on('error', (error) => onError('worker', error));
  const listeners = new Set<(event: RunnerEvent) => void>();
  const tell = (event: RunnerEvent): void => {
    for (const listener of listeners) listener(event);
  };
  running.on('active', (job) => tell({ type: 'started', jobId: job.id! }));
  running.on('completed', (job, result) => {
    const data = job.data as { key?: unknown; desired?: unknown } | undefined;
    const event: RunnerEvent = { type: 'completed', jobId: job.id!, outcome: (result as ReconcileJobResult | undefined)?.outcome };
    // A job not run does not tell that its desired state was brought about (the daemon's finishedSince).
    if (!wasNotRun(result)) {
      if (typeof data?.key === 'string') event.key = data.key;
      if (typeof data?.desired === 'string') event.desired = data.desired;
    }
    const conflict = (result as ReconcileJobResult | undefined)?.conflict;
    if (conflict) event.conflict = conflict;
    tell(event);
  });
  running.on('failed', (job, error) => tell({ type: 'failed', jobId: job?.id ?? '', final: isFinalFailure(job, error) }));
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
    onJob(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async drain() {
      await running.pause(false);
    },
    async close(force = false) {
      await running.close(force);
      await closeRedis(connection, producer);
    },
    async handBack(dropInFlight) {
      const handed = new Set<string>();
      let ended!: (ids: ReadonlySet<string>) => void;
      handingBack = new Promise((resolve) => (ended = resolve));
      try {
        await running.pause(true);
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
    },
    disconnect() {
      void running.close(true).catch(() => undefined);
      connection.disconnect();
      producer.disconnect();
    },
  };
}
