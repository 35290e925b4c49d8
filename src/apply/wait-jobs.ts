// Waiting for an apply's jobs: results from the queue's job events, and a direct look-up of unfinished jobs in case one was missed.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FieldChange, PlanChange } from '../core/model.js';
import type { HealthCondition } from '../core/health.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';
import type { Enqueued, Enqueuer, JobLookup } from '../jobs/queue/enqueuer.js';
import { ReconcileJobResult } from '../store/schema.js';

/** Who started a revision that apply --wait follows (ResourceResult.startedBy). */
export type RevisionStarter = 'apply' | 'earlier';

/** `interrupted`: the apply was stopped (SIGINT, SIGTERM) before the job had a result. */
export type ResultStatus = 'done' | 'unchanged' | 'failed' | 'interrupted';

/** What became of one resource's job. */
export interface ResourceResult {
  kind: PlanChange['kind'];
  name: string;
  key: string;
  status: ResultStatus;
  outcome?: ReconcileJobResult['outcome'];
  new_revision: boolean;
  /** The service's message on failure, or a note (adoption). Never a secret. */
  message?: string;
  deploymentId?: string;
  latestRevisionId?: string | null;
  /** The job that carried the write; absent for a rollout already in progress that no job of this apply touched. */
  jobId?: string;
  /**
   * With --wait: who started the revision it follows: a job of this apply (`apply`), or something before it, an earlier
   * apply, the daemon or a person (`earlier`: the rollout was already in progress, and nothing was written for it).
   */
  startedBy?: RevisionStarter;
  /**
   * With --wait: the revision became active, failed (a failed status, or past the progress deadline), was not
   * active at the timeout, or was still building when the wait stopped at another's failure (undefined: not waited for).
   */
  revision?: 'active' | 'failed' | 'timeout' | 'building';
  /** With --wait: the failed status of the revision (BUILD_FAILED, DEPLOY_FAILED, CREATE_FAILED). */
  revisionStatus?: string;
  /** With --wait: the rollout health the wait read last. */
  health?: HealthCondition;
  /** The fields the job's write sent, as the plan shows them (secret values "(sensitive)"); absent when nothing was written. */
  fields?: FieldChange[];
}

/** A result of a job of this apply: it names its job (interrupted before it was enqueued: an empty id). */
export interface JobResult extends ResourceResult {
  jobId: string;
}

interface Tracked {
  change: DecidedJob;
  key: string;
  jobId: string;
  /** The running job of the resource that ours was queued behind (Enqueued.behind). */
  behind?: string;
  result?: JobResult;
}

/** Unfinished jobs looked up at once per round trip of a poll. */
const POLL_BATCH = 50;

function resultFrom(t: Tracked, status: ResultStatus, extra: Partial<ResourceResult>): JobResult {
  return { kind: t.change.change.kind, name: t.change.change.name, key: t.key, status, new_revision: false, jobId: t.jobId, ...extra };
}

function completedResult(t: Tracked, value: unknown): JobResult {
  const parsed = ReconcileJobResult.safeParse(value);
  if (!parsed.success) return resultFrom(t, 'failed', { message: 'the job finished with a result this converge does not understand' });
  const r = parsed.data;
  const extra: Partial<ResourceResult> = { outcome: r.outcome, new_revision: r.new_revision };
  if (r.message) extra.message = r.message;
  if (r.deploymentId) extra.deploymentId = r.deploymentId;
  if (r.latestRevisionId !== undefined) extra.latestRevisionId = r.latestRevisionId;
  if (r.fields) extra.fields = r.fields.map((f) => ({ path: f.path, before: f.before, after: f.after, sensitive: f.sensitive }));
  // The step found live state changed since the plan and sent nothing: the desired state was not applied.
  if (r.notRun === 'live_changed') return resultFrom(t, 'failed', extra);
  // The flap guard refused the write (a Conflict): the desired state was not applied.
  if (r.conflict) return resultFrom(t, 'failed', { ...extra, message: r.message ?? `Conflict: ${r.conflict.message}` });
  return resultFrom(t, r.outcome === 'unchanged' ? 'unchanged' : 'done', extra);
}

/**
 * The jobs of one apply, by job id, until each has a result. Fed by job events (completed, failed); wait() also looks
 * unfinished jobs up every pollMs, and follows a resource to its newer job when another producer replaced ours.
 */
export class JobWaiter {
  private readonly enqueuer: Enqueuer;
  private readonly total: number;
  private readonly onProgress: ((finished: number, total: number, latest: ResourceResult) => void) | undefined;
  private readonly tracked: Tracked[] = [];
  private readonly byJob = new Map<string, Tracked>();
  private finished = 0;
  private wake: (() => void) | undefined;
  private abandoned = false;

  constructor(enqueuer: Enqueuer, total: number, onProgress?: (finished: number, total: number, latest: ResourceResult) => void) {
    this.enqueuer = enqueuer;
    this.total = total;
    this.onProgress = onProgress;
  }

  /** Tracks the job of the `index`-th change. */
  track(index: number, change: DecidedJob, enqueued: Enqueued): void {
    const t: Tracked = { change, key: enqueued.key, jobId: enqueued.jobId };
    if (enqueued.behind) t.behind = enqueued.behind;
    this.tracked[index] = t;
    this.byJob.set(enqueued.jobId, t);
  }

