// apply --wait: after the jobs, following each new revision until it is active, and stopping at the first that fails.
import { setTimeout as sleep } from 'node:timers/promises';
import { healthOfDeployment, healthOfRevision, progressDeadline, revisionFailed, type HealthCondition } from '../core/health.js';
import type { RevisionReads } from '../service/client.js';
import type { ResourceResult } from './wait-jobs.js';

/** Where the wait stands, for the progress line. */
export interface WaitProgress {
  total: number;
  active: number;
  building: number;
  failed: number;
  elapsedMs: number;
}

export interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
  /** A revision not active after this long is degraded (ProgressDeadlineExceeded) and ends the wait; default: none. */
  progressDeadlineMs?: number;
  onProgress?: (progress: WaitProgress) => void;
}

/** When the service says the revision began; else when the wait began. */
function startedAt(created: string | null | undefined, fallback: number): number {
  const at = created ? Date.parse(created) : Number.NaN;
  return Number.isFinite(at) ? Math.min(at, fallback) : fallback;
}

/**
 * Follows the results marked with `startedBy` (src/apply/rollouts-to-follow.ts: the revisions this apply's jobs started,
 * and the rollouts already in progress before it), each the same way: GET …/revisions/{latest} while the service has it (one
 * request per revision still building per poll), else the list by deployment_ids (active == latest, READY). Stops
 * at the first revision that fails (CREATE_FAILED, BUILD_FAILED, DEPLOY_FAILED) or passes the progress deadline;
 * otherwise when every one is active, or at the timeout. Marks each result's `revision` and `health`: `active`,
 * `failed` (the revision failed or passed the deadline), `timeout`, or `building` (still building when the wait
 * stopped for another's failure).
 */
export async function waitForRevisions(client: RevisionReads, results: ResourceResult[], options: WaitOptions): Promise<void> {
  const waiting = results.filter((r) => r.startedBy !== undefined && r.deploymentId);
  if (waiting.length === 0) return;
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const progressMs = options.progressDeadlineMs ?? Number.POSITIVE_INFINITY;
  const pollMs = options.pollMs ?? 2_000;
  const open = new Map(waiting.map((r) => [r.deploymentId!, r]));
  const conclude = (r: ResourceResult, health: HealthCondition): void => {
    r.health = health;
    if (health.status === 'healthy') r.revision = 'active';
    else if (health.status === 'degraded') r.revision = 'failed';
    else return;
    if (health.revisionStatus && revisionFailed(health.revisionStatus)) r.revisionStatus = health.revisionStatus;
    open.delete(r.deploymentId!);
  };
  let failed: number;
  for (;;) {
    const byList: ResourceResult[] = [];
    for (const r of [...open.values()]) {
      const revisionId = r.latestRevisionId;
      if (!revisionId || client.revisionReads === false) {
        byList.push(r);
        continue;
      }
      const answer = await client.readRevision(r.deploymentId!, revisionId);
      if (answer.outcome !== 'found') {
        byList.push(r);
        continue;
      }
      const since = startedAt(answer.revision.created_at, started);
      conclude(r, progressDeadline(healthOfRevision(revisionId, answer.revision.status), Date.now(), since, progressMs));
    }
    for (let i = 0; i < byList.length; i += 50) {
      const batch = byList.slice(i, i + 50);
      const live = await client.listDeploymentsById(batch.map((r) => r.deploymentId!));
      for (const d of live) {
        const r = open.get(d.id);
        if (r) conclude(r, healthOfDeployment(d, Date.now(), started, progressMs));
      }
    }
    failed = waiting.filter((r) => r.revision === 'failed').length;
    options.onProgress?.({ total: waiting.length, active: waiting.filter((r) => r.revision === 'active').length, building: open.size, failed, elapsedMs: Date.now() - started });
    if (open.size === 0 || failed > 0) break;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(pollMs, left));
  }
  for (const r of open.values()) r.revision = failed > 0 ? 'building' : 'timeout';
}
