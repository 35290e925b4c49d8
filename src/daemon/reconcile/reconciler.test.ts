// The reconciler's answer to a job that sent nothing: decided again soon (backed off) while this replica leads, by cause, not at the next resync.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ReconcileJobResult } from '../../store/schema.js';
import type { EnqueuedJob } from '../cycle/cycle-context.js';
import { createMetrics } from '../telemetry/metrics.js';
import { Reconciler, type ReconcilerOptions } from './reconciler.js';

/** A reconciler whose runs are only recorded (no directory is read), leading while `fence` answers a token. */
function reconcilerWith(fence: () => number | undefined): {
  reconciler: Reconciler;
  requested: string[];
  lines: Array<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write: (chunk, _e, done) => (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), done()),
    }),
  );
  const context = { fence, memory: { set: async () => undefined } } as unknown as ReconcilerOptions['context'];
  const reconciler = new Reconciler({
    context,
    metrics: createMetrics({ processMetrics: false }),
    log,
    retryMs: 1_000,
    maxRetryMs: 60_000,
  });
  const requested: string[] = [];
  reconciler.request = async (trigger) => {
    requested.push(trigger);
    return undefined;
  };
  return { reconciler, requested, lines };
}

/** A job of this daemon's, as a reconcile hands it over when it is enqueued. */
function enqueued(reconciler: Reconciler, job: EnqueuedJob): void {
  (reconciler as unknown as { jobEnqueued(job: EnqueuedJob): void }).jobEnqueued(job);
}

const JOB: EnqueuedJob = {
  key: 'Deployment/web',
  jobId: 'Deployment/web@1',
  operation: 'create-deployment',
  desired: 'f'.repeat(64),
};
const FORMER: ReconcileJobResult = {
  outcome: 'unchanged',
  new_revision: false,
  notRun: 'former_leader',
  message: 'enqueued by a former leader (fencing token 1, current 2); dropped, nothing sent',
};

describe('Reconciler: a job of its own that sent nothing', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("dropped as a former leader's (the lease taken back after a Redis restart): a retry reconcile follows, backed off, no resync needed", async () => {
    const { reconciler, requested, lines } = reconcilerWith(() => 2);
    enqueued(reconciler, JOB);
    await reconciler.jobCompleted(JOB.jobId, FORMER);
    expect(lines.map((l) => l.msg)).toContain(
      'job sent nothing: enqueued under an earlier lease of this replica; reconciling again',
    );
    expect(requested).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(requested).toEqual(['retry']);
    // A former term's jobs cannot loop (each is dropped once): one more, arriving after the retry ran, waits the base
    // delay again, not a backoff grown by every drop before it.
    enqueued(reconciler, { ...JOB, jobId: 'Deployment/web@2' });
    await reconciler.jobCompleted('Deployment/web@2', FORMER);
    await vi.advanceTimersByTimeAsync(999);
    expect(requested).toEqual(['retry']);
    await vi.advanceTimersByTimeAsync(1);
    expect(requested).toEqual(['retry', 'retry']);
  });

  it('thirty of a former term dropped at once: one retry after the base delay, and a late one after it waits the base delay too', async () => {
    const { reconciler, requested } = reconcilerWith(() => 2);
    for (let i = 0; i < 30; i++) enqueued(reconciler, { ...JOB, jobId: `Deployment/web@${i}` });
    for (let i = 0; i < 29; i++) await reconciler.jobCompleted(`Deployment/web@${i}`, FORMER);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(requested).toEqual(['retry']);
    await reconciler.jobCompleted('Deployment/web@29', FORMER);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(requested).toEqual(['retry', 'retry']);
  });

  it('live state changed since the decision, again and again: each retry asked for waits twice as long as the one before', async () => {
    const { reconciler, requested } = reconcilerWith(() => 2);
    const changed: ReconcileJobResult = {
      ...FORMER,
      notRun: 'live_changed',
      message: 'not written: live state changed since the decision',
    };
    for (const [n, wait] of [
      [1, 1_000],
      [2, 2_000],
      [3, 4_000],
    ] as const) {
      enqueued(reconciler, { ...JOB, jobId: `Deployment/web@${n}` });
      enqueued(reconciler, { ...JOB, jobId: `Deployment/web@${n}b` });
      await reconciler.jobCompleted(`Deployment/web@${n}`, changed);
      await reconciler.jobCompleted(`Deployment/web@${n}b`, changed);
      await vi.advanceTimersByTimeAsync(wait - 1);
      expect(requested).toHaveLength(n - 1);
      await vi.advanceTimersByTimeAsync(1);
      expect(requested).toHaveLength(n);
    }
  });

  it('on a replica that no longer leads: nothing is asked for (the leader decides)', async () => {
    const { reconciler, requested } = reconcilerWith(() => undefined);
    enqueued(reconciler, JOB);
    await reconciler.jobCompleted(JOB.jobId, FORMER);
    enqueued(reconciler, { ...JOB, jobId: 'Deployment/web@2' });
    await reconciler.jobCompleted('Deployment/web@2', {
      ...FORMER,
      notRun: 'live_changed',
      message: 'not written: live state changed since the decision',
    });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(requested).toEqual([]);
  });
});
