// The stop's budget: each step of a SIGTERM stop gets its own bound, and the bounds sum to less than shutdown_timeout.

/**
 * The steps' bounds at the default shutdown_timeout (25 s), in ms; docs/shutdown-and-leadership.md has the table. For a
 * shorter shutdown_timeout every one shrinks in proportion; for a longer one only the work window grows.
 */
const STOP_STEPS_AT_DEFAULT = {
  /** Releasing the leader lease (it lapses by itself after the lease time anyway). */
  lease: 1_000,
  /** Closing the watcher and the leader's term. */
  watcher: 1_000,
  /** Dropping the requests still in flight, then moving the active jobs back to the queue. */
  handBack: 1_000,
  /** Closing the job runner, the job events, Redis, the service's connections and the status server (at once, then forced). */
  close: 1_000,
  /** After the stop, for the process to end by itself before it is ended (process.exit). */
  exit: 1_000,
  /** Kept between the planned exit and the safety net, for timers that fire late on a loaded machine. */
  slack: 1_000,
  /** Kept between the safety net and shutdown_timeout. */
  reserve: 3_000,
} as const;

/**
 * The least each step gets, however short shutdown_timeout is: dropping requests, handing jobs back and closing Redis
 * take some milliseconds whatever the setting, and a loaded machine fires timers late. Below about 2 s these floors
 * win: the active jobs still get the whole setting, and the process ends within 1.45 s after it at the latest.
 */
const STOP_STEP_FLOORS: Record<keyof typeof STOP_STEPS_AT_DEFAULT, number> = {
  lease: 100,
  watcher: 100,
  handBack: 250,
  close: 250,
  exit: 250,
  slack: 500,
  reserve: 0,
};

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;

/** Offsets from the signal, in ms. */
export interface StopPlan {
  /** How long the lease release and the watcher's close may each take. */
  leaseMs: number;
  watcherMs: number;
  /** When the reconcile in progress and the active jobs must have ended (else they are left behind or handed back). */
  workEndsAt: number;
  handBackMs: number;
  closeMs: number;
  /** When every step has ended, at the latest. */
  stopEndsAt: number;
  /** How long after the stop the process may take to end by itself. */
  exitMs: number;
  /** When a stop still running is cut short with exit 1 (a bug if it ever happens). */
  safetyNetAt: number;
}

/** The plan of a stop under `shutdownTimeoutMs` (shutdown_timeout). */
export function stopPlan(shutdownTimeoutMs: number): StopPlan {
  const total = Math.max(0, shutdownTimeoutMs);
  const scale = Math.min(1, total / DEFAULT_SHUTDOWN_TIMEOUT_MS);
  const part = (step: keyof typeof STOP_STEPS_AT_DEFAULT): number =>
    Math.max(STOP_STEP_FLOORS[step], Math.round(STOP_STEPS_AT_DEFAULT[step] * scale));
  const [leaseMs, watcherMs, handBackMs, closeMs, exitMs, slackMs] = [
    part('lease'),
    part('watcher'),
    part('handBack'),
    part('close'),
    part('exit'),
    part('slack'),
  ];
  // The shortest stop that still runs every step at its floor; a longer setting keeps its reserve before the deadline.
  const safetyNetAt = Math.max(total - part('reserve'), leaseMs + watcherMs + handBackMs + closeMs + exitMs + slackMs);
  const stopEndsAt = safetyNetAt - slackMs - exitMs;
  return {
    leaseMs,
    watcherMs,
    workEndsAt: stopEndsAt - closeMs - handBackMs,
    handBackMs,
    closeMs,
    stopEndsAt,
    exitMs,
    safetyNetAt,
  };
}
