// A change of a resource's state as the tracker folds it, and the sinks it is handed to (StateFolds, the health transitions).
import type { HealthCondition } from '../../core/health.js';
import type { ResourceEvent, ResourceState } from '../../core/resource-state-model.js';
import type { ManifestVersion } from '../../core/manifest-version.js';

/**
 * What one change of the rows was: the events folded into one resource's state (a reconcile folds its decision and
 * what came with it at once), the state before and after, and the manifests it came from when known. The leader's
 * folds in Redis (src/daemon/status/event-recorder.ts, StateFolds) fold its events again over the state Redis holds.
 */
export interface TrackedChange {
  key: string;
  events: readonly ResourceEvent[];
  before: ResourceState | undefined;
  after: ResourceState;
  manifests?: ManifestVersion | undefined;
}

/** Where the tracker reports every change as it happens (must return at once). */
export interface ChangeSink {
  changed(change: TrackedChange): void;
  /** Resources no longer planned (their projection is dropped; their history stays). */
  removed(keys: readonly string[]): void;
}

/** Whether a fold changed a resource's health: its status, reason or revision (a transition, logged and counted once). */
export function healthChanged(before: HealthCondition | undefined, after: HealthCondition): boolean {
  return (
    !before ||
    before.status !== after.status ||
    before.reason !== after.reason ||
    before.revisionId !== after.revisionId
  );
}
