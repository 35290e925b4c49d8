// Waiting for an apply's jobs: results from the queue's job events, and a direct look-up of unfinished jobs in case one was missed; each job's raw result is kept as the event the fold takes (src/core/resource-state.ts), not classified here.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResourceHold } from '../core/holds.js';
import type { PlanChange } from '../core/model.js';
import type { ResourceEvent } from '../core/resource-state-model.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';
import type { Enqueued, Enqueuer, JobLookup } from '../jobs/queue/enqueuer.js';
import { ReconcileJobResult } from '../store/schema.js';

/** The events of a job's end that the fold takes: its raw result, its failure, or the apply stopped before it had one. */
export type JobEvent = Extract<ResourceEvent, { type: 'job-completed' | 'job-failed' | 'interrupted' }>;

/** What became of one change's job, as the queue told it (src/apply/apply-state.ts folds it as the daemon does). */
export interface JobEnd {
  kind: PlanChange['kind'];
  name: string;
  key: string;
  /** The job that carried the write (interrupted before it was enqueued: an empty id). */
  jobId: string;
  /** The job's operation (its data's), when it was enqueued. */
  operation?: string;
  event: JobEvent;
  /**
   * The hold the fold of this job's failure made in Redis, where the job ran (a WriteRefused or NameTaken hold:
   * src/core/resource-state.ts), read back by apply (src/apply/apply.ts holdsOfFailures).
   */
  hold?: ResourceHold;
}

interface Tracked {
  change: DecidedJob;
  key: string;
  jobId: string;
  operation: string;
  /** The running job of the resource that ours was queued behind (Enqueued.behind). */
  behind?: string;
  result?: JobEnd;
}

/** Unfinished jobs looked up at once per round trip of a poll. */
const POLL_BATCH = 50;

function endOf(t: Tracked, event: JobEvent): JobEnd {
  return {
    kind: t.change.change.kind,
    name: t.change.change.name,
    key: t.key,
    jobId: t.jobId,
    operation: t.operation,
    event,
  };
}

/** A job's stored result, as the daemon reads it (src/daemon/status/resource-tracker.ts): undefined when this converge cannot read it. */
function completedEnd(t: Tracked, value: unknown): JobEnd {
  const parsed = ReconcileJobResult.safeParse(value);
  return endOf(t, {
    type: 'job-completed',
    jobId: t.jobId,
    at: new Date().toISOString(),
    result: parsed.success ? parsed.data : undefined,
  });
}

function failedEnd(t: Tracked, message: string): JobEnd {
  return endOf(t, { type: 'job-failed', jobId: t.jobId, at: new Date().toISOString(), message });
}

/**
 * The jobs of one apply, by job id, until each has a result. Fed by job events (completed, failed); wait() also looks
 * unfinished jobs up every pollMs, and follows a resource to its newer job when another producer replaced ours.
 */
export class JobWaiter {
  private readonly enqueuer: Enqueuer;
  private readonly total: number;
  private readonly onProgress: ((finished: number, total: number, latest: JobEnd) => void) | undefined;
  private readonly tracked: Tracked[] = [];
  private readonly byJob = new Map<string, Tracked>();
  private finished = 0;
  private wake: (() => void) | undefined;
  private abandoned = false;

  constructor(
    enqueuer: Enqueuer,
    total: number,
    onProgress?: (finished: number, total: number, latest: JobEnd) => void,
  ) {
    this.enqueuer = enqueuer;
    this.total = total;
    this.onProgress = onProgress;
  }

  /** Tracks the job of the `index`-th change (`operation`: its job data's). */
  track(index: number, change: DecidedJob, enqueued: Enqueued, operation: string): void {
    const t: Tracked = { change, key: enqueued.key, jobId: enqueued.jobId, operation };
    if (enqueued.behind) t.behind = enqueued.behind;
    this.tracked[index] = t;
    this.byJob.set(enqueued.jobId, t);
  }

  completed(jobId: string, value: unknown): void {
    const t = this.byJob.get(jobId);
    if (t) this.finish(t, completedEnd(t, value));
  }

  failed(jobId: string, reason: string): void {
    const t = this.byJob.get(jobId);
    if (t) this.finish(t, failedEnd(t, reason));
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
  partial(): Array<{ result?: JobEnd; jobId?: string; operation?: string }> {
    return Array.from({ length: this.total }, (_, i) => {
      const t = this.tracked[i];
      if (!t) return {};
      return t.result ? { result: t.result, jobId: t.jobId } : { jobId: t.jobId, operation: t.operation };
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
  async wait(pollMs: number): Promise<JobEnd[]> {
    const allDone = new Promise<void>((resolve) => {
      this.wake = resolve;
      if (this.finished === this.total || this.abandoned) resolve();
    });
    while (this.finished < this.total && !this.abandoned) {
      // Unref'd: once every job is done, a poll timer still pending must not hold the process open for pollMs.
      await Promise.race([allDone, sleep(pollMs, undefined, { ref: false })]);
      if (this.finished < this.total && !this.abandoned) await this.pollUnfinished();
    }
    return this.tracked.map((t) => t?.result).filter((r): r is JobEnd => r !== undefined);
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

  private finish(t: Tracked, result: JobEnd): void {
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
    if (found.state === 'completed') this.finish(t, completedEnd(t, found.value));
    else if (found.state === 'failed') this.finish(t, failedEnd(t, found.reason));
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
    this.finish(t, failedEnd(t, 'the job left the queue without a result (removed by another process?)'));
  }
}
