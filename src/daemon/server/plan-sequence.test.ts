// Unit tests of the plan by run in a /status delta (plan=delta): what a delta carries after an edited change, a removed
// resource, a file whose diagnostics went away, an insertion, and a token too old; and that the status page's own merge
// (script-plan.ts, run here in a VM) of those deltas is exactly the plan of a whole answer.
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { SCRIPT_PLAN } from './status-page/script-plan.js';
import { planRuns, PLAN_LISTS } from './plan-sequence.js';
import { RowSequence, statusAnswer, type StatusQuery } from './status-view.js';

type Plan = Record<string, unknown> & {
  changes: Array<Record<string, unknown>>;
  diagnostics: Array<Record<string, unknown>>;
};

function change(name: string, maxScale = 1, action = 'noop'): Record<string, unknown> {
  return {
    kind: 'Deployment',
    name,
    action,
    new_revision: false,
    fields: [{ path: 'spec.max_scale', before: maxScale, after: maxScale, sensitive: false }],
    reason: null,
  };
}

function warning(file: string, line = 1): Record<string, unknown> {
  return { severity: 'warning', file, line, column: 1, message: `${file} says nothing of x` };
}

function plan(names: string[], edit: Record<string, number> = {}): Plan {
  return {
    format_version: '1',
    summary: {
      create: 0,
      update: Object.keys(edit).length,
      adopt: 0,
      delete: 0,
      noop: names.length - Object.keys(edit).length,
      orphan: 0,
      blocked: 0,
      suspended: 0,
    },
    changes: names.map((n) => (n in edit ? change(n, edit[n], 'update') : change(n))),
    notes: [],
    diagnostics: names.flatMap((n) => [warning(`${n}.yaml`), warning(`${n}.yaml`, 2)]),
  };
}

const NAMES = Array.from({ length: 40 }, (_, i) => `app-${String(i).padStart(2, '0')}`);

function doc(p: unknown): Record<string, unknown> {
  return { format_version: '1', daemon: { pid: 1 }, resources: [], plan: p };
}

/** The status page's plan merge (script-plan.ts) in a fresh VM context, following answers as the page does. */
function page(): { take(answer: Record<string, unknown>): unknown } {
  const script = runInNewContext(`${SCRIPT_PLAN}\n({ holdPlan, mergedPlan })`) as {
    holdPlan(p: unknown): void;
    mergedPlan(d: unknown): unknown;
  };
  let held: unknown;
  return {
    take(answer) {
      if ('plan' in answer) {
        script.holdPlan(answer.plan);
        held = answer.plan;
      }
      if (answer.planDelta) held = script.mergedPlan(JSON.parse(JSON.stringify(answer.planDelta)));
      return held;
    },
  };
}

function ask(
  sequence: RowSequence,
  document: Record<string, unknown>,
  since: string,
  extra: Partial<StatusQuery> = { plan: 'delta' },
): Record<string, unknown> {
  // Through JSON, as on the wire.
  return JSON.parse(JSON.stringify(statusAnswer(document, [], { since, ...extra }, sequence))) as Record<
    string,
    unknown
  >;
}

function token(answer: Record<string, unknown>): string {
  return (answer.view as { sequence: string }).sequence;
}

