// Shared pieces of the plan renderers: value formatting, action symbols, the summary sentence, orphan and note lines.
import { waveLine } from '../../core/waves.js';
import type { Action, FieldChange, HealthNote, Plan, PlanChange, SecretSourceName } from '../../core/model.js';
import { resourceKey, SENSITIVE } from '../../core/model.js';
import { healthLine } from '../../core/decide.js';
import { countedByKind } from '../../core/kinds/index.js';

export const SYMBOL: Record<Action, string> = {
  create: '+',
  update: '~',
  adopt: '<',
  delete: '-',
  noop: ' ',
  orphan: '?',
  blocked: '!',
};

/** One value on one line: JSON for data (strings quoted), the placeholder for sensitive values. */
export function formatValue(value: unknown, sensitive: boolean): string {
  if (sensitive) return SENSITIVE;
  if (value === undefined || value === null) return 'null';
  return JSON.stringify(value);
}

/** One side of a secret's source as the manifest writes it, names only: "valueFrom.env: NAME", "valueFrom.file: PATH". */
export function sourceSide(source: SecretSourceName): string {
  if ('env' in source) return `valueFrom.env: ${source.env}`;
  if ('file' in source) return `valueFrom.file: ${source.file}`;
  return 'value: a literal in the manifest';
}

/** A secret's source change on one line, names only: "valueFrom.env: OLD -> NEW", each side whole when the kind changed. */
export function sourceChangeLine(source: NonNullable<FieldChange['source']>): string {
  const { before, after } = source;
  if ('env' in before && 'env' in after) return `valueFrom.env: ${before.env} -> ${after.env}`;
  if ('file' in before && 'file' in after) return `valueFrom.file: ${before.file} -> ${after.file}`;
  return `${sourceSide(before)} -> ${sourceSide(after)}`;
}

export type FieldKind = 'add' | 'remove' | 'change';

export function fieldKind(field: FieldChange): FieldKind {
  if (field.before === null || field.before === undefined) return 'add';
  if (field.after === null || field.after === undefined) return 'remove';
  return 'change';
}

/** Changes shown one by one: creates, updates (suspended ones too) and blocked resources; orphans are summarized. */
export function listedChanges(plan: Plan): PlanChange[] {
  const listed = plan.changes.filter((change) => change.action !== 'noop' && change.action !== 'orphan');
  if (!plan.waves) return listed;
  // Several waves: the changes in wave order (the sort is stable: by kind and name within a wave), deletes after the last.
  const order = (change: PlanChange): number => change.wave ?? Number.POSITIVE_INFINITY;
  return listed.sort((a, b) => order(a) - order(b));
}

/**
 * The heading of each wave of a plan whose writes span several, by the index in `changes` (listedChanges) of the wave's
 * first change: "wave 1: 3 to update, after wave 0 is healthy", and "after the last wave: 2 to delete".
 */
export function waveHeadings(plan: Plan, changes: readonly PlanChange[]): Map<number, string> {
  const headings = new Map<number, string>();
  if (!plan.waves) return headings;
  const waves = plan.waves;
  changes.forEach((change, i) => {
    const previous = i === 0 ? undefined : changes[i - 1]!;
    if (i > 0 && previous!.wave === change.wave) return;
    if (change.wave === undefined) {
      const deletes = changes.slice(i).filter((c) => c.action === 'delete').length;
      if (deletes > 0) headings.set(i, `after the last wave: ${deletes} to delete`);
      return;
    }
    const at = waves.findIndex((w) => w.wave === change.wave);
    headings.set(i, at < 0 ? `wave ${change.wave}: nothing to write` : waveLine(waves[at]!, waves[at - 1]));
  });
  return headings;
}

/**
 * Unchanged resources with something to say (a field the service reports in its own form, a live secret no manifest
 * declares): listed under Notes, apart from the changes. Suspended ones are left out: their note is only the suspension.
 */
export function notedUnchanged(plan: Plan): PlanChange[] {
  return plan.changes.filter((change) => change.action === 'noop' && change.reason !== null && !change.suspended);
}

/** Live deployments in no manifest that converge never applied: one summary line, or a list on request. */
export function orphanNames(plan: Plan): string[] {
  return unreleasedOrphans(plan).map((change) => change.name);
}

/** The same orphans by resource key ("Deployment/web"). */
export function orphanKeys(plan: Plan): string[] {
  return unreleasedOrphans(plan).map((change) => resourceKey(change.kind, change.name));
}

function unreleasedOrphans(plan: Plan): PlanChange[] {
  return plan.changes.filter((change) => change.action === 'orphan' && !change.released);
}

