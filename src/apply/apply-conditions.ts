// Each resource's sync and health after an apply (its --output json): from the plan, the job results, and with --wait the rollouts read.
import { healthOfDeployment, type HealthCondition, type SyncCondition } from '../core/health.js';
import { kindOf } from '../core/kinds/index.js';
import { resourceKey, type LiveDeployment, type Plan } from '../core/model.js';
import type { ResourceResult } from './wait-jobs.js';

export interface ResourceConditions {
  key: string;
  sync: SyncCondition;
  health: HealthCondition;
}

function syncOf(change: Plan['changes'][number], result: ResourceResult | undefined): SyncCondition {
  if (change.action === 'blocked') return { status: 'blocked', reason: 'PlanBlocked', message: change.reason ?? 'the plan blocks it' };
  if (change.suspended) return { status: 'suspended', reason: 'Suspended', message: 'spec.suspend is true: changes are planned, never applied' };
  if (change.action === 'noop') return { status: 'synced', reason: 'Synced', message: 'live state matches the manifest' };
  if (!result) return { status: 'out_of_sync', reason: 'OutOfSync', message: change.reason ?? 'not applied' };
  if (result.status === 'failed') return { status: 'out_of_sync', reason: 'JobFailed', message: result.message ?? 'the job failed' };
  if (result.status === 'interrupted') return { status: 'out_of_sync', reason: 'Interrupted', message: result.message ?? 'the apply was interrupted' };
  return { status: 'synced', reason: 'Applied', message: `job ${result.jobId} ${result.outcome ?? 'finished'}` };
}

function healthOf(change: Plan['changes'][number], result: ResourceResult | undefined, live: LiveDeployment | undefined): HealthCondition {
  if (result?.health) return result.health;
  if (!kindOf(change.kind).listed) {
    return change.action === 'create' && result?.status !== 'done'
      ? { status: 'unknown', reason: 'AwaitingCreate', message: 'not created' }
      : { status: 'healthy', reason: 'NoRollout', message: `a ${change.kind} has no rollout: it is in force once written` };
  }
  if (result?.new_revision) {
    const id = result.latestRevisionId ?? undefined;
    return { status: 'progressing', reason: 'RevisionBuilding', message: `${id ? `revision ${id}` : 'a new revision'} started (not waited for: --wait follows it)`, ...(id ? { revisionId: id } : {}) };
  }
  if (!live) return { status: 'unknown', reason: 'AwaitingCreate', message: 'no live deployment of this name' };
  // Read at planning time: not followed further without --wait.
  return healthOfDeployment(live, 0, undefined, Number.POSITIVE_INFINITY);
}

/** One entry per planned resource (orphans left out): its sync and health. */
export function applyConditions(plan: Plan, results: readonly ResourceResult[], live: readonly LiveDeployment[]): ResourceConditions[] {
  const byKey = new Map(results.map((r) => [r.key, r]));
  const liveByName = new Map(live.map((d) => [d.name, d]));
  return plan.changes
    .filter((c) => c.action !== 'orphan')
    .map((change) => {
      const key = resourceKey(change.kind, change.name);
      const result = byKey.get(key);
      return { key, sync: syncOf(change, result), health: healthOf(change, result, kindOf(change.kind).listed ? liveByName.get(change.name) : undefined) };
    });
}