describe('the plan by run in a delta', () => {
  it('an edited change is one run; the plan small fields come whole; the page merges it into the whole plan', () => {
    const sequence = new RowSequence('e');
    const follower = page();
    const first = ask(sequence, doc(plan(NAMES)), '');
    expect(first.plan).toEqual(plan(NAMES));
    follower.take(first);
    const edited = plan(NAMES, { 'app-07': 3 });
    const delta = ask(sequence, doc(edited), token(first));
    expect(Object.keys(delta)).toEqual(['format_version', 'planDelta', 'resources', 'view']);
    const planDelta = delta.planDelta as Record<string, any>;
    expect(Object.keys(planDelta)).toEqual(['format_version', 'summary', 'changes', 'notes', 'diagnostics']);
    expect(planDelta.summary).toEqual(edited.summary);
    expect(planDelta.changes).toEqual({
      changed: [{ key: 'Deployment/app-07', after: 'Deployment/app-06', entries: [change('app-07', 3, 'update')] }],
      removed: [],
    });
    expect(planDelta.diagnostics).toEqual({ changed: [], removed: [] });
    expect(follower.take(delta)).toEqual(edited);
    // From the newer token nothing changed: no plan at all.
    expect(Object.keys(ask(sequence, doc(edited), token(delta)))).toEqual(['format_version', 'resources', 'view']);
  });

  it('a removed resource is its key removed and the run after it moved; an inserted one lands in its place', () => {
    const sequence = new RowSequence('e');
    const follower = page();
    const first = ask(sequence, doc(plan(NAMES)), '');
    follower.take(first);
    const fewer = NAMES.filter((n) => n !== 'app-10');
    const removed = ask(sequence, doc(plan(fewer)), token(first));
    const changes = (removed.planDelta as Record<string, any>).changes;
    expect(changes.removed).toEqual(['Deployment/app-10']);
    expect(changes.changed.map((r: { key: string; after: string }) => [r.key, r.after])).toEqual([
      ['Deployment/app-11', 'Deployment/app-09'],
    ]);
    expect((removed.planDelta as Record<string, any>).diagnostics.removed).toEqual(['app-10.yaml']);
    expect(follower.take(removed)).toEqual(plan(fewer));
    const more = [...fewer.slice(0, 3), 'app-02b', ...fewer.slice(3)];
    const inserted = ask(sequence, doc(plan(more)), token(removed));
    expect((inserted.planDelta as Record<string, any>).changes.changed.map((r: { key: string }) => r.key)).toEqual([
      'Deployment/app-02b',
      'Deployment/app-03',
    ]);
    expect(follower.take(inserted)).toEqual(plan(more));
  });

  it('a file whose diagnostics went away is its key removed; a file with new ones is its run whole', () => {
    const sequence = new RowSequence('e');
    const follower = page();
    const before = plan(NAMES);
    const first = ask(sequence, doc(before), '');
    follower.take(first);
    const after = {
      ...before,
      diagnostics: before.diagnostics
        .filter((d) => d.file !== 'app-20.yaml')
        .map((d) => (d.file === 'app-30.yaml' && d.line === 2 ? { ...d, message: 'new' } : d)),
    };
    const delta = ask(sequence, doc(after), token(first));
    const diagnostics = (delta.planDelta as Record<string, any>).diagnostics;
    expect(diagnostics.removed).toEqual(['app-20.yaml']);
    expect(diagnostics.changed.map((r: { key: string; entries: unknown[] }) => [r.key, r.entries.length])).toEqual([
      ['app-21.yaml', 2],
      ['app-30.yaml', 2],
    ]);
    expect((delta.planDelta as Record<string, any>).changes).toEqual({ changed: [], removed: [] });
    expect(follower.take(delta)).toEqual(after);
  });

  it('a file named twice apart is two runs (file, file#2), in the plan order', () => {
    expect(
      planRuns([warning('a'), warning('a', 2), warning('b'), warning('a', 9)], PLAN_LISTS.diagnostics!).map((r) => [
        r.key,
        r.after,
        r.entries.length,
      ]),
    ).toEqual([
      ['a', null, 2],
      ['b', 'a', 1],
      ['a#2', 'b', 1],
    ]);
    const sequence = new RowSequence('e');
    const follower = page();
    const base = plan(NAMES.slice(0, 3));
    const first = ask(sequence, doc(base), '');
    follower.take(first);
    const split = {
      ...base,
      diagnostics: [...base.diagnostics, warning('app-00.yaml', 9)],
      health: [{ kind: 'Deployment', name: 'app-01', status: 'progressing', reason: 'x', message: 'y' }],
    };
    const delta = ask(sequence, doc(split), token(first));
    expect((delta.planDelta as Record<string, any>).diagnostics.changed.map((r: { key: string }) => r.key)).toEqual([
      'app-00.yaml#2',
    ]);
    expect(follower.take(delta)).toEqual(split);
    // health gone from the plan: the page drops it too.
    expect(follower.take(ask(sequence, doc(base), token(delta)))).toEqual(base);
  });

  it('a token too old is the full answer; a plan that was null, or a client without plan=delta, gets the plan whole', () => {
    const sequence = new RowSequence('e', 1);
    const first = ask(sequence, doc(plan(NAMES)), '');
    ask(sequence, doc(plan(NAMES.slice(2))), token(first));
    const old = ask(sequence, doc(plan(NAMES.slice(3))), token(first));
    expect((old.view as { delta: boolean }).delta).toBe(false);
    expect(old.plan).toEqual(plan(NAMES.slice(3)));

    const fresh = new RowSequence('f');
    const none = ask(fresh, doc(null), '');
    const filled = ask(fresh, doc(plan(NAMES)), token(none));
    expect((filled.view as { delta: boolean }).delta).toBe(true);
    expect(filled.plan).toEqual(plan(NAMES));
    expect(filled.planDelta).toBeUndefined();
    const whole = ask(fresh, doc(plan(NAMES, { 'app-01': 2 })), token(filled), {});
    expect(whole.plan).toEqual(plan(NAMES, { 'app-01': 2 }));
    expect(whole.planDelta).toBeUndefined();
  });
});
