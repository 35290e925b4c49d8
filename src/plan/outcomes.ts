// The one corridor from gathered input to decided outcomes (src/core/decide.ts) for plan, apply and the daemon's cycle, and the health notes a plan carries.
import { decide, type DecisionInput, type DecisionMode, type Outcome } from '../core/decide.js';
import { desiredFingerprint } from '../core/drift.js';
import type { Conflict } from '../core/flap-guard.js';
import type { ResourceHold } from '../core/holds.js';
import { inListing, liveOf, type RevisionReading } from '../core/kinds/index.js';
import {
  resourceKey,
  type DesiredResource,
  type DriftPolicy,
  type HealthNote,
  type ListedDeployment,
  type Plan,
} from '../core/model.js';

/** What converge remembers of each resource where it keeps a memory (the daemon's Redis): absent parts are not known. */
export interface DecisionMemory {
  /** The holds stored (src/core/holds.ts), by resourceKey; one applies only to the desired state it names. */
  holds?: ReadonlyMap<string, ResourceHold>;
  /** The flap guard's standing conflicts, by resourceKey (already released where the desired state changed). */
  conflicts?: ReadonlyMap<string, Conflict>;
  /** The fingerprint last seen in sync, by resourceKey. */
  remembered?: ReadonlyMap<string, string>;
  /** Resources of files with errors, kept at their last good version. */
  heldAtLastGood?: ReadonlySet<string>;
  /** Writes of converge's own whose answer was lost. */
  pendingWrites?: ReadonlySet<string>;
  /** Operator requests (`converge reconcile --retry-failed NAME`, `--write-secrets NAME`). */
  requests?: (key: string, resource: DesiredResource | undefined) => { rebuild: boolean; writeSecrets: boolean };
  /** A revision already followed (the rollout tracker), for a deployment whose latest revision was not read. */
  knownRevision?: (key: string, revisionId: string) => RevisionReading | undefined;
  /** Since when the deployment's latest revision is known to build (the progress deadline counts from it). */
  rolloutSince?: (key: string, revisionId: string) => number;
}

export interface OutcomeInputs {
  mode: DecisionMode;
  resources: ReadonlyMap<string, DesiredResource>;
  live: readonly ListedDeployment[];
  /** The latest revisions read (src/observe/revisions.ts), by resourceKey. */
  revisions: ReadonlyMap<string, RevisionReading>;
  /** The secret hashes the plan compared (src/plan/plan.ts): part of each desired state's fingerprint. */
  secretHashes: ReadonlyMap<string, Record<string, string>>;
  driftPolicy?: DriftPolicy;
  /** For the progress deadline of a revision read (its created_at). */
  now: number;
  progressDeadlineMs?: number;
  memory?: DecisionMemory;
  /** The decision of one resource: src/core/decide.ts `decide` unless a caller wraps it (a test counts its calls). */
  decide?: (input: DecisionInput) => Outcome;
}

/** The outcomes, with the input each was decided from, the fingerprints of the listed kinds and the holds in force. */
export interface DecidedOutcomes {
  outcomes: Map<string, Outcome>;
  inputs: Map<string, DecisionInput>;
  fingerprints: Map<string, string>;
  holds: Map<string, ResourceHold>;
}

