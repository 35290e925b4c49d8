// What one reconcile was, as /status, the reconciles' record in Redis and the findings' log show it.
import type { Plan } from '../../core/model.js';
import type { ManifestVersion } from '../../core/manifest-version.js';

/** One reconcile: its trigger, when it ran, whether it ended well, and what it found and enqueued. */
export interface ReconcileRecord {
  id: number;
  trigger: string;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  ok: boolean;
  error: string | null;
  summary: Plan['summary'] | null;
  files: number;
  live: number;
  enqueued: number;
  drifted: number;
  held: number;
  /** Resync cycle (BullMQ job id) this reconcile ran for. */
  cycle?: string;
  /** The manifests this reconcile read (git commit or content hash). */
  manifestVersion?: ManifestVersion;
}
