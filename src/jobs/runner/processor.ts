// The job processor: runs one reconcile job and classifies its failure once (retry with jittered backoff, pause on 429, fail at once).
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { BlockedError, JobInputError } from '../../core/errors.js';
import type { FlapSettings } from '../../core/flap-guard.js';
import { versionLabel } from '../../core/manifest-version.js';
import { fieldLine } from '../../plan/render/text.js';
import { backoffDelay } from '../../service/backoff.js';
import { recordWrites, sendingOnce, type WriteRecord } from '../../service/call-scope.js';
import type { ServiceClient } from '../../service/client.js';
import { classifyFailure } from '../../service/errors.js';
import { inLinkedSpan } from '../../service/trace.js';
import type { AppliedStateStore } from '../../store/applied-state.js';
import type { FlapStore } from '../../store/flap-store.js';
import { isRedisUnavailable } from '../../store/redis.js';
import { ReconcileJobData, type ReconcileJobResult } from '../../store/schema.js';
import { fromJobResource, type LiteralSecrets } from '../../sync/job-resource.js';
import { removeResource, syncResource } from '../../sync/sync.js';
import { JobGate } from './flap-gate.js';
import { foldJob, type JobFoldContext } from './job-fold.js';
import { JobAppliedState } from './job-applied-state.js';
import type { StaleJob } from './stale-job.js';
import { settleFormerLeaderJob } from './unfolded-write.js';

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
 * (the `backoff` setting), capped at `capMs` (the worker's `max_backoff`, at most MAX_BACKOFF_MS), never below a
 * Retry-After the service sent (itself capped at MAX_BACKOFF_MS).
 */
export function jitteredBackoff(random: () => number = Math.random, capMs = MAX_BACKOFF_MS) {
  const cap = Math.min(Math.max(1, capMs), MAX_BACKOFF_MS);
  return function backoffStrategy(
    attemptsMade: number,
    _type?: string,
    error?: Error,
    job?: { opts?: { backoff?: unknown } },
  ): number {
    const options = job?.opts?.backoff;
    const base =
      typeof options === 'object' && options !== null && typeof (options as { delay?: unknown }).delay === 'number'
        ? (options as { delay: number }).delay
        : 1_000;
    const retryAfter =
      error instanceof RetryableJobError && error.retryAfterMs !== undefined
        ? Math.min(error.retryAfterMs, MAX_BACKOFF_MS)
        : undefined;
    return backoffDelay(attemptsMade, { baseMs: base, capMs: cap }, retryAfter, random);
  };
}

/** What the processor runs with; `log` and `record` (the fold of each job's result) as JobFoldContext says. */
export interface ProcessorContext extends JobFoldContext {
  client: ServiceClient;
  store: AppliedStateStore;
  env: NodeJS.ProcessEnv;
  /** Pauses the whole queue (every worker process) for `ms`. */
  rateLimit(ms: number): Promise<void>;
  /** Literal secret values this process read from the manifests (in-process apply only; see LiteralSecrets). */
  literalSecrets?: LiteralSecrets;
  /** Log every write at info (default true; `apply` prints its writes itself). */
  logWrites?: boolean;
  /**
   * This worker's wall clock (Date by default): the send time of its pending writes and the times it shows. No time it
   * gives is compared with another replica's: the applied record's time is Redis' (src/store/applied-state-scripts.ts).
   */
  now?: () => Date;
  /**
   * The flap guard: every write asks it first (absent: no guard). `now`: the clock its writes are timed on, the one
   * every replica shares (Redis' TIME, src/store/clock.ts), so a worker's wrong wall clock cannot empty the window.
   */
  flap?: { store: FlapStore; settings: FlapSettings; now(): Promise<number> };
  /**
   * Why the job must not run (src/core/job-intent.ts: a newer desired state of its resource was enqueued since, it was
   * enqueued by a former leader, or a delete's resource is declared again, its absence changed or its confirmation is
   * gone), or undefined when it may. Asked as the job starts and again right before its first write or its DELETE.
   */
  stale?(data: ReconcileJobData): Promise<StaleJob | undefined>;
}

/**
 * One line per write, at info: the resource, the fields changed (paths, and values as the plan shows them: a secret
 * is "(sensitive)"), whether a revision started, and the service's request id when it sent one.
 */
function logWrite(
  ctx: ProcessorContext,
  data: ReconcileJobData,
  jobId: string | undefined,
  result: ReconcileJobResult,
  writes: WriteRecord[],
): void {
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
    (result.new_revision ? 'wrote; a new revision started' : 'wrote; no new revision') +
      (from ? ` (applied from ${from})` : ''),
  );
}

/** Why a job without a decided write (enqueued by an older converge) is not run. */
const UNDECIDED = 'enqueued by an older converge, without the write its decision made';