  completed(jobId: string, value: unknown): void {
    const t = this.byJob.get(jobId);
    if (t) this.finish(t, completedResult(t, value));
  }

  failed(jobId: string, reason: string): void {
    const t = this.byJob.get(jobId);
    if (t) this.finish(t, resultFrom(t, 'failed', { message: reason }));
  }

  /** Ends wait() at once (an interrupted apply); results that come later are still recorded. */
  abandon(): void {
    this.abandoned = true;
    this.wake?.();
  }

  /** Whether every tracked job has its result. */
  allFinished(): boolean {
    return this.finished === this.total;
  }

  /** The results so far, in order: undefined for a change whose job has none; its job id when it was enqueued. */
  partial(): Array<{ result?: JobResult; jobId?: string }> {
    return Array.from({ length: this.total }, (_, i) => {
      const t = this.tracked[i];
      if (!t) return {};
      return t.result ? { result: t.result, jobId: t.jobId } : { jobId: t.jobId };
    });
  }

  /** Job ids of tracked changes without a result. */
  unfinishedJobs(): string[] {
    return this.tracked.filter((t) => t && !t.result).map((t) => t.jobId);
  }

  /** Unfinished changes queued behind a running job (of an earlier run, or of another process): resource and that job. */
  waitingBehind(): Array<{ key: string; behind: string }> {
    return this.tracked.filter((t) => t && !t.result && t.behind).map((t) => ({ key: t.key, behind: t.behind! }));
  }

  /** Resolves with one result per tracked change, in order, once every job has one (or abandon() was called). */
  async wait(pollMs: number): Promise<JobResult[]> {
    const allDone = new Promise<void>((resolve) => {
      this.wake = resolve;
      if (this.finished === this.total || this.abandoned) resolve();
    });
    while (this.finished < this.total && !this.abandoned) {
      // Unref'd: once every job is done, a poll timer still pending must not hold the process open for pollMs.
      await Promise.race([allDone, sleep(pollMs, undefined, { ref: false })]);
      if (this.finished < this.total && !this.abandoned) await this.pollUnfinished();
    }
    return this.tracked.map((t) => t?.result).filter((r): r is JobResult => r !== undefined);
  }

  /**
   * Records the results already stored for unfinished jobs, without waiting for their events: after an interrupt the
   * runner's drain can end before the completed event of its last job arrives, and that job is done, not left.
   */
  async settleStored(): Promise<void> {
    await this.forEachOpen(async (t) => {
      this.settleFound(t, await this.enqueuer.lookup(t.jobId));
    });
  }

  private finish(t: Tracked, result: JobResult): void {
    if (t.result) return;
    t.result = result;
    this.finished += 1;
    this.onProgress?.(this.finished, this.total, result);
    if (this.finished === this.total) this.wake?.();
  }

  private pollUnfinished(): Promise<void> {
    return this.forEachOpen((t) => this.pollOne(t));
  }

  /** Runs `step` for each tracked change without a result, POLL_BATCH at a time. */
  private async forEachOpen(step: (t: Tracked) => Promise<void>): Promise<void> {
    const open = this.tracked.filter((t) => t && !t.result);
    for (let i = 0; i < open.length; i += POLL_BATCH) {
      await Promise.all(open.slice(i, i + POLL_BATCH).map(step));
    }
  }

  /** Records a finished job's stored result (completed or failed); false when it has none yet. */
  private settleFound(t: Tracked, found: JobLookup): boolean {
    if (found.state === 'completed') this.finish(t, completedResult(t, found.value));
    else if (found.state === 'failed') this.finish(t, resultFrom(t, 'failed', { message: found.reason }));
    else return false;
    return true;
  }

  /**
   * Ours was queued behind `behind`, which the enqueuer gave our data first (enqueuer.ts): when that job left `active`
   * for `waiting` right before our add, BullMQ dropped ours and `behind` ran our desired state. Its result is ours then.
   */
  private async settledBy(t: Tracked, behind: string): Promise<boolean> {
    const carried = await this.enqueuer.lookup(behind);
    return this.settleFound(t, carried) || carried.state === 'unfinished';
  }

  private async pollOne(t: Tracked): Promise<void> {
    const found = await this.enqueuer.lookup(t.jobId);
    if (this.settleFound(t, found) || found.state === 'unfinished') return;
    // Not (or no longer) stored: still queued behind the running job of this resource, or replaced by a newer one.
    const current = await this.enqueuer.currentJobOf(t.key);
    if (current === t.jobId) return;
    if (current !== undefined && current === t.behind) return;
    if (current !== undefined) {
      this.byJob.delete(t.jobId);
      t.jobId = current;
      delete t.behind;
      this.byJob.set(current, t);
      return;
    }
    // A last look: the job may have started (from behind the running one) or finished between the two reads above.
    if ((await this.enqueuer.lookup(t.jobId)).state !== 'gone') return;
    if (t.behind && (await this.settledBy(t, t.behind))) return;
    this.finish(t, resultFrom(t, 'failed', { message: 'the job left the queue without a result (removed by another process?)' }));
  }
}
