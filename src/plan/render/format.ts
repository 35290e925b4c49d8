// Shared pieces of the plan renderers: value formatting, action symbols, the summary sentence.
import type { Action, FieldChange, Plan, PlanChange } from '../../core/model.js';
import { SENSITIVE } from '../../core/model.js';

export const SYMBOL: Record<Action, string> = { create: '+', update: '~', noop: ' ', orphan: '?', blocked: '!' };

/** One value on one line: JSON for data (strings quoted), the placeholder for sensitive values. */
export function formatValue(value: unknown, sensitive: boolean): string {
  if (sensitive) return SENSITIVE;
  if (value === undefined || value === null) return 'null';
  return JSON.stringify(value);
}

export type FieldKind = 'add' | 'remove' | 'change';

export function fieldKind(field: FieldChange): FieldKind {
  if (field.before === null || field.before === undefined) return 'add';
  if (field.after === null || field.after === undefined) return 'remove';
  return 'change';
}

/** Changes shown one by one: everything but noop (noops are only counted). */
export function listedChanges(plan: Plan): PlanChange[] {
  return plan.changes.filter((change) => change.action !== 'noop');
}

/**
 * Unchanged resources with something to say (a field the service reports in its own form, a live secret no manifest
 * declares): listed under Notes, apart from the changes. Suspended ones are left out: their note is only the suspension.
 */
export function notedUnchanged(plan: Plan): PlanChange[] {
  return plan.changes.filter((change) => change.action === 'noop' && change.reason !== null && !change.suspended);
}

/** Listed changes that carry converge/suspend (shown, never applied). */
export function suspendedCount(plan: Plan): number {
  return listedChanges(plan).filter((change) => change.suspended).length;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "Plan: 1 to create, ..." or "No changes. ..."; orphans and suspended changes get their own sentence. */
export function summarySentence(plan: Plan): string {
  const s = plan.summary;
  const suspended = suspendedCount(plan);
  const suspendedNote = suspended > 0 ? ` ${plural(suspended, 'suspended change is', 'suspended changes are')} shown but not applied.` : '';
  if (s.create + s.update + s.blocked === 0) {
    if (s.orphan === 0) return `No changes. Live state matches the manifests.${suspendedNote}`;
    const orphans = plural(s.orphan, 'live deployment is', 'live deployments are');
    return `No changes. Live state matches the manifests; ${orphans} in no manifest (orphaned, never deleted).${suspendedNote}`;
  }
  return `Plan: ${s.create} to create, ${s.update} to update, ${s.blocked} blocked, ${s.orphan} orphaned, ${s.noop} unchanged.${suspendedNote}`;
}

/** The words after a change's title: "(forces new revision)", "(suspended: not applied)". */
export function markers(change: PlanChange): string[] {
  const out: string[] = [];
  if (change.new_revision && change.action !== 'blocked') out.push('forces new revision');
  if (change.suspended) out.push('suspended: not applied');
  return out;
}