/**
 * The job's intent asked again right before its first write or its DELETE (the kind's step asks SyncPorts.writeGate):
 * the one rule the job met when it started (src/core/job-intent.ts), read again now, once per job run.
 */
function intentGate(
  data: ReconcileJobData,
  ctx: ProcessorContext,
): (() => Promise<ReconcileJobResult | undefined>) | undefined {
  const stale = ctx.stale?.bind(ctx);
  if (!stale) return undefined;
  let asked: Promise<ReconcileJobResult | undefined> | undefined;
  return () => {
    asked ??= stale(data).then((lost) =>
      lost ? { outcome: 'unchanged', new_revision: false, message: lost.message, notRun: lost.code } : undefined,
    );
    return asked;
  };
}

/** Inner step: job data in, result out (a write the flap guard refuses is a result too); throws whatever went wrong. */
export async function runJob(
  data: ReconcileJobData,
  ctx: ProcessorContext,
  gate?: JobGate,
  appliedState: JobAppliedState = new JobAppliedState(ctx.store, data),
): Promise<ReconcileJobResult> {
  const intent = intentGate(data, ctx);
  // A delete (--prune) is not a write the flap guard weighs: it is sent by id, once, to what converge owns, while its intent holds.
  const clock = ctx.now ? { now: ctx.now } : {};
  if (data.remove)
    return removeResource(data.remove, {
      service: ctx.client,
      appliedState,
      secretEnv: ctx.env,
      ...clock,
      ...(intent ? { writeGate: intent } : {}),
    });
  // A job of an older version carries no decided write: its step would have to decide again, which no step does.
  if (!data.write)
    return {
      outcome: 'unchanged',
      new_revision: false,
      notRun: 'superseded',
      message: `${UNDECIDED}; nothing sent, the next reconcile decides again`,
    };
  const resource = fromJobResource(data.resource!, ctx.literalSecrets);
  const writeGate = gate || intent ? { writeGate: async () => (await intent?.()) ?? (await gate?.check()) } : {};
  const result = await syncResource(
    resource,
    data.write,
    { service: ctx.client, appliedState, secretEnv: ctx.env, ...clock, ...writeGate },
    data.deploymentId,
  );
  if (!gate?.refusal) await gate?.recorded(result);
  return result;
}

/** The flap guard's gate of one job (none without a guard). */
function gateFor(
  data: ReconcileJobData,
  ctx: ProcessorContext,
  jobId: string | undefined,
  appliedState: JobAppliedState,
): JobGate | undefined {
  const flap = ctx.flap;
  if (!flap) return undefined;
  return new JobGate({
    store: flap.store,
    appliedRecord: (key) => appliedState.firstRead(key),
    key: data.key,
    desired: data.desired,
    manifestVersion: data.manifestVersion,
    fence: data.fence,
    settings: flap.settings,
    now: async () => new Date(await flap.now()),
    onReleased: (conflict) =>
      ctx.log.info(
        { key: data.key, jobId, reason: conflict.reason },
        'conflict released: the desired state changed to a new one; writing again',
      ),
  });
}

/** A job whose write the flap guard refused: it completes, having sent nothing (nothing was marked pending); the conflict is logged once, when found. */
function heldByConflict(
  refusal: NonNullable<JobGate['refusal']>,
  data: ReconcileJobData,
  ctx: ProcessorContext,
  jobId: string | undefined,
): void {
  const { reason, message } = refusal.conflict;
  if (refusal.declared)
    ctx.log.warn({ key: data.key, jobId, reason, conflict: refusal.conflict }, `Conflict: ${message}`);
  else ctx.log.debug({ key: data.key, jobId, reason }, 'conflict standing; nothing sent');
}

/**
 * Outer step (owns classification and logging, in processJob): the one place where a failure becomes a retry, a queue
 * pause (429: no attempt spent) or a final failure carrying the service's detail.
 */
export function createProcessor(ctx: ProcessorContext) {
  return async function process(job: Job): Promise<ReconcileJobResult> {
    const parsed = ReconcileJobData.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(
        `job ${job.id} is not a converge reconcile job this version understands (${parsed.error.issues[0]?.message ?? 'bad shape'})`,
      );
    }
    const data = parsed.data;
    // One span per attempt, linked to the reconcile that enqueued the job (its traceparent); no-op unless tracing is on.
    const attributes = {
      'converge.job.id': job.id ?? '',
      'converge.job.key': data.key,
      'converge.job.operation': data.operation,
      'converge.job.attempt': job.attemptsMade + 1,
    };
    return inLinkedSpan(`job ${data.operation}`, attributes, data.traceparent, () => processJob(ctx, job, data));
  };
}

/**
 * A stale job is not run. A former leader's job whose own write of an earlier attempt is still pending (its leader died
 * between the send and the answer) is settled first, reading only (src/sync/sync.ts settleLostWrite): when live state
 * shows it landed, that is the job's result, recorded and folded like any (write_done, appliedFrom); nothing is sent.
 * A read that fails is retried with the job (its next attempt is stale again and settles again).
 */
