// Each resource's sync and health after an apply (its --output json): its outcome (src/core/decide.ts), then what its job and the wait found, folded by src/core/resource-state.ts.
import type { HealthCondition, SyncCondition } from '../core/health.js';
import type { Outcome } from '../core/decide.js';
import type { SyncResult } from '../core/kinds/ports.js';
import { foldEvents, type ResourceEvent } from '../core/resource-state.js';
import type { ResourceResult } from './wait-jobs.js';

export interface ResourceConditions {
  key: string;
  sync: SyncCondition;
  health: HealthCondition;
  /** Why nothing was written (the outcome's reason code and message), when nothing was. */
  skip?: { code: string; message: string };
}

/** The event of a job's result as apply saw it; `at`: when apply saw it. */
function jobEvent(result: ResourceResult, at: string): ResourceEvent {
  const jobId = result.jobId ?? '';
  if (result.status === 'failed') return { type: 'job-failed', jobId, at, message: result.message ?? 'the job failed' };
  if (result.status === 'interrupted') return { type: 'interrupted', message: result.message ?? 'the apply was interrupted' };
  const read: SyncResult | undefined = result.outcome
    ? {
        outcome: result.outcome,
        new_revision: result.new_revision,
        ...(result.latestRevisionId !== undefined ? { latestRevisionId: result.latestRevisionId } : {}),
        ...(result.deploymentId ? { deploymentId: result.deploymentId } : {}),
        ...(result.message ? { message: result.message } : {}),
      }
    : undefined;
  // Without --wait nothing follows the revision it started; with --wait the rollout's reading comes next.
  return { type: 'job-completed', jobId, at, result: read, unfollowed: true };
}

/** What apply saw of a resource after its decision: its job's result (when it wrote), then the rollout the wait read. */
function eventsOf(outcome: Outcome, result: ResourceResult | undefined, at: string): ResourceEvent[] {
  const events: ResourceEvent[] = [];
  if (outcome.write && result) events.push(jobEvent(result, at));
  if (result?.health) events.push({ type: 'revision', health: result.health });
  return events;
}

/** One entry per planned resource (orphans left out): its sync and health after the apply. */
export function applyConditions(outcomes: ReadonlyMap<string, Outcome>, results: readonly ResourceResult[]): ResourceConditions[] {
  const byKey = new Map(results.map((r) => [r.key, r]));
  const at = new Date().toISOString();
  const out: ResourceConditions[] = [];
  for (const outcome of outcomes.values()) {
    if (outcome.action === 'orphan') continue;
    const context = { file: null, planReason: null, drift: outcome.drift, heldAtLastGood: false };
    const state = foldEvents(undefined, { type: 'decided', outcome, context }, eventsOf(outcome, byKey.get(outcome.key), at));
    const entry: ResourceConditions = { key: outcome.key, sync: state.sync, health: state.health };
    if (outcome.skip && outcome.skip.code !== 'Synced') entry.skip = outcome.skip;
    out.push(entry);
  }
  return out;
}
