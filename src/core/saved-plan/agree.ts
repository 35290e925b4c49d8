// What a saved plan may never do: widen what is applied. Its options must be the apply's own, and its rendered plan must agree with its writes. Pure.
import { resourceKey, type Plan, type PlanChange, type PlanSummary, type ResourceKind } from '../model.js';

/** The options of one plan or one apply: a saved plan's `options` (src/core/saved-plan/schema.ts), or the same made of `apply --plan`'s own settings. */
export interface PlanOptions {
  prune: boolean;
  max_deletes: number;
  adopt: 'auto' | 'explicit';
  name_prefix: string | null;
  targets?: string[] | undefined;
}

/** An option's value. */
type Flag = boolean | number | string | null | readonly string[];

/** How a flag reads in a message: `--prune`, `--max-deletes 5`, `no --target`. */
function flagOf(name: string, value: Flag): string {
  if (value === true) return `--${name}`;
  if (value === false || value === null || (Array.isArray(value) && value.length === 0)) return `no --${name}`;
  if (Array.isArray(value)) return value.map((v) => `--${name} ${v}`).join(' ');
  return `--${name} ${String(value)}`;
}

/**
 * Each option of the saved plan that differs from the apply's own (empty: they agree), one phrase each: "the plan was
 * made with --prune, this apply has no --prune". Targets compare as sets.
 */
export function optionDifferences(file: PlanOptions, ours: PlanOptions): string[] {
  const sorted = (targets: readonly string[] | undefined) => [...(targets ?? [])].sort();
  const pairs: Array<[string, Flag, Flag]> = [
    ['prune', file.prune, ours.prune],
    ['max-deletes', file.max_deletes, ours.max_deletes],
    ['adopt', file.adopt, ours.adopt],
    ['name-prefix', file.name_prefix, ours.name_prefix],
    ['target', sorted(file.targets), sorted(ours.targets)],
  ];
  return pairs
    .filter(([, then, now]) => JSON.stringify(then) !== JSON.stringify(now))
    .map(([name, then, now]) => `the plan was made with ${flagOf(name, then)}, this apply has ${flagOf(name, now)}`);
}

/** A create, update or adopt that carries converge/suspend counts as suspended only (the rule of src/plan/summary.ts). */
function summaryKey(change: PlanChange): keyof PlanSummary {
  const suspended =
    change.suspended === true &&
    (change.action === 'create' || change.action === 'update' || change.action === 'adopt');
  return suspended ? 'suspended' : change.action;
}

/**
 * Why the plan a saved plan shows disagrees with its writes, or undefined: it agrees. Each write must be a change of the
 * same resource and action in `plan.changes`, and each count of `plan.summary` the count of those changes, so that what
 * `plan --show` prints (and a reviewer read) names every write, a delete above all.
 */
export function planDisagreement(saved: {
  plan: Plan;
  writes: ReadonlyArray<{ kind: ResourceKind; name: string; action: PlanChange['action'] }>;
}): string | undefined {
  const counted: PlanSummary = {
    create: 0,
    update: 0,
    adopt: 0,
    delete: 0,
    noop: 0,
    orphan: 0,
    blocked: 0,
    suspended: 0,
  };
  for (const change of saved.plan.changes) counted[summaryKey(change)] += 1;
  const wrong = (Object.keys(counted) as Array<keyof PlanSummary>).filter(
    (key) => saved.plan.summary[key] !== counted[key],
  );
  if (wrong.length > 0)
    return `its summary says ${wrong.map((key) => `${saved.plan.summary[key]} to ${key}`).join(', ')}, its changes hold ${wrong.map((key) => counted[key]).join(', ')}`;
  const shown = new Map(saved.plan.changes.map((change) => [resourceKey(change.kind, change.name), change]));
  for (const write of saved.writes) {
    const key = resourceKey(write.kind, write.name);
    const change = shown.get(key);
    if (!change) return `it writes ${key} (${write.action}) but its plan does not show it`;
    if (change.action !== write.action || summaryKey(change) === 'suspended')
      return `it writes ${key} (${write.action}) but its plan shows ${summaryKey(change) === 'suspended' ? 'it suspended' : change.action}`;
  }
  return undefined;
}
