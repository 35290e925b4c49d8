// Plan summary counts and the deterministic ordering of changes.
import { inListing } from '../core/kinds/index.js';
import type { PlanChange, PlanSummary } from '../core/model.js';
import { compareStrings } from '../core/values.js';

/** A create or update that carries converge/suspend: shown, never applied, counted as suspended only. */
export function isSuspendedChange(change: PlanChange): boolean {
  return (
    change.suspended === true && (change.action === 'create' || change.action === 'update' || change.action === 'adopt')
  );
}

/** Counts per action, keys in the order of docs/contracts.md §3, then `suspended` (suspended creates and updates). */
export function summarize(changes: readonly PlanChange[]): PlanSummary {
  const summary: PlanSummary = {
    create: 0,
    update: 0,
    adopt: 0,
    delete: 0,
    noop: 0,
    orphan: 0,
    blocked: 0,
    suspended: 0,
  };
  for (const change of changes) {
    if (isSuspendedChange(change)) summary.suspended += 1;
    else summary[change.action] += 1;
  }
  return summary;
}

/** The orphans of the kinds the deployment listing holds: live deployments no manifest declares (converge_orphan_deployments). */
export function orphanDeployments(changes: readonly PlanChange[]): number {
  return changes.filter((change) => change.action === 'orphan' && inListing(change.kind)).length;
}

/** By kind, then name (code-unit order, locale-independent); stable for equal keys. */
export function sortChanges(changes: PlanChange[]): PlanChange[] {
  return changes.sort(compareChanges);
}

/** The plan's order of changes: by kind, then name. */
export function compareChanges(a: PlanChange, b: PlanChange): number {
  return compareStrings(a.kind, b.kind) || compareStrings(a.name, b.name);
}
