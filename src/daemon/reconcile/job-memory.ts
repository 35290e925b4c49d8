// What the reconciler remembers of jobs: its own until they end, and what each resource's last job brought about.
import type { EnqueuedJob } from '../cycle/cycle-context.js';

/** Finished jobs are remembered this long for finishedSince (longer than any reconcile's listing takes). */
const FINISHED_KEPT_MS = 10 * 60_000;

/** At most this many enqueued jobs are remembered (the oldest is forgotten first). */
const JOBS_KEPT = 100_000;

export class JobMemory {
  private readonly jobs = new Map<string, EnqueuedJob>();
  /** Per resource, the desired state of its last job that finished, and when (for finishedSince). */
  private readonly finished = new Map<string, { desired: string; at: number }>();

  /** A job this reconciler enqueued. */
  enqueued(job: EnqueuedJob): void {
    this.jobs.set(job.jobId, job);
    if (this.jobs.size > JOBS_KEPT) this.jobs.delete(this.jobs.keys().next().value!);
  }

  /** The job this reconciler enqueued under `jobId`, forgotten now that it ended (undefined: not one of its own). */
  ended(jobId: string): EnqueuedJob | undefined {
    const job = this.jobs.get(jobId);
    this.jobs.delete(jobId);
    return job;
  }

  /** A job of `key` brought `desired` about now. */
  finishedNow(key: string, desired: string): void {
    this.finished.set(key, { desired, at: Date.now() });
  }

  /**
   * For a reconcile that starts at `started`: whether a job of a resource brought its desired state about since
   * (what is older than FINISHED_KEPT_MS is forgotten first).
   */
  finishedSince(started: number): (key: string, desired: string) => boolean {
    for (const [key, done] of this.finished) if (done.at < started - FINISHED_KEPT_MS) this.finished.delete(key);
    return (key, desired) => {
      const done = this.finished.get(key);
      return done !== undefined && done.desired === desired && done.at >= started;
    };
  }
}