/** Orphans converge applied once (their manifest is gone): each named once. */
export function releasedChanges(plan: Plan): PlanChange[] {
  return plan.changes.filter((change) => change.action === 'orphan' && change.released === true);
}

/**
 * "Deployment/x is no longer declared: converge owns it and its manifest is gone; converge apply --prune deletes it": the
 * change's reason (each released reason of src/plan/prune.ts starts with "no longer declared") after the name.
 */
export function releasedLine(change: PlanChange): string {
  const reason = change.reason?.startsWith('no longer declared')
    ? change.reason
    : 'no longer declared; converge stopped managing it';
  return `${change.kind}/${change.name} is ${reason}`;
}

/** How many orphan names the summary line shows before "and N more". */
export const ORPHANS_NAMED = 3;

function countedDeployments(count: number): string {
  return `${count} live deployment${count === 1 ? ' is' : 's are'} in no manifest`;
}

/**
 * The orphan summary: "13 live deployments are in no manifest: a, b, c and 10 more; --show-orphans lists them";
 * with `listed`, the heading of the list that follows.
 */
export function orphanSentence(names: readonly string[], listed: boolean): string {
  const head = countedDeployments(names.length);
  if (listed) return `${head} (converge never deletes):`;
  if (names.length <= ORPHANS_NAMED) return `${head}: ${names.join(', ')} (converge never deletes)`;
  return `${head}: ${names.slice(0, ORPHANS_NAMED).join(', ')} and ${names.length - ORPHANS_NAMED} more; --show-orphans lists them`;
}

/** The markdown heading of the collapsed orphan list. */
export function orphanHeading(count: number): string {
  return `${countedDeployments(count)} (converge never deletes)`;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * "Plan: 1 to create, ..." or "No changes. ..."; suspended changes are their own count ("1 suspended"), never
 * counted as creates or updates; orphans get their own sentence when nothing else changes.
 */
export function summarySentence(plan: Plan): string {
  const refused = plan.prune_refused === undefined ? '' : ' Prune refused: nothing is deleted (see the note on prune).';
  return `${changesSentence(plan)}${refused}`;
}

function changesSentence(plan: Plan): string {
  const s = plan.summary;
  const suspendedNote =
    s.suspended > 0
      ? ` ${plural(s.suspended, 'suspended change is', 'suspended changes are')} shown but not applied.`
      : '';
  if (s.create + s.update + s.adopt + s.delete + s.blocked === 0) {
    const failed = (plan.health ?? []).filter((h) => h.status === 'degraded').length;
    const matches = plan.targets
      ? 'No changes. The targeted resources match their manifests.'
      : 'No changes. Live state matches the manifests.';
    const head =
      plan.prune_refused !== undefined
        ? 'Nothing to create or update.'
        : failed > 0
          ? `No changes to write, but ${plural(failed, 'rollout', 'rollouts')} failed (see Health).`
          : s.suspended > 0
            ? 'No changes to apply.'
            : matches;
    if (s.orphan === 0) return `${head}${suspendedNote}`;
    // Counted per kind: an OAuth provider converge applied once is an orphan too, and not a deployment.
    const orphans = `${countedByKind(
      plan.changes.filter((c) => c.action === 'orphan'),
      'live',
    )} ${s.orphan === 1 ? 'is' : 'are'}`;
    const never = plan.prune_refused === undefined ? ' (orphaned, never deleted)' : '';
    return `${head.slice(0, -1)}; ${orphans} in no manifest${never}.${suspendedNote}`;
  }
  const suspended = s.suspended > 0 ? ` ${s.suspended} suspended,` : '';
  const adopt = s.adopt > 0 ? ` ${s.adopt} to adopt,` : '';
  const del = s.delete > 0 ? ` ${s.delete} to delete,` : '';
  return `Plan: ${s.create} to create, ${s.update} to update,${adopt}${del}${suspended} ${s.blocked} blocked, ${s.orphan} orphaned, ${s.noop} unchanged.${suspendedNote}`;
}

/** The words after a change's title: "(forces new revision)", "(suspended: not applied)". */
export function markers(change: PlanChange): string[] {
  const out: string[] = [];
  if (change.action === 'delete' && change.reason) out.push(change.reason);
  if (change.new_revision && change.action !== 'blocked') out.push('forces new revision');
  if (change.suspended) out.push('suspended: not applied');
  return out;
}

/** "Deployment/web: health degraded (RevisionBuildFailed): revision r1 ended BUILD_FAILED; …", one line per health note. */
export function healthNoteLine(note: HealthNote): string {
  return `${note.kind}/${note.name}: ${healthLine(note)}`;
}
