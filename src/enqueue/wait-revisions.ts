// apply --wait: after the jobs, waiting for each new revision to become active.
import { setTimeout as sleep } from 'node:timers/promises';
import type { LiveDeployment } from '../core/model.js';
import type { ServiceClient } from '../service/client.js';
import type { ResourceResult } from './wait-jobs.js';

export interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
  onProgress?: (active: number, total: number) => void;
}

function revisionActive(d: LiveDeployment): boolean {
  return d.status === 'READY' && !!d.latest_revision_id && d.active_revision_id === d.latest_revision_id;
}

/**
 * Polls the deployments whose job started a new revision until each is READY with active_revision_id ==
 * latest_revision_id, or the timeout. Marks each result's `revision`.
 */
export async function waitForRevisions(client: ServiceClient, results: ResourceResult[], options: WaitOptions): Promise<void> {
  const waiting = results.filter((r) => r.status === 'done' && r.new_revision && r.deploymentId);
  if (waiting.length === 0) return;
  const deadline = Date.now() + options.timeoutMs;
  const pollMs = options.pollMs ?? 2_000;
  const open = new Map(waiting.map((r) => [r.deploymentId!, r]));
  for (;;) {
    const ids = [...open.keys()];
    const live: LiveDeployment[] = [];
    for (let i = 0; i < ids.length; i += 50) live.push(...(await client.listDeployments({ deployment_ids: ids.slice(i, i + 50) })));
    for (const d of live) {
      const r = open.get(d.id);
      if (r && revisionActive(d)) {
        r.revision = 'active';
        open.delete(d.id);
      }
    }
    options.onProgress?.(waiting.length - open.size, waiting.length);
    if (open.size === 0) return;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(pollMs, left));
  }
  for (const r of open.values()) r.revision = 'timeout';
}
