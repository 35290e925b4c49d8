// The model of a resource's state and of the events folded into it (src/core/resource-state.ts folds them).
import type { Outcome, SyncReason } from './decide.js';
import type { Conflict } from './flap-guard.js';
import type { HealthCondition, SyncCondition } from './health.js';
import { type JobFailure, type ResourceHold } from './holds.js';
import type { SyncResult } from './kinds/ports.js';
import type { ManifestVersion } from './manifest-version.js';
import type { Action, DriftPolicy, ResourceKind } from './model.js';

/** The resource's last job, as the daemon shows it. */
export interface JobView {
  id: string;
  state: 'queued' | 'completed' | 'failed';
  operation: string;
  outcome?: string;
  new_revision?: boolean;
  /** The service's message on failure, or a note. Never a secret. */
  message?: string;
  finishedAt?: string;
}

/** A standing conflict as a resource shows it (src/core/flap-guard.ts). */
export type ConflictView = Pick<Conflict, 'reason' | 'message' | 'since'> &
  Partial<Pick<Conflict, 'versions' | 'fields'>>;

/** What is known of one resource after its decision and the events since: the fold's result, read by every output. */
export interface ResourceState {
  key: string;
  kind: ResourceKind;
  name: string;
  /** Manifest file (relative) that declares it. */
  file: string | null;
  /** Action of the last plan. */
  action: Action;
  /** Whether live state matches the manifest, why not, and whether converge writes it. */
  sync: SyncCondition & { reason: SyncReason };
  /** Whether what was written runs: the latest revision deployed, building, failed (degraded) or unknown. */
  health: HealthCondition;
  /** Why converge does not write this resource although its plan differs (a failed revision of this desired state). */
  hold?: ResourceHold;
  /** The one line of the row: the plan's reason (why blocked, a note), or what holds it (SecretsUnknown, Conflict). */
  reason: string | null;
  /** The last failure (a failed job, a blocked manifest). */
  error: string | null;
  /** Drift found at the last reconcile: live left an unchanged manifest. */
  drift: { policy: DriftPolicy; fields: string[]; reason?: string } | null;
  /** The manifest file has errors; the last good version of the resource stays in force. */
  heldAtLastGood: boolean;
  /** With SecretsUnknown: the secrets (names only) that would be written. */
  secretsUnknown?: string[];
  /** The flap guard's conflict, once marked (kept until the next decision or an operator's release). */
  conflict?: ConflictView;
  /** The manifests converge's last write to the resource came from, and when it wrote. */
  appliedFrom?: ManifestVersion & { appliedAt: string };
  job: JobView | null;
  /** The live deployment's id, when known (to follow a revision that builds). */
  deploymentId?: string;
  /** Its delete waits (DeletePending): since when it is undeclared, when the grace ends (null: for a person). */
  pendingDelete?: { since: string; due: string | null; confirm: boolean };
  /** converge/prune: "false" keeps it: never deleted by prune (its manifest says so, or last said so before it went). */
  pruneKept?: true;
  /** The failed revision whose hold an operator released (converge reconcile --retry-failed): never held again. */
  releasedRevision?: string;
  /** The fingerprint of its desired state at the last decision (a hash: what a failed revision's hold names). */
  desired?: string;
  /** The revision a job of ours started, and the fingerprint of the desired state that job carried. */
  revisionDesired?: { revisionId: string; desired: string };
}

/** What a reconcile knows of the resource besides its outcome (the row's context). */
export interface DecisionContext {
  file: string | null;
  /** The plan's reason (why blocked, a note). */
  planReason: string | null;
  drift: ResourceState['drift'];
  heldAtLastGood: boolean;
  hold?: ResourceHold | undefined;
  /** The live side's id, when listed. */
  deploymentId?: string | undefined;
  /** What the applied state records of converge's last write. */
  appliedFrom?: ResourceState['appliedFrom'] | undefined;
  /** The delete that waits (the plan change's pending_delete). */
  pendingDelete?: ResourceState['pendingDelete'] | undefined;
  /** Kept by converge/prune: "false". */
  pruneKept?: boolean | undefined;
  /** The fingerprint of the desired state decided. */
  desired?: string | undefined;
}

/** The events that change a resource's state, each from one source. */
export type ResourceEvent =
  /** A reconcile decided it (src/core/decide.ts); what the state held before stays only where the outcome says so. */
  | { type: 'decided'; outcome: Outcome; context: DecisionContext }
  /**
   * Its job completed with `result` (undefined: a result this converge cannot read). `version`: the manifests its
   * desired state came from. `unfollowed`: nothing follows the revision it started (apply without --wait).
   * `appliedAt`: the time of the applied record its write left, Redis' clock (absent: `at`, the folder's own clock).
   */
  | {
      type: 'job-completed';
      jobId: string;
      at: string;
      appliedAt?: string | undefined;
      result: SyncResult | undefined;
      version?: ManifestVersion | undefined;
      unfollowed?: true;
      desired?: string | undefined;
      /** The job's operation: shown when the state names another job (one `converge apply` or a former leader enqueued). */
      operation?: string | undefined;
    }
  /**
   * Its job failed for good (no attempt left, or a failure that retrying cannot fix). `failure`: what the service
   * answered, as data (a refusal's status, a name taken); `desired`: the fingerprint the job carried, which a hold names.
   */
  | {
      type: 'job-failed';
      jobId: string;
      at: string;
      message: string;
      failure?: JobFailure | undefined;
      desired?: string | undefined;
      operation?: string | undefined;
    }
  /** The apply waiting for its job was stopped before the job had a result. */
  | { type: 'interrupted'; message: string }
  /** A reading of its rollout (the revision endpoint, the listing, or apply --wait). */
  | { type: 'revision'; health: HealthCondition }
  /**
   * A hold was stored for it, or released (undefined). `request`: the operator's command that released it
   * (`converge reconcile --retry-failed`), which its history entry names.
   */
  | { type: 'hold'; hold: ResourceHold | undefined; released?: string | undefined; request?: string | undefined }
  /** The flap guard holds it: a standing conflict, or the one its job met. */
  | { type: 'conflict'; conflict: ConflictView }
  /** An operator released its conflict (`request`: the command): no longer shown; the next reconcile says what holds. */
  | { type: 'conflict-released'; request?: string | undefined };
