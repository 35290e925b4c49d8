// The exit-code rule of `plan --detailed-exitcode` and of `apply`.
import { describe, expect, it } from 'vitest';
import { applyConverged, applyExitCode, planExitCode, type PlanOutcome, type ResourceOutcome } from './exit-code.js';
import type { Action, PlanChange, PlanDiagnostic, PlanSummary } from './model.js';

function change(action: Action, extra: Partial<PlanChange> = {}): PlanChange {
  return { kind: 'Deployment', name: `d-${action}`, action, new_revision: false, fields: [], reason: null, ...extra };
}

function outcome(changes: PlanChange[], diagnostics: PlanDiagnostic[] = []): PlanOutcome {
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
  for (const c of changes) summary[c.action] += 1;
  return { summary, changes, diagnostics };
}

function diagnostic(severity: PlanDiagnostic['severity']): PlanDiagnostic {
  return { severity, file: 'apps.yaml', line: 1, column: 1, message: `a ${severity}` };
}

describe('planExitCode', () => {
  it.each([
    ['nothing but noops', [change('noop')], [], 0],
    ['a create (changes are not errors)', [change('create')], [], 0],
    ['a warning next to an update', [change('update')], [diagnostic('warning')], 0],
    ['a blocked resource', [change('blocked'), change('noop')], [], 1],
    ['an error diagnostic', [change('noop')], [diagnostic('error')], 1],
    [
      'an error diagnostic and a blocked resource next to a create',
      [change('create'), change('blocked')],
      [diagnostic('error')],
      1,
    ],
  ] as Array<[string, PlanChange[], PlanDiagnostic[], number]>)(
    'without --detailed-exitcode: %s -> %i',
    (_name, changes, diagnostics, code) => {
      expect(planExitCode(outcome(changes, diagnostics), false)).toBe(code);
    },
  );

  it.each([
    ['nothing but noops', [change('noop')], [], 0],
    ['orphans only (converge never deletes)', [change('orphan'), change('noop')], [], 0],
    ['a suspended create (shown, never applied)', [change('create', { suspended: true })], [], 0],
    ['a suspended update', [change('update', { suspended: true })], [], 0],
    ['a create', [change('create')], [], 2],
    ['an update', [change('update'), change('orphan')], [], 2],
    ['a warning next to a noop', [change('noop')], [diagnostic('warning')], 0],
    ['a warning next to an update', [change('update')], [diagnostic('warning')], 2],
    ['a blocked resource', [change('blocked')], [], 1],
    ['a blocked resource next to a create', [change('create'), change('blocked')], [], 1],
    ['an error diagnostic', [change('noop')], [diagnostic('error')], 1],
    ['an error diagnostic next to an update', [change('update')], [diagnostic('error')], 1],
  ] as Array<[string, PlanChange[], PlanDiagnostic[], number]>)(
    'with --detailed-exitcode: %s -> %i',
    (_name, changes, diagnostics, code) => {
      expect(planExitCode(outcome(changes, diagnostics), true)).toBe(code);
    },
  );

  it('a refused prune is an error, never "no changes": 1 with and without --detailed-exitcode', () => {
    const refused: PlanOutcome = {
      ...outcome([change('orphan', { released: true }), change('noop')]),
      prune_refused: 'prune refused, nothing is deleted: ...',
    };
    expect(planExitCode(refused, true)).toBe(1);
    expect(planExitCode(refused, false)).toBe(1);
    expect(planExitCode({ ...refused, prune_refused: undefined }, true)).toBe(0);
  });
});

/** A resource's folded state as the rule reads it: its sync reason (the status follows) and its health status. */
function state(reason: string, health = 'healthy'): ResourceOutcome {
  const status =
    reason === 'Synced' || reason === 'Applied'
      ? 'synced'
      : reason === 'Suspended'
        ? 'suspended'
        : reason === 'PlanBlocked'
          ? 'blocked'
          : 'out_of_sync';
  return {
    sync: { status, reason, message: reason },
    health: { status: health, reason: health, message: health },
  } as ResourceOutcome;
}

describe('applyExitCode: read from the folded state of each resource', () => {
  const clean = outcome([change('update'), change('noop')]);

  it.each([
    ['nothing planned', clean, [], {}, 0],
    ['every resource applied or in sync', clean, [state('Applied'), state('Synced')], {}, 0],
    ['a suspended resource (never written, by design)', clean, [state('Suspended'), state('Applied')], {}, 0],
    ['a revision still building without --wait', clean, [state('Applied', 'progressing')], {}, 0],
    ['awaited revisions active', clean, [state('Applied', 'healthy')], { waited: true }, 0],
    ['a failed job', clean, [state('Applied'), state('JobFailed')], {}, 1],
    ['a job that met a Conflict', clean, [state('Conflict')], {}, 1],
    ['a job that sent nothing: live state changed, or superseded', clean, [state('OutOfSync')], {}, 1],
    ['an interrupted job (Ctrl-C)', clean, [state('Applied'), state('Interrupted')], {}, 1],
    ['a revision not active at the --wait timeout', clean, [state('Applied', 'progressing')], { waited: true }, 1],
    ['a revision failed (or one that failed before, found unchanged)', clean, [state('Synced', 'degraded')], {}, 1],
    ['a blocked resource in the plan', outcome([change('blocked')]), [state('PlanBlocked')], {}, 1],
    ['an error diagnostic in the plan', outcome([change('noop')], [diagnostic('error')]), [], {}, 1],
    ['a warning in the plan', outcome([change('noop')], [diagnostic('warning')]), [state('Synced')], {}, 0],
    [
      'a prune a guard refused',
      { ...outcome([change('orphan', { released: true })]), prune_refused: 'prune refused, nothing is deleted: ...' },
      [],
      {},
      1,
    ],
  ] as Array<[string, PlanOutcome, ResourceOutcome[], { waited?: boolean }, number]>)(
    '%s -> %i',
    (_name, plan, resources, end, code) => {
      expect(applyExitCode(plan, resources, end)).toBe(code);
      expect(applyConverged(plan, resources, end)).toBe(code === 0);
    },
  );

  it('an interrupted apply is not converged, even when every job it enqueued finished before it stopped', () => {
    const resources = [state('Applied'), state('Applied')];
    expect(applyExitCode(clean, resources, { interrupted: true })).toBe(1);
    expect(applyConverged(clean, resources, { interrupted: true })).toBe(false);
    expect(applyExitCode(clean, [], { interrupted: true })).toBe(1);
  });
});
