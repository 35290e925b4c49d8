// Apply through the queue: start in-process workers, enqueue one job per change a batch at a time, wait for every job.
import type { ServiceClient } from '../service/client.js';
import { literalSecretsOf } from '../sync/job-resource.js';
import { applyJobData, type ApplyChange } from './apply-jobs.js';
import { ENQUEUE_BATCH } from './enqueuer.js';
import type { QueueLogger } from './log.js';
import type { Jobs } from './open-jobs.js';
import { JobWaiter, type ResourceResult } from './wait-jobs.js';
import type { JobRunner, StartRunnerOptions } from './worker.js';

export interface RunApplyOptions {
  jobs: Jobs;
  client: ServiceClient;
  env: NodeJS.ProcessEnv;
  changes: readonly ApplyChange[];
  /** In-process workers (default true). Other worker processes on the same Redis may take jobs too. */
  startWorkers?: boolean;
  worker?: Partial<Omit<StartRunnerOptions, 'client' | 'env' | 'onError' | 'target'>>;
  log?: QueueLogger;
  onProgress?: (finished: number, total: number, latest: ResourceResult) => void;
  /** How often unfinished jobs are looked up directly, in case an event was missed. */
  pollMs?: number;
}

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

/** Enqueues every change, runs workers, and resolves with one result per change (in the given order). */
export async function runApply(options: RunApplyOptions): Promise<ResourceResult[]> {
  const { jobs } = options;
  const total = options.changes.length;
  if (total === 0) return [];
  const waiter = new JobWaiter(jobs.enqueuer, total, options.onProgress);
  const events = await jobs.watchEvents(
    { completed: (jobId, value) => waiter.completed(jobId, value), failed: (jobId, reason) => waiter.failed(jobId, reason) },
    'converge-apply-events',
  );
  let runner: JobRunner | undefined;
  // Literal secret values (--allow-literal-secrets) reach only these in-process workers, from the resources in memory.
  const literalSecrets = literalSecretsOf(options.changes.map((change) => change.resource));
  try {
    if (options.startWorkers !== false) {
      runner = await jobs.startRunner({
        client: options.client,
        env: options.env,
        ...(options.log ? { log: options.log } : {}),
        ...(literalSecrets ? { literalSecrets } : {}),
        ...options.worker,
      });
    }
    // A batch at a time: the first jobs start while the payloads of the later ones are still being built.
    const fill = runner ? slotsFilled(runner, Math.min(runner.slots, total)) : undefined;
    try {
      for (let from = 0; from < total; ) {
        // BullMQ fetches a worker's first jobs one round trip after another and starts none before all its slots
        // are filled: enqueue work between those round trips would leave every slot empty meanwhile.
        if (from === ENQUEUE_BATCH && fill) await fill.wait(RAMP_WAIT_MS);
        const size = from === 0 ? ENQUEUE_BATCH : LATER_ENQUEUE_BATCH;
        const batch = options.changes.slice(from, from + size);
        const at = from;
        await jobs.enqueuer.enqueue(applyJobData(batch), (enqueued, i) => waiter.track(at + i, batch[i]!, enqueued));
        from += size;
      }
    } finally {
      fill?.stop();
    }
    return await waiter.wait(options.pollMs ?? 5_000);
  } finally {
    await events.close();
    await runner?.close();
  }
}
