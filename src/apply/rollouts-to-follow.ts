// apply --wait: which rollouts it follows: the revisions its jobs started, and those already in progress before it (an earlier apply's, the daemon's).
import type { Outcome } from '../core/decide.js';
import { liveOf } from '../core/kinds/index.js';
import type { ListedDeployment } from '../core/model.js';
import type { ResourceResult } from './apply-state.js';

/** Whether a job finished without starting a revision (nothing written, or a write that starts none). */
function finishedWithoutRevision(result: ResourceResult): boolean {
  return (result.status === 'done' || result.status === 'unchanged') && !result.new_revision;
}

/**
 * The results --wait follows, each marked with who started its revision (`startedBy`):
 * - `apply`: a job of this apply whose write started a new revision;
 * - `earlier`: a planned resource whose health was `progressing` when the apply read it (its latest revision neither
 *   active nor failed: src/core/kinds/deployment/health.ts) and whose job, if it had one, started no revision. A
 *   resource with no job gets a result of its own (status `unchanged`, no `jobId`): nothing is written for it.
 * Returns the job results (in their order) followed by those added; a job that failed or was interrupted is not
 * followed. The results are marked in place.
 */
export function rolloutsToFollow(
  results: readonly ResourceResult[],
  outcomes: ReadonlyMap<string, Outcome>,
  live: readonly ListedDeployment[],
): ResourceResult[] {
  const byKey = new Map(results.map((r) => [r.key, r]));
  const liveByName = new Map(live.map((d) => [d.name, d]));
  for (const r of results) if (r.status === 'done' && r.new_revision && r.deploymentId) r.startedBy = 'apply';
  const added: ResourceResult[] = [];
  for (const outcome of outcomes.values()) {
    if (outcome.action === 'orphan' || outcome.action === 'delete' || outcome.health.status !== 'progressing') continue;
    const result = byKey.get(outcome.key);
    if (result && !finishedWithoutRevision(result)) continue;
    const deploymentId = result?.deploymentId ?? liveOf(outcome.kind, outcome.name, liveByName)?.id;
    if (!deploymentId) continue;
    // A job that ran read the deployment after the plan did: its latest revision is the newer word.
    const latestRevisionId = result?.latestRevisionId ?? outcome.health.revisionId ?? null;
    const followed: ResourceResult = result ?? {
      kind: outcome.kind,
      name: outcome.name,
      key: outcome.key,
      status: 'unchanged',
      new_revision: false,
    };
    followed.deploymentId = deploymentId;
    followed.latestRevisionId = latestRevisionId;
    followed.startedBy = 'earlier';
    if (!result) added.push(followed);
  }
  return [...results, ...added];
}
