// Live state the plan just listed, handed to in-process workers so a job can skip its re-read while that state is fresh.
import type { LiveDeployment } from '../core/model.js';

/**
 * How long a deployment the plan listed may stand in for the worker's re-read. Past it the job reads live state
 * itself. Short, because a PATCH carries resource_spec whole: a change someone made to an unmanaged resource_spec
 * field after the snapshot would be written over (a fresh read narrows that window to one round trip).
 */
export const SNAPSHOT_MAX_AGE_MS = 10_000;

export interface LiveSnapshot {
  deployment: LiveDeployment;
  /** Epoch ms when the listing that returned it began (an upper bound of its age). */
  readAt: number;
}

/**
 * Snapshots by deployment id, kept in the memory of the process that planned (never in Redis: live state may
 * hold secret values). Each is handed out once, and only while fresh: a second job of the same deployment, or a
 * retry, reads live state itself.
 */
export class LiveSnapshots {
  private readonly byId = new Map<string, LiveSnapshot>();
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(options: { maxAgeMs?: number; now?: () => number } = {}) {
    this.maxAgeMs = options.maxAgeMs ?? SNAPSHOT_MAX_AGE_MS;
    this.now = options.now ?? Date.now;
  }

  add(snapshot: LiveSnapshot): void {
    this.byId.set(snapshot.deployment.id, snapshot);
  }

  get size(): number {
    return this.byId.size;
  }

  /** The deployment `id` (which must still be named `name`) when its snapshot is fresh; removed either way. */
  take(id: string, name: string): LiveDeployment | undefined {
    const snapshot = this.byId.get(id);
    if (!snapshot) return undefined;
    this.byId.delete(id);
    if (snapshot.deployment.name !== name) return undefined;
    if (this.now() - snapshot.readAt > this.maxAgeMs) return undefined;
    return snapshot.deployment;
  }
}
