// Plan to jobs: which planned changes of an apply become jobs (the step itself, shared with the daemon, is src/jobs/queue/decided-jobs.ts).
import type { Outcome } from '../core/decide.js';
import { liveOf } from '../core/kinds/index.js';
import { resourceKey, type DesiredResource, type ListedDeployment, type PlanChange } from '../core/model.js';
import { decidedJob, type DecidedJob } from '../jobs/queue/decided-jobs.js';

/**
 * Which planned changes become jobs, in plan order: those whose outcome (src/core/decide.ts) decided a write: creates,
 * updates, adopts and deletes; never noop, orphan, blocked or suspended ones.
 */
export function changesToApply(
  outcomes: ReadonlyMap<string, Pick<Outcome, 'write'>>,
  changes: readonly PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
  live: readonly ListedDeployment[] = [],
  /** Per resource, the hashes of its desired secret values (the plan input's): each change then carries its fingerprint. */
  secretHashes?: ReadonlyMap<string, Record<string, string>>,
): DecidedJob[] {
  const byName = new Map(live.map((d) => [d.name, d]));
  const out: DecidedJob[] = [];
  for (const change of changes) {
    const key = resourceKey(change.kind, change.name);
    const outcome = outcomes.get(key);
    if (!outcome) continue;
    const job = decidedJob(outcome, {
      change,
      resource: resources.get(key),
      liveId: liveOf(change.kind, change.name, byName)?.id,
      secretHashes: secretHashes ? (secretHashes.get(key) ?? {}) : undefined,
    });
    if (job) out.push(job);
  }
  return out;
}
