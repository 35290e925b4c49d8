// The daemon's stop steps that close its parts, each within its bound (the budget: src/daemon/lifecycle/stop-plan.ts).
import type { Logger } from 'pino';
import type { Jobs } from '../../jobs/open-jobs.js';
import type { JobEventsFeed } from '../../jobs/queue/job-events.js';
import type { JobRunner } from '../../jobs/runner/worker.js';
import type { DaemonService } from '../daemon-options.js';
import type { StatusServer } from '../server/status-server.js';
import { within } from '../within.js';
import { stopPlan } from './stop-plan.js';

/** How a stop step reports: the daemon's log, and its throttled warning of a background error. */
export interface StopLog {
  log: Logger;
  warn: (source: string, error: unknown) => void;
}

/** The parts the last step closes (each absent when it never started). */
export interface ClosingParts {
  runner: JobRunner | undefined;
  jobEvents: JobEventsFeed | undefined;
  jobs: Jobs | undefined;
  service: DaemonService | undefined;
  server: StatusServer | undefined;
}

/** One step, given at most `ms`; one warning when it is left unfinished. True when it finished. */
export async function bounded(out: StopLog, step: string, promise: Promise<void>, ms: number): Promise<boolean> {
  const done = await within(
    promise.catch((e: unknown) => out.warn(step, e)),
    ms,
  );
  if (!done.done) out.log.warn({ step, boundMs: ms }, 'shutdown step did not finish within its bound; left behind');
  return done.done;
}

/**
 * The last step: the job runner, the job events, Redis, the service and the status server close at once, each
 * within `ms`; a part not closed by then has its connections dropped (nothing is waited on after the stop).
 */
export async function closeAll(out: StopLog, parts: ClosingParts, ms: number, forceRunner: boolean): Promise<void> {
  const { runner, jobEvents, jobs, service, server } = parts;
  const steps: Array<[string, Promise<void> | undefined, () => unknown]> = [
    ['worker', runner?.close(forceRunner), () => runner?.disconnect()],
    ['job events', jobEvents?.close(), () => jobEvents?.disconnect()],
    ['redis', jobs?.close(), () => jobs?.disconnect()],
    ['service', service?.close(), () => service?.dropConnections()],
    ['status server', server?.close(), () => undefined],
  ];
  await Promise.all(
    steps.map(async ([step, closing, drop]) => {
      if (!closing) return;
      if (await bounded(out, step, closing, ms)) return;
      await Promise.resolve(drop()).catch((e: unknown) => out.warn(step, e));
    }),
  );
}

/**
 * Takes no new job and lets the active ones finish until the work window ends (`workMs`); then drops the service's
 * connections and hands the jobs still active back to the queue within `handBackMs` (another replica takes them at
 * once; with Redis away their locks lapse after job_lock and the stalled check does it). True when none was left.
 */
export async function stopRunner(
  log: Logger,
  runner: JobRunner | undefined,
  service: DaemonService | undefined,
  workMs: number,
  handBackMs: number,
): Promise<boolean> {
  if (!runner) return true;
  const finished = await within(runner.drain(), workMs);
  if (finished.done) return true;
  const handed = await within(
    runner.handBack(() => service?.dropConnections() ?? Promise.resolve()),
    handBackMs,
  );
  log.warn(
    { handedBack: handed.done ? handed.value.length : 0 },
    'active jobs did not finish before the deadline; handing them back to the queue',
  );
  return false;
}

/** The daemon's parts as its stop takes them, in order (each step skips a part that never started). */
export interface StopOrder extends ClosingParts {
  shutdownTimeout: number;
  releaseLease: () => Promise<void>;
  /** Stops the timers and watches that run on their own (revision poll, applied-state watch, clock watch). */
  stopTimers: () => void;
  stopWatcher: () => Promise<void>;
  /** Ends the reconcile in progress and the resync, and the leader's term. */
  stopReconcile: () => Promise<void>;
  closeNotifications: () => Promise<void>;
}

/**
 * The stop in its steps, each with its own bound (src/daemon/lifecycle/stop-plan.ts; docs/shutdown-and-leadership.md).
 * The lease goes first (it lapses by itself anyway); the reconcile in progress and the active jobs get the work window;
 * then the service's connections are dropped and the jobs still active handed back; then everything closes at once,
 * and what did not close in its bound is dropped (Redis frozen, a service that never answers).
 */
export async function stopInOrder(out: StopLog, s: StopOrder): Promise<void> {
  const plan = stopPlan(s.shutdownTimeout);
  const started = Date.now();
  const until = (offset: number): number => Math.max(0, started + offset - Date.now());
  await bounded(out, 'lease', s.releaseLease(), plan.leaseMs);
  s.stopTimers();
  await bounded(out, 'watcher', s.stopWatcher(), plan.watcherMs);
  const reconcile = await within(s.stopReconcile(), until(plan.workEndsAt));
  if (!reconcile.done) {
    out.log.warn(
      { workWindowMs: plan.workEndsAt },
      'the reconcile in progress did not end in the work window; left behind',
    );
  }
  // Deliveries in flight get their short grace inside the work window (docs/notifications.md); never past its end.
  await bounded(out, 'notifications', s.closeNotifications(), until(plan.workEndsAt));
  const finished = await stopRunner(out.log, s.runner, s.service, until(plan.workEndsAt), plan.handBackMs);
  const { runner, jobEvents, jobs, service, server } = s;
  await closeAll(out, { runner, jobEvents, jobs, service, server }, plan.closeMs, !finished);
}
