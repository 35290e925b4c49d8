// apply --wait: after the jobs, following each new revision until it is active, and stopping at the first that fails.
import { setTimeout as sleep } from 'node:timers/promises';
import { revisionFailed, type HealthCondition } from '../core/health.js';
import { followedHealth } from '../core/rollout.js';
import { pollRollouts } from '../observe/rollouts.js';
import type { RevisionReads } from '../service/client.js';
import type { ResourceResult } from './apply-state.js';

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

/**
 * Follows the results marked with `startedBy` (src/apply/rollouts-to-follow.ts: the revisions this apply's jobs started,
 * and the rollouts already in progress before it), each the same way, the daemon's: one poll at a time reads each
 * still building (src/observe/rollouts.ts: GET …/revisions/{latest} while the service has it, else the list by
 * deployment_ids), and its health is its kind's of what was read, with the progress deadline counted from when the
 * revision began, or from the wait's start when the service does not say (src/core/rollout.ts). Stops
 * at the first revision that fails (CREATE_FAILED, BUILD_FAILED, DEPLOY_FAILED) or passes the progress deadline;
 * otherwise when every one is active, or at the timeout. Marks each result's `revision` and `health`: `active`,
 * `failed` (the revision failed or passed the deadline), `timeout`, or `building` (still building when the wait
 * stopped for another's failure).
 */
export async function waitForRevisions(
  client: RevisionReads,
  results: ResourceResult[],
  options: WaitOptions,
): Promise<void> {
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
    const followed = [...open.values()];
    const targets = followed.map((r) => ({
      key: r.key,
      kind: r.kind,
      deploymentId: r.deploymentId!,
      revisionId: r.latestRevisionId ?? undefined,
    }));
    const poll = await pollRollouts(client, targets);
    for (const r of followed) {
      const reading = poll.readings.get(r.key);
      if (reading) conclude(r, followedHealth(r, reading, { now: Date.now(), since: started, deadlineMs: progressMs }));
    }
    failed = waiting.filter((r) => r.revision === 'failed').length;
    options.onProgress?.({
      total: waiting.length,
      active: waiting.filter((r) => r.revision === 'active').length,
      building: open.size,
      failed,
      elapsedMs: Date.now() - started,
    });
    if (open.size === 0 || failed > 0) break;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(pollMs, left));
  }
  for (const r of open.values()) r.revision = failed > 0 ? 'building' : 'timeout';
}
