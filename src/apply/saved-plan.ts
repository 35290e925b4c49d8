// A saved plan's writes from one observation (plan --out records them; apply --plan reads the same things again and keeps only these).
import { kindOf, liveView } from '../core/kinds/index.js';
import {
  resourceKey,
  type AppliedRecord,
  type DesiredResource,
  type LiveState,
  type ResourceKind,
} from '../core/model.js';
import type { PlannedWrite } from '../core/saved-plan/schema.js';
import type { Observed } from '../core/saved-plan/stale.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';
import { waveOf } from '../core/waves.js';

/** What one plan read: the desired resources and their secret hashes, the live side (deployments, providers), the applied records. */
export interface Observation {
  resources: ReadonlyMap<string, DesiredResource>;
  secretHashes: ReadonlyMap<string, Record<string, string>>;
  live: LiveState;
  applied: ReadonlyMap<string, AppliedRecord>;
}

/** Reads one resource out of an observation, the way a saved plan records it. */
export function observer(observation: Observation): (kind: ResourceKind, name: string) => Observed {
  const view = liveView(observation.live);
  return (kind, name) => {
    const key = resourceKey(kind, name);
    const resource = observation.resources.get(key);
    const secrets = observation.secretHashes.get(key) ?? {};
    return {
      secrets,
      desired: resource ? kindOf(resource.kind).fingerprint(resource, secrets) : undefined,
      live: kindOf(kind).liveStamp(name, view),
      applied_at: observation.applied.get(key)?.appliedAt ?? null,
    };
  };
}

/** The changes apply would enqueue, as a saved plan holds them: the decided write and what it was decided against. */
export function plannedWrites(changes: readonly DecidedJob[], observation: Observation): PlannedWrite[] {
  const observe = observer(observation);
  return changes.map(({ change, write, deploymentId, desired }) => {
    const seen = observe(change.kind, change.name);
    const key = resourceKey(change.kind, change.name);
    // A delete's wave is the one its manifest last declared (the applied record keeps it): deletes go in descending order.
    const wave =
      change.action === 'delete' ? (observation.applied.get(key)?.wave ?? 0) : waveOf(observation.resources.get(key));
    const action =
      change.action === 'create' || change.action === 'update' || change.action === 'adopt' ? change.action : 'delete';
    return {
      kind: change.kind,
      name: change.name,
      action,
      op: write?.op ?? 'delete',
      fields: write?.fields ?? [],
      ...(deploymentId ? { deployment_id: deploymentId } : {}),
      ...(desired ? { desired } : {}),
      ...(wave !== 0 ? { wave } : {}),
      secrets: { ...seen.secrets },
      seen: { live: seen.live, applied_at: seen.applied_at },
    };
  });
}

/** Of the changes a fresh plan would enqueue, those the saved plan holds (after stalenessOf found nothing changed: the same writes). */
export function plannedChanges(changes: readonly DecidedJob[], writes: readonly PlannedWrite[]): DecidedJob[] {
  const planned = new Set(writes.map((w) => resourceKey(w.kind, w.name)));
  return changes.filter(({ change }) => planned.has(resourceKey(change.kind, change.name)));
}
