// The text of `converge apply`'s report: the plan's lines, each job's result, the interrupted, the rollouts that failed before it (this version's, or standing from earlier manifests) and the closing line.
import { skipLine, type Outcome } from '../core/decide.js';
import { formatDiagnostic } from '../core/diagnostics.js';
import { standsFromEarlier } from '../core/exit-code.js';
import { inListing, kindOf } from '../core/kinds/index.js';
import { versionLabel, type ManifestVersion } from '../core/manifest-version.js';
import {
  resourceKey,
  type AppliedRecord,
  type DesiredResource,
  type ListedDeployment,
  type Plan,
} from '../core/model.js';
import type { ResourceState } from '../core/resource-state-model.js';
import type { ResourceConditions, ResourceResult } from '../apply/apply-state.js';
import { summarySentence } from '../plan/render/format.js';
import { fieldLine } from '../plan/render/text.js';
import { groupBy } from '../core/group-by.js';

/** Reasons the plan lines below already say in their own words (blocked, orphaned), or that are no news (Synced). */
const SAID: ReadonlySet<string> = new Set(['Synced', 'PlanBlocked', 'ManifestErrors', 'Orphan']);

export function planLines(result: Plan, outcomes: ReadonlyMap<string, Outcome>): string[] {
  const lines = [
    summarySentence(result),
    ...(result.notes ?? [])
      .filter((note) => note.startsWith('prune ') || note.startsWith('partial plan'))
      .map((note) => `  Note: ${note}`),
  ];
  for (const change of result.changes) {
    if (change.action === 'blocked')
      lines.push(`  ! blocked ${change.kind}/${change.name}: ${change.reason ?? 'cannot be applied'}`);
    if (change.action === 'delete')
      lines.push(`  - delete ${change.kind}/${change.name} (${change.reason ?? 'no longer declared'})`);
    const outcome = outcomes.get(resourceKey(change.kind, change.name));
    const why = outcome && !SAID.has(outcome.skip?.code ?? 'Synced') ? skipLine(outcome) : undefined;
    if (why) lines.push(`  ${change.kind}/${change.name}: ${why}`);
  }
  for (const d of result.diagnostics) lines.push(`  ${formatDiagnostic(d)}`);
  return lines;
}

/** What a job did, and whether its write started a revision (minutes of build on the real service). */
function describeOutcome(r: ResourceResult): string {
  const revision = !kindOf(r.kind).rollout ? '' : r.new_revision ? '; a new revision started' : '; no new revision';
  switch (r.outcome) {
    case 'created':
      return `created${revision}`;
    case 'updated':
      return `updated${revision}`;
    case 'adopted':
      return `adopted${r.fields ? revision : ''}`;
    case 'deleted':
      return 'deleted';
    default:
      return 'nothing left to change';
  }
}

/** One resource's result, then each field its write sent, in the plan's format (a secret is "(sensitive)"). */
export function resultLines(r: ResourceResult): string[] {
  const label = r.status.padEnd(9);
  if (r.status === 'failed' || r.status === 'interrupted' || r.status === 'held')
    return [`  ${label} ${r.key}: ${r.message ?? r.status}`];
  const note = r.message ? ` (${r.message})` : '';
  return [
    `  ${label} ${r.key}: ${describeOutcome(r)}${note}`,
    ...(r.fields ?? []).map((field) => `      ${fieldLine(field)}`),
  ];
}

/**
 * The resources an interrupt left undone: one line per way they were left ("withdrawn before it ran", "handed back
 * while running"), with a count, not one line per job; a way that holds one resource names it.
 */
export function interruptedLines(results: ResourceResult[]): string[] {
  const interrupted = results.filter((r) => r.status === 'interrupted');
  const byMessage = groupBy(interrupted, (r) => r.message ?? 'interrupted');
  return [...byMessage].map(
    ([message, rs]) =>
      `  ${'interrupted'.padEnd(9)} ${rs.length === 1 ? rs[0]!.key : `${rs.length} resources`}: ${message}`,
  );
}

/** The live id of a declared resource whose kind the listing holds (a deployment), when it is live. */
export function liveIdOf(resource: DesiredResource | undefined, live: readonly ListedDeployment[]): string | undefined {
  if (!resource || !inListing(resource.kind)) return undefined;
  return live.find((d) => d.name === resource.name)?.id;
}

/**
 * Resources whose rollout is degraded and whose failure no job of this apply's wait reported (they were not written):
 * `standing`, those whose failure stands from earlier manifests (a warning unless --strict: src/core/exit-code.ts);
 * `failedBefore`, the others (this version's failure: a re-run of the commit whose build failed).
 */
