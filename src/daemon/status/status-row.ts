// One row of the /status document (a managed resource): the resource's state (src/core/resource-state.ts) with the JSON contract's legacy fields, and the decision event a reconcile folds into it.
import type { DecisionContext, ResourceEvent, ResourceState } from '../../core/resource-state-model.js';
import { legacyFields, type LegacyFields } from '../../core/legacy-state.js';
import { liveOf } from '../../core/kinds/index.js';
import type { Outcome } from '../../core/decide.js';
import type { PlanChange } from '../../core/model.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';

/** A /status row: the resource's state, and the fields kept for the JSON contract (derived from it). */
export type ResourceStatus = ResourceState & LegacyFields;

/** The row of a resource's state, its fields in the contract's order. */
export function statusRow(state: ResourceState): ResourceStatus {
  const { key, kind, name, file, action, sync, health, reason, error, drift, heldAtLastGood, job, ...rest } = state;
  const { state: legacy, syncReason } = legacyFields(state);
  return {
    key,
    kind,
    name,
    file,
    action,
    state: legacy,
    sync,
    health,
    reason,
    error,
    drift,
    heldAtLastGood,
    job,
    ...rest,
    ...(syncReason ? { syncReason } : {}),
  };
}

/** What every row of one reconcile reads: the live deployments by name, the files kept at their last good version, the drift found. */
interface RowSources {
  liveByName: Map<string, ReconcileOutcome['live'][number]>;
  held: Map<string, ReconcileOutcome['held'][number]>;
  drift: Map<string, ReconcileOutcome['drift'][number]>;
}

/** The lookups of one reconcile's outcome that each resource's events read, built once per reconcile. */
export function rowSources(outcome: ReconcileOutcome): RowSources {
  return {
    liveByName: new Map(outcome.live.map((d) => [d.name, d])),
    held: new Map(outcome.held.map((h) => [h.key, h])),
    drift: new Map(outcome.drift.map((d) => [d.key, d])),
  };
}

/**
 * What one reconcile says of a planned resource: its outcome with the reconcile's context (file, drift, hold, live id,
 * applied record), then the flap guard's standing conflict, when there is one (src/core/resource-state.ts folds them).
 */
export function decisionEvents(
  change: PlanChange,
  decided: Outcome,
  outcome: ReconcileOutcome,
  sources: RowSources,
): [Extract<ResourceEvent, { type: 'decided' }>, ...ResourceEvent[]] {
  const key = decided.key;
  const found = sources.drift.get(key);
  const applied = outcome.applied?.get(key);
  const context: DecisionContext = {
    file: outcome.resources.get(key)?.location.file ?? sources.held.get(key)?.file ?? null,
    planReason: change.reason,
    drift: found ? { policy: found.policy, fields: found.fields, reason: found.reason } : null,
    heldAtLastGood: sources.held.has(key),
    hold: outcome.holds?.get(key),
    deploymentId: liveOf(change.kind, change.name, sources.liveByName)?.id,
    appliedFrom: applied?.manifestVersion ? { ...applied.manifestVersion, appliedAt: applied.appliedAt } : undefined,
    pendingDelete: change.pending_delete,
    pruneKept: outcome.resources.get(key)?.keep === true || (!outcome.resources.has(key) && applied?.keep === true),
    desired: outcome.fingerprints?.get(key),
  };
  const conflict = outcome.conflicts?.get(key);
  return [
    { type: 'decided', outcome: decided, context },
    ...(conflict ? [{ type: 'conflict' as const, conflict }] : []),
  ];
}
