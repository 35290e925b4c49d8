// The exit-code rule of `converge plan` (with and without --detailed-exitcode) and of `converge apply`, in one place.
import { sameVersion, type ManifestVersion } from './manifest-version.js';
import type { Plan } from './model.js';
import type { ResourceState } from './resource-state-model.js';

/** What the rule reads of a plan. */
export type PlanOutcome = Pick<Plan, 'summary' | 'changes' | 'diagnostics' | 'prune_refused'>;

/**
 * The plan holds an error: an error diagnostic, a resource blocked from being applied, or a prune a guard refused (the
 * deletes asked for are not made, so apply cannot converge; a refused prune is a blocked delete, not "no changes").
 */
function planHasErrors(plan: PlanOutcome): boolean {
  return (
    plan.summary.blocked > 0 || plan.prune_refused !== undefined || plan.diagnostics.some((d) => d.severity === 'error')
  );
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

/**
 * What the rule reads of each planned resource as the apply ends: its state, folded from its decision, its job's raw
 * result and the rollout --wait read (src/apply/apply-state.ts, with src/core/resource-state.ts, the daemon's fold).
 */
export type ResourceOutcome = Pick<ResourceState, 'sync' | 'health'> & {
  /** A degraded rollout that stands from earlier manifests on a resource this apply did not write (standsFromEarlier). */
  standing?: boolean;
};

/** How the apply ended: stopped by SIGINT or SIGTERM, whether --wait followed the rollouts, and --strict. */
export interface ApplyEnd {
  interrupted?: boolean;
  waited?: boolean;
  /** --strict: any degraded resource fails the apply, a failure that stands from earlier manifests too. */
  strict?: boolean;
}

/**
 * Whether a resource's degraded rollout stands from earlier manifests, so that it is this apply's warning, not its
 * failure: this apply wrote nothing to it, and converge's last write to it came from other manifests than the ones this
 * apply applies (both known). A re-run of the version whose build failed is that version's failure; a last write of
 * unknown manifests is not told from one of these.
 */
export function standsFromEarlier(
  degraded: boolean,
  wrote: boolean,
  lastWrite: ManifestVersion | undefined,
  applying: ManifestVersion | undefined,
): boolean {
  return degraded && !wrote && lastWrite !== undefined && applying !== undefined && !sameVersion(lastWrite, applying);
}

/**
 * Whether one resource converged: its sync is `synced` (nothing to write, or its job applied it) or `suspended`
 * (never written, by design), its rollout is not degraded (a revision that failed before this apply, found unchanged,
 * is not converged either), and with --wait it is not still building (not active at the timeout).
 */
function resourceConverged(r: ResourceOutcome, end: ApplyEnd): boolean {
  if (r.sync.status !== 'synced' && r.sync.status !== 'suspended') return false;
  if (r.health.status === 'degraded') return r.standing === true && end.strict !== true;
  return !(end.waited === true && r.health.status === 'progressing');
}

/**
 * Apply converged: it ran to its end (no SIGINT or SIGTERM stopped it: an interrupted apply is not converged, whatever
 * its jobs did before the signal, as its closing line says), the plan holds no error (a refused prune is one), and
 * every planned resource converged: no job failed, met a Conflict, sent nothing (live state changed, superseded) or was
 * interrupted, every awaited revision became active, and no rollout is degraded but one that stands from earlier
 * manifests on a resource this apply did not write (a warning, unless --strict).
 */
export function applyConverged(plan: PlanOutcome, resources: readonly ResourceOutcome[], end: ApplyEnd = {}): boolean {
  if (end.interrupted === true) return false;
  if (planHasErrors(plan)) return false;
  return resources.every((r) => resourceConverged(r, end));
}

/** `apply`: 0 when it converged, 1 otherwise (an interrupted apply included). */
export function applyExitCode(plan: PlanOutcome, resources: readonly ResourceOutcome[], end: ApplyEnd = {}): 0 | 1 {
  return applyConverged(plan, resources, end) ? 0 : 1;
}