export function failedRollouts(
  resources: readonly ResourceConditions[],
  results: readonly ResourceResult[],
  standing: ReadonlySet<string>,
): ApplyFailures {
  const waited = new Set(results.filter((r) => r.revision !== undefined).map((r) => r.key));
  const failed = resources.filter((r) => r.health.status === 'degraded' && !waited.has(r.key));
  return {
    failedBefore: failed.filter((r) => !standing.has(r.key)),
    standing: failed.filter((r) => standing.has(r.key)),
  };
}

/** The degraded rollouts no job of this apply reported: this version's failures, and those standing from earlier manifests. */
export interface ApplyFailures {
  failedBefore: ResourceConditions[];
  standing: ResourceConditions[];
}

/**
 * The keys of the resources whose degraded rollout stands from earlier manifests (standsFromEarlier): no write of this
 * apply was decided for them, and converge's last write to them came from other manifests than this apply's.
 */
export function standingKeys(
  states: readonly ResourceState[],
  outcomes: ReadonlyMap<string, Outcome>,
  applied: ReadonlyMap<string, AppliedRecord>,
  version: ManifestVersion | undefined,
): Set<string> {
  const keys = states.filter((s) =>
    standsFromEarlier(
      s.health.status === 'degraded',
      Boolean(outcomes.get(s.key)?.write),
      applied.get(s.key)?.manifestVersion,
      version,
    ),
  );
  return new Set(keys.map((s) => s.key));
}

/** The warning of a failure that stands from earlier manifests: what failed, from which manifests, and what to do. */
export function standingLine(f: ResourceConditions, lastWrite: ManifestVersion | undefined): string {
  const name = f.key.slice(f.key.indexOf('/') + 1);
  const revision = `${f.health.revisionId ? `revision ${f.health.revisionId} ` : ''}${f.health.revisionStatus ?? f.health.reason}`;
  const from = lastWrite ? `manifests ${versionLabel(lastWrite)}` : 'earlier manifests';
  return `  ${'warning'.padEnd(9)} ${f.key}: ${revision} stands from ${from}, not from this apply (it wrote nothing to it): fix its manifest (the next version rebuilds it) or release it on the daemon with "converge reconcile --retry-failed ${name}"; --strict fails the apply on it`;
}

/** The closing line of a text apply: how it ended, the jobs' counts, and why it did not converge. */
export function closingLine(
  results: ResourceResult[],
  converged: boolean,
  result: Plan,
  interrupted: NodeJS.Signals | undefined,
  failures: ApplyFailures,
): string {
  const { failedBefore, standing } = failures;
  // The counts are of jobs: a rollout already in progress that --wait followed had none.
  const count = (status: ResourceResult['status']): number =>
    results.filter((r) => r.jobId !== undefined && r.status === status).length;
  const counts = `${count('done')} done, ${count('unchanged')} unchanged, ${count('failed')} failed`;
  if (interrupted)
    return `Apply interrupted (${interrupted}): ${counts}, ${count('interrupted')} not done; not converged. No job is left locked or queued.`;
  if (converged) {
    const matches = result.targets
      ? `The targeted resources match their manifests (partial apply: --target ${result.targets.join(', ')}).`
      : 'Live state matches the manifests.';
    const stays =
      standing.length === 0
        ? ''
        : ` ${standing.length} resource${standing.length === 1 ? ' stays' : 's stay'} degraded from earlier manifests (warning above; --strict fails the apply on ${standing.length === 1 ? 'it' : 'them'}).`;
    return `Apply complete: ${counts}. ${matches}${stays}`;
  }
  const why: string[] = [];
  if (count('failed') > 0) why.push('jobs failed');
  const held = results.filter((r) => r.status === 'held').length;
  if (held > 0) why.push(`${held} held in a later wave`);
  const failed = [
    ...results
      .filter((r) => r.revision === 'failed')
      .map((r) => ({ key: r.key, health: r.health, status: r.revisionStatus })),
    ...[...failedBefore, ...standing].map((f) => ({ key: f.key, health: f.health, status: f.health.revisionStatus })),
  ];
  if (failed.length > 0)
    why.push(
      `revision failed: ${failed.map((f) => `${f.key} ${f.health?.revisionId ?? ''} ${f.status ?? f.health?.reason ?? ''}`.replace(/\s+/g, ' ').trim()).join('; ')}`,
    );
  if (results.some((r) => r.revision === 'timeout')) why.push('revisions not active in time');
  if (result.summary.blocked > 0) why.push(`${result.summary.blocked} blocked`);
  if (result.diagnostics.some((d) => d.severity === 'error')) why.push('manifest errors');
  if (result.prune_refused) why.push(result.prune_refused);
  return `Apply incomplete: ${counts}; not converged (${why.join(', ')}).`;
}
