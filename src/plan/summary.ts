// Plan summary counts and the deterministic ordering of changes.
import type { Action, PlanChange } from '../core/model.js';
import { compareStrings } from '../core/values.js';

/** Counts per action, keys in the order of design.md §4. */
export function summarize(changes: readonly PlanChange[]): Record<Action, number> {
  const summary: Record<Action, number> = { create: 0, update: 0, noop: 0, orphan: 0, blocked: 0 };
  for (const change of changes) summary[change.action] += 1;
  return summary;
}

/** By kind, then name (code-unit order, locale-independent); stable for equal keys. */
export function sortChanges(changes: PlanChange[]): PlanChange[] {
  return changes.sort((a, b) => compareStrings(a.kind, b.kind) || compareStrings(a.name, b.name));
}
