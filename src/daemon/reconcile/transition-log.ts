// One log line per health transition of a resource (warn when it degrades).
import type { Logger } from 'pino';
import type { HealthTransition } from '../status/resource-tracker.js';

/** One log line per health transition: a warning when it degrades, info otherwise. */
export function logTransition(log: Logger, t: HealthTransition): void {
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
