// The revision poll: every health_poll the leader follows the revisions still building, one poll at a time.
import type { Reconciler } from '../reconcile/reconciler.js';
import type { RequestHealth } from './readiness.js';

/** What the revision poll reads and whom it asks to follow the revisions. */
export interface RevisionPoll {
  reconciler: Reconciler;
  client: Parameters<Reconciler['followRevisions']>[0];
  /** The last answered and the last failed request to the service. */
  health: RequestHealth;
  /** Whether this replica leads a term now. */
  leading: () => boolean;
  stopping: () => boolean;
  intervalMs: number;
  warn: (source: string, error: unknown) => void;
}

/** Starts the poll; the timer is returned for the stop to clear (it never holds the process). */
export function startRevisionPoll(p: RevisionPoll): NodeJS.Timeout {
  let following = false;
  const timer = setInterval(() => {
    // While the service fails, only the reconciles (with their backoff) probe it: polling on top would not back off.
    // Only the leader follows rollouts (a standby's rows are its last term's; its reads would double the leader's).
    if (following || p.stopping() || !p.leading() || p.health.failAt > p.health.okAt) return;
    following = true;
    p.reconciler
      .followRevisions(p.client)
      .catch((e: unknown) => p.warn('revisions', e))
      .finally(() => (following = false));
  }, p.intervalMs);
  timer.unref();
  return timer;
}
