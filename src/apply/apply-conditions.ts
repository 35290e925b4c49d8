// Each resource's sync and health after an apply (its --output json): its outcome (src/core/decide.ts), then what its job and the wait found.
import type { HealthCondition, SyncCondition } from '../core/health.js';
import type { Outcome } from '../core/decide.js';
import { kindOf } from '../core/kinds/index.js';
import type { ResourceResult } from './wait-jobs.js';

export interface ResourceConditions {
  key: string;
  sync: SyncCondition;
  health: HealthCondition;
  /** Why nothing was written (the outcome's reason code and message), when nothing was. */
  skip?: { code: string; message: string };
}

function syncAfter(outcome: Outcome, result: ResourceResult | undefined): SyncCondition {
  if (!outcome.write || !result) return outcome.sync;
  if (result.status === 'failed') return { status: 'out_of_sync', reason: 'JobFailed', message: result.message ?? 'the job failed' };
  if (result.status === 'interrupted') return { status: 'out_of_sync', reason: 'Interrupted', message: result.message ?? 'the apply was interrupted' };
  return { status: 'synced', reason: 'Applied', message: `job ${result.jobId} ${result.outcome ?? 'finished'}` };
}

function healthAfter(outcome: Outcome, result: ResourceResult | undefined): HealthCondition {
  if (result?.health) return result.health;
  if (!result || result.status !== 'done') return outcome.health;
  if (result.new_revision) {
    const id = result.latestRevisionId ?? undefined;
    return { status: 'progressing', reason: 'RevisionBuilding', message: `${id ? `revision ${id}` : 'a new revision'} started (not waited for: --wait follows it)`, ...(id ? { revisionId: id } : {}) };
  }
  // Created without a revision to follow (a kind without a rollout): its kind's health now that it exists.
  if (outcome.action === 'create') return kindOf(outcome.kind).health({ action: 'noop', live: undefined });
  return outcome.health;
}

/** One entry per planned resource (orphans left out): its sync and health after the apply. */
export function applyConditions(outcomes: ReadonlyMap<string, Outcome>, results: readonly ResourceResult[]): ResourceConditions[] {
  const byKey = new Map(results.map((r) => [r.key, r]));
  const out: ResourceConditions[] = [];
  for (const outcome of outcomes.values()) {
    if (outcome.action === 'orphan') continue;
    const result = byKey.get(outcome.key);
    const entry: ResourceConditions = { key: outcome.key, sync: syncAfter(outcome, result), health: healthAfter(outcome, result) };
    if (outcome.skip && outcome.skip.code !== 'Synced') entry.skip = outcome.skip;
    out.push(entry);
  }
  return out;
}