/** One decision per planned change (orphans included: their outcome says why they are not written), by resourceKey. */
export function decideOutcomes(plan: Plan, inputs: OutcomeInputs): DecidedOutcomes {
  const memory = inputs.memory ?? {};
  const liveByName = new Map(inputs.live.map((d) => [d.name, d]));
  const deadlineMs = inputs.progressDeadlineMs ?? Number.POSITIVE_INFINITY;
  const decideOne = inputs.decide ?? decide;
  const decided: DecidedOutcomes = {
    outcomes: new Map(),
    inputs: new Map(),
    fingerprints: new Map(),
    holds: new Map(),
  };
  // The parts every resource's input reads alike are one object each, not one per resource (they are only read).
  const settings = { mode: inputs.mode, driftPolicy: inputs.driftPolicy ?? 'heal' } as const;
  const clockNotBuilding = { now: inputs.now, since: undefined, deadlineMs };
  const shared = sharedParts();
  for (const change of plan.changes) {
    const key = resourceKey(change.kind, change.name);
    const resource = inputs.resources.get(key);
    // Drift, holds and conflicts are told by the fingerprint, where the service lists the live side.
    const fingerprint =
      resource && inListing(resource.kind)
        ? desiredFingerprint(resource, inputs.secretHashes.get(key) ?? {})
        : undefined;
    if (fingerprint) decided.fingerprints.set(key, fingerprint);
    const hold = memory.holds?.get(key);
    if (hold && hold.desired === fingerprint) decided.holds.set(key, hold);
    const live = liveOf(change.kind, change.name, liveByName);
    const latest = live?.latest_revision_id ?? null;
    const since = latest === null ? undefined : memory.rolloutSince?.(key, latest);
    const decisionInput: DecisionInput = {
      change,
      fingerprint,
      live,
      revision: inputs.revisions.get(key) ?? (latest === null ? undefined : memory.knownRevision?.(key, latest)),
      settings,
      ...(memory.requests ? { requests: shared.requests(memory.requests(key, resource)) } : {}),
      hold,
      conflict: memory.conflicts?.get(key),
      remembered: memory.remembered?.get(key),
      heldAtLastGood: memory.heldAtLastGood?.has(key) === true,
      pendingWrite: memory.pendingWrites?.has(key) === true,
      clock: since === undefined ? clockNotBuilding : { now: inputs.now, since, deadlineMs },
    };
    if (resource) decisionInput.desired = shared.desired(resource);
    decided.inputs.set(key, decisionInput);
    decided.outcomes.set(key, decideOne(decisionInput));
  }
  return decided;
}

/** One object per value of the small parts of a decision's input that many resources share (requests, settings). */
function sharedParts() {
  const requests = new Map<string, { rebuild: boolean; writeSecrets: boolean }>();
  const desired = new Map<string, NonNullable<DecisionInput['desired']>>();
  return {
    requests(asked: { rebuild: boolean; writeSecrets: boolean }): { rebuild: boolean; writeSecrets: boolean } {
      const key = `${asked.rebuild}/${asked.writeSecrets}`;
      const known = requests.get(key);
      if (known) return known;
      requests.set(key, asked);
      return asked;
    },
    desired(resource: DesiredResource): NonNullable<DecisionInput['desired']> {
      const key = `${resource.suspend}/${resource.driftPolicy}`;
      const known = desired.get(key);
      if (known) return known;
      const made = { suspend: resource.suspend, driftPolicy: resource.driftPolicy };
      desired.set(key, made);
      return made;
    },
  };
}

/** The rollouts a plan notes: every planned resource whose health is progressing or degraded, in plan order. */
export function healthNotes(outcomes: ReadonlyMap<string, Outcome>): HealthNote[] {
  const notes: HealthNote[] = [];
  for (const o of outcomes.values()) {
    if (o.action === 'orphan' || (o.health.status !== 'progressing' && o.health.status !== 'degraded')) continue;
    notes.push({ kind: o.kind, name: o.name, ...o.health });
  }
  return notes;
}

/**
 * One note per planned write that the daemon holds (`holds`: as stored in Redis; one applies only to the desired state
 * it names): plan keeps no holds of its own, so it says which writes the daemon will not send, and why.
 */
export function heldNotes(
  changes: Plan['changes'],
  fingerprints: ReadonlyMap<string, string>,
  holds: ReadonlyMap<string, ResourceHold> | undefined,
): string[] {
  if (!holds || holds.size === 0) return [];
  const notes: string[] = [];
  for (const change of changes) {
    if (change.action !== 'create' && change.action !== 'update' && change.action !== 'adopt') continue;
    const key = resourceKey(change.kind, change.name);
    const hold = holds.get(key);
    if (hold && hold.desired === fingerprints.get(key))
      notes.push(`${key}: the daemon holds this desired state (${hold.reason}): ${hold.message}`);
  }
  return notes;
}
