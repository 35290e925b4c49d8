// One log line per health transition of a resource (warn when it degrades), and the count of each failed revision.
import type { Logger } from 'pino';
import type { HealthTransition } from '../status/resource-tracker.js';
import { REVISION_FAILURE_REASONS, type RevisionFailureReason } from '../../core/health.js';
import type { DaemonMetrics } from '../telemetry/metrics.js';

/** One log line per health transition: a warning when it degrades, info otherwise. */
function logTransition(log: Logger, t: HealthTransition): void {
  const fields = {
    key: t.key,
    health: t.to.status,
    reason: t.to.reason,
    from: t.from ? `${t.from.status}/${t.from.reason}` : null,
    ...(t.to.revisionId ? { revisionId: t.to.revisionId } : {}),
    ...(t.to.revisionStatus ? { revisionStatus: t.to.revisionStatus } : {}),
    detail: t.to.message,
  };
  if (t.to.status === 'degraded') log.warn(fields, 'health changed: degraded');
  else log.info(fields, `health changed: ${t.to.status}`);
}

/** Logs each health transition once and counts each failed revision once. */
export function logTransitions(log: Logger, metrics: Pick<DaemonMetrics, 'revisionFailures'>, transitions: readonly HealthTransition[]): void {
  for (const t of transitions) {
    logTransition(log, t);
    const failure: RevisionFailureReason | undefined = REVISION_FAILURE_REASONS.find((r) => r === t.to.reason);
    const already = t.from?.status === 'degraded' && t.from.revisionId === t.to.revisionId;
    if (failure && t.to.status === 'degraded' && !already) metrics.revisionFailures.inc({ reason: failure });
  }
}
