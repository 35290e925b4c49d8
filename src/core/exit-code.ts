// The exit-code rule of `converge plan` (with and without --detailed-exitcode) and of `converge apply`, in one place.
import type { Plan } from './model.js';

/** What the rule reads of a plan. */
export type PlanOutcome = Pick<Plan, 'summary' | 'changes' | 'diagnostics' | 'prune_refused'>;

/** What the rule reads of one apply job's result. */
export interface JobOutcome {
  /** `interrupted`: the apply was stopped before the job had a result. */
  status: 'done' | 'unchanged' | 'failed' | 'interrupted';
  /** With --wait: whether the new revision became active (any other value: it did not); absent when nothing was waited for. */
  revision?: 'active' | 'failed' | 'timeout' | 'building';
}

/**
 * The plan holds an error: an error diagnostic, a resource blocked from being applied, or a prune a guard refused (the
 * deletes asked for are not made, so apply cannot converge; a refused prune is a blocked delete, not "no changes").
 */
function planHasErrors(plan: PlanOutcome): boolean {
  return plan.summary.blocked > 0 || plan.prune_refused !== undefined || plan.diagnostics.some((d) => d.severity === 'error');
}

/** The actions apply carries out: a write, a take-over, a delete (--prune). */
const APPLIED_ACTIONS: ReadonlySet<string> = new Set(['create', 'update', 'adopt', 'delete']);

/**
 * Apply would change something: a create, an update, an adopt or a delete that is not suspended. Suspended changes
 * are shown but never applied, and orphans are never changes (only a planned delete is).
 */
function planHasApplicableChanges(plan: PlanOutcome): boolean {
  return plan.changes.some((c) => APPLIED_ACTIONS.has(c.action) && !c.suspended);
}

/**
 * `plan`: 1 when the plan holds an error (an error diagnostic, a blocked resource, a refused prune), with or without
 * --detailed-exitcode, as Terraform's plan does; otherwise 0, or with --detailed-exitcode 2 when apply
 * would change something.
 */
export function planExitCode(plan: PlanOutcome, detailed: boolean): 0 | 1 | 2 {
  if (planHasErrors(plan)) return 1;
  if (!detailed) return 0;
  return planHasApplicableChanges(plan) ? 2 : 0;
}

/** What the rule reads of each resource's health as the apply ends (read, not guessed: src/core/decide.ts). */
export interface RolloutOutcome {
  health: { status: string };
}

/**
 * Apply converged: it ran to its end (no SIGINT or SIGTERM stopped it: an interrupted apply is not converged, whatever
 * its jobs did before the signal, as its closing line says), the plan holds no error (a refused prune is one), every job
 * finished (done or unchanged: none failed, none interrupted), every awaited new revision became active (none failed,
 * passed the progress deadline or the timeout), and no resource's rollout is degraded (a revision that failed before
 * this apply, found unchanged, is not converged either).
 */
export function applyConverged(plan: PlanOutcome, jobs: readonly JobOutcome[], rollouts: readonly RolloutOutcome[] = [], interrupted = false): boolean {
  if (interrupted) return false;
  if (planHasErrors(plan)) return false;
  if (rollouts.some((r) => r.health.status === 'degraded')) return false;
  return jobs.every((job) => (job.status === 'done' || job.status === 'unchanged') && (job.revision === undefined || job.revision === 'active'));
}

/** `apply`: 0 when it converged, 1 otherwise (an interrupted apply included). */
export function applyExitCode(plan: PlanOutcome, jobs: readonly JobOutcome[], rollouts: readonly RolloutOutcome[] = [], interrupted = false): 0 | 1 {
  return applyConverged(plan, jobs, rollouts, interrupted) ? 0 : 1;
}