async function dropStale(
  ctx: ProcessorContext,
  job: Job,
  data: ReconcileJobData,
  stale: StaleJob,
): Promise<ReconcileJobResult> {
  const about = { key: data.key, jobId: job.id, seq: data.seq, fence: data.fence };
  if (stale.code === 'former_leader' && job.id !== undefined && data.resource && data.write) {
    const appliedState = new JobAppliedState(ctx.store, data, job.id);
    const folds = ctx.record ? { folds: ctx.record.folds } : {};
    const ports = { service: ctx.client, appliedState, store: ctx.store, ...folds };
    const settled = await settleFormerLeaderJob(ports, data, job.id).catch((error: unknown) => {
      const message = `could not settle its earlier attempt's write: ${(error as Error).message.split('\n')[0]}`;
      ctx.log.info({ ...about, attempt: job.attemptsMade + 1, error: message }, 'job attempt failed; will retry');
      throw new RetryableJobError(message);
    });
    const landed = settled?.answer;
    if (landed) {
      const said = `job not run: ${stale.message}; ${landed.message}: recorded from what the service reports`;
      ctx.log.info({ ...about, outcome: landed.outcome, new_revision: landed.new_revision }, said);
      const appliedAt = settled.appliedAt ?? appliedState.writtenAt();
      await foldJob(ctx, data, job.id, { answer: landed, ...(appliedAt ? { appliedAt } : {}) }, settled.unless);
      return landed;
    }
  }
  ctx.log.info(about, `job not run: ${stale.message}`);
  return { outcome: 'unchanged', new_revision: false, message: stale.message, notRun: stale.code };
}

/** One attempt of a parsed job (createProcessor's): dropped when stale, else run; its failure classified once. */
async function processJob(ctx: ProcessorContext, job: Job, data: ReconcileJobData): Promise<ReconcileJobResult> {
  const started = Date.now();
  // A job of an older run (its worker died, or it was handed back) never writes an older desired state over a newer
  // one, and a job of a former leader never writes at all (the current leader enqueues its own).
  const stale = await ctx.stale?.(data);
  if (stale !== undefined) return dropStale(ctx, job, data, stale);
  const appliedState = new JobAppliedState(ctx.store, data, job.id);
  const gate = gateFor(data, ctx, job.id, appliedState);
  try {
    // The job's attempts are the one retry layer of its requests: each is sent once per attempt (sendingOnce).
    const { value: result, writes } = await recordWrites(() =>
      sendingOnce(() => runJob(data, ctx, gate, appliedState)),
    );
    if (gate?.refusal) heldByConflict(gate.refusal, data, ctx, job.id);
    // Its intent no longer held right before its write or DELETE (src/core/job-intent.ts): nothing was sent.
    if (result.notRun && result.notRun !== 'live_changed')
      ctx.log.info(
        { key: data.key, jobId: job.id, seq: data.seq, fence: data.fence },
        `job not run: ${result.message}`,
      );
    logWrite(ctx, data, job.id, result, writes);
    ctx.log.debug(
      {
        key: data.key,
        jobId: job.id,
        outcome: result.outcome,
        new_revision: result.new_revision,
        ms: Date.now() - started,
      },
      'job done',
    );
    const appliedAt = appliedState.writtenAt();
    await foldJob(ctx, data, job.id, { answer: result, ...(appliedAt ? { appliedAt } : {}) });
    return result;
  } catch (error) {
    if (error instanceof BlockedError || error instanceof JobInputError) {
      // The resource cannot be synced as things stand, or the job asks for what this process does not have.
      ctx.log.warn({ key: data.key, jobId: job.id, error: error.message }, 'job failed');
      await foldJob(ctx, data, job.id, { failure: error.message, error });
      throw new UnrecoverableError(error.message);
    }
    if (isRedisUnavailable(error)) {
      // The applied-state store could not be read or written: Redis, not the service, failed. Nothing is lost by
      // trying again (a write already sent is settled from live state and its pending record on the next attempt).
      const message = `Redis was unavailable: ${(error as Error).message.split('\n')[0]}`;
      ctx.log.info(
        { key: data.key, jobId: job.id, attempt: job.attemptsMade + 1, error: message },
        'job attempt failed; will retry',
      );
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
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1))
        await foldJob(ctx, data, job.id, { failure: failure.message, error });
      ctx.log.info(
        { key: data.key, jobId: job.id, attempt: job.attemptsMade + 1, error: failure.message },
        'job attempt failed; will retry',
      );
      throw new RetryableJobError(failure.message, failure.retryAfterMs);
    }
    ctx.log.warn({ key: data.key, jobId: job.id, error: failure.message }, 'job failed');
    await foldJob(ctx, data, job.id, { failure: failure.message, error });
    throw new UnrecoverableError(failure.message);
  }
}
