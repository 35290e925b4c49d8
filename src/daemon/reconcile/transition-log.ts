// One log line per health transition of a resource (warn when it degrades) and one count per failed revision, from the fold's before and after (a sink of the tracker's changes).
import type { Logger } from 'pino';
import { REVISION_FAILURE_REASONS, type HealthCondition, type RevisionFailureReason } from '../../core/health.js';
import { healthChanged, type ChangeSink } from '../status/tracked-change.js';
import type { DaemonMetrics } from '../telemetry/metrics.js';

/** One log line per health transition: a warning when it degrades, info otherwise. */
function logTransition(log: Logger, key: string, from: HealthCondition | undefined, to: HealthCondition): void {
  const fields = {
    key,
    health: to.status,
    reason: to.reason,
    from: from ? `${from.status}/${from.reason}` : null,
    ...(to.revisionId ? { revisionId: to.revisionId } : {}),
    ...(to.revisionStatus ? { revisionStatus: to.revisionStatus } : {}),
    detail: to.message,
  };
  if (to.status === 'degraded') log.warn(fields, 'health changed: degraded');
  // A resource first seen healthy is no news (a first start over a healthy fleet of 10,000 would say so 10,000 times).
  else if (!from && to.status === 'healthy') log.debug(fields, 'health changed: healthy');
  else log.info(fields, `health changed: ${to.status}`);
}

/**
 * The health transitions of every fold, read from its before and after as it happens: each logged once, each failed
 * revision counted once (converge_revision_failures_total).
 */
export function healthTransitions(log: Logger, revisionFailures: DaemonMetrics['revisionFailures']): ChangeSink {
  return {
    changed({ key, before, after }) {
      const from = before?.health;
      const to = after.health;
      if (!healthChanged(from, to)) return;
      logTransition(log, key, from, to);
      const failure: RevisionFailureReason | undefined = REVISION_FAILURE_REASONS.find((r) => r === to.reason);
      const already = from?.status === 'degraded' && from.revisionId === to.revisionId;
      if (failure && to.status === 'degraded' && !already) revisionFailures.inc({ reason: failure });
    },
    removed() {},
  };
}
