// The one decision about one resource: from what is known about it, what converge writes, or why it writes nothing, and its sync and health (docs/decision.md).
import type { Conflict } from './flap-guard.js';
import type { HealthCondition, SyncCondition } from './health.js';
import { holdApplies, type ResourceHold } from './holds.js';
import { kindOf } from './kinds/index.js';
import type { RevisionReading, RolloutClock } from './kinds/kind.js';
import {
  resourceKey,
  type Action,
  type DriftPolicy,
  type ListedDeployment,
  type PlanChange,
  type ResourceKind,
} from './model.js';

/** Stable reason codes of sync (README: "Sync and health"); each names why the resource is, or is not, written. */
export const SYNC_REASONS = [
  'Synced',
  'Applied',
  'Applying',
  'JobFailed',
  'Interrupted',
  'SecretsUnknown',
  'DriftReported',
  'RevisionFailed',
  'WriteRefused',
  'NameTaken',
  'WaveHeld',
  'WaveWaiting',
  'WindowHeld',
  'Conflict',
  'OutOfSync',
  'PlanBlocked',
  'ManifestErrors',
  'Suspended',
  'Orphan',
  'DeletePending',
] as const;
export type SyncReason = (typeof SYNC_REASONS)[number];

/** Who asks: the daemon remembers in-sync states (drift) and holds blind secret writes; plan and apply do neither. */
export type DecisionMode = 'plan' | 'apply' | 'daemon';

/** A write of this resource that converge knows of, besides the one being decided. */
export type WriteInFlight =
  /** A job carrying this very desired state is queued or running (an earlier reconcile's, or just added). */
  | { state: 'queued'; jobId: string; operation: string }
  /** A job carrying this very desired state finished while this reconcile ran: the live state read predates it. */
  | { state: 'finished' };

export interface DecisionInput {
  /** The plan's change for the resource (action, fields, reason, suspended). */
  change: PlanChange;
  /** The manifest's own settings; absent when no valid manifest declares it (blocked, orphan, delete). */
  desired?: { suspend: boolean; driftPolicy?: DriftPolicy | undefined };
  /** The fingerprint of the desired state (kinds whose live side is listed: drift, holds and conflicts are about it). */
  fingerprint?: string | undefined;
  /** The live resource paired with it (kinds whose live side is listed). */
  live?: ListedDeployment | undefined;
  /** The latest revision, when read (the deployment's latest revision was not its active one). */
  revision?: RevisionReading | undefined;
  settings: { mode: DecisionMode; driftPolicy: DriftPolicy };
  /** Operator requests (`converge reconcile --retry-failed NAME`, `--write-secrets NAME`). */
  requests?: { rebuild?: boolean; writeSecrets?: boolean };
  /** The hold stored for the resource (src/core/holds.ts); applies only to the desired state it names. */
  hold?: ResourceHold | undefined;
  /** The flap guard's standing conflict for the resource (already released when the desired state changed). */
  conflict?: Conflict | undefined;
  /** The fingerprint last seen in sync (the daemon's memory; undefined: none). */
  remembered?: string | undefined;
  /** The resource's manifest file has errors: the plan blocks it at its last good version. */
  heldAtLastGood?: boolean;
  write?: WriteInFlight | undefined;
  /** A write of converge's own whose answer was lost: its job settles it from live state. */
  pendingWrite?: boolean;
  /** For the progress deadline: now, since when the rollout is known to build, the deadline. */
  clock?: RolloutClock;
}

/** What to write; `drift`: it reverts a live change of an unchanged manifest (heal). */
export interface DecidedWrite {
  op: 'create' | 'update' | 'rebuild' | 'delete';
  drift: boolean;
  /** The operator approved writing secrets that cannot be compared. */
  secretsApproved?: true;
  /** A change window blocked it and the operator overrode it: the command (`converge reconcile --override-window`). */
  windowOverride?: string;
  /** Why it is written: the decision's one line (kept when the job that carries it makes the sync say Applying). */
  message?: string;
}

export interface Outcome {
  key: string;
  kind: ResourceKind;
  name: string;
  action: Action;
  sync: SyncCondition & { reason: SyncReason };
  health: HealthCondition;
  /** The write to send; null: nothing is written, and `skip` says why. */
  write: DecidedWrite | null;
  /** Why nothing is written (the same code as `sync.reason`); null when `write` is set. */
  skip: { code: SyncReason; message: string } | null;
  /** Live left an unchanged manifest (the daemon's drift), and the policy applied. */
  drift: { policy: DriftPolicy; fields: string[] } | null;
  /** The fingerprint to remember as last seen in sync (the daemon's memory), when it changes. */
  remember?: string;
  /** SecretsUnknown: the secrets (names only) that are not rewritten blind. */
  secretsUnknown?: string[];
  /** Applying: the job that carries the write. */
  job?: { jobId: string; operation: string };
}

/**
 * What a planned create/update means to the daemon. Drift when the desired state is the one last seen in sync: then
 * only the live side changed. A changed desired state is applied under either policy. No memory of the resource is
 * never read as a manifest change under `report`: an update is then reported, never applied, until the manifest
 * changes. A first create is never drift; a create of a desired state once seen in sync is (deleted outside converge).
 */
export function decideDrift(
  remembered: string | undefined,
  fingerprint: string,
  policy: DriftPolicy,
  action: 'create' | 'update' = 'update',
): { kind: 'apply' | 'heal' | 'report' } {
  if (remembered === undefined)
    return action === 'update' && policy === 'report' ? { kind: 'report' } : { kind: 'apply' };
  if (remembered !== fingerprint) return { kind: 'apply' };
  return policy === 'report' ? { kind: 'report' } : { kind: 'heal' };
}

const WRITES: ReadonlySet<Action> = new Set(['create', 'update', 'adopt']);

/** Whether every field of the change is a secret written only because it cannot be compared. */
function onlyUncomparedSecrets(change: PlanChange): boolean {
  return change.fields.length > 0 && change.fields.every((f) => f.uncompared === true);
}

type Verdict = Pick<Outcome, 'sync' | 'write' | 'skip' | 'drift'> &
  Partial<Pick<Outcome, 'remember' | 'secretsUnknown' | 'job'>>;

function skip(
  status: SyncCondition['status'],
  code: SyncReason,
  message: string,
  extra: Partial<Verdict> = {},
): Verdict {
  return { sync: { status, reason: code, message }, write: null, skip: { code, message }, drift: null, ...extra };
}

function writeOf(
  op: DecidedWrite['op'],
  message: string,
  extra: Partial<DecidedWrite> = {},
  drift: Outcome['drift'] = null,
): Verdict {
  const write: DecidedWrite = { op, drift: false, ...extra, message };
  return { sync: { status: 'out_of_sync', reason: 'OutOfSync', message }, write, skip: null, drift };
}

function fieldsOf(change: PlanChange): string[] {
  return change.fields.map((f) => f.path);
}

/** A write in flight or just finished stands for the decided write: no second job, and no drift. */
function inFlight(write: WriteInFlight): Verdict {
  if (write.state === 'queued') {
    return skip('out_of_sync', 'Applying', `job ${write.jobId} (${write.operation}) is queued`, {
      job: { jobId: write.jobId, operation: write.operation },
    });
  }
  return skip('synced', 'Applied', 'a job of this desired state finished during the reconcile');
}

/** The daemon's rules for a planned create/update/adopt of a kind whose live side is listed (fingerprint known). */
function daemonWrite(input: DecisionInput, fingerprint: string): Verdict {
  const { change } = input;
  const op = change.action === 'create' ? 'create' : 'update';
  const approved = input.requests?.writeSecrets === true;
  const remembered = input.remembered;
  // A write of converge's own whose answer was lost (pending) is settled by its job from live state: not held.
  if (
    op === 'update' &&
    onlyUncomparedSecrets(change) &&
    input.pendingWrite !== true &&
    (approved || remembered === undefined || remembered === fingerprint)
  ) {
    if (approved)
      return writeOf('update', 'secrets the service hides are written once, on request (--write-secrets)', {
        secretsApproved: true,
      });
    const secrets = change.fields.map((f) => f.path.slice('secrets.'.length));
    const message = `the service hides ${secrets.join(', ')} and no applied state records them; not rewritten blind. Run "converge reconcile --write-secrets ${change.name}" to write them once`;
    return skip('out_of_sync', 'SecretsUnknown', message, {
      secretsUnknown: secrets,
      ...(remembered === undefined ? { remember: fingerprint } : {}),
    });
  }
  const policy = input.desired?.driftPolicy ?? input.settings.driftPolicy;
  if (holdApplies(input.hold, fingerprint)) {
    // The same input built a failed revision, or was refused for good: not sent again. A drift of other fields is still reported.
    // A refused create has no live side to have drifted.
    return skip(
      'out_of_sync',
      input.hold.reason,
      input.hold.message,
      op === 'create' ? {} : { drift: { policy: 'report', fields: fieldsOf(change) } },
    );
  }
  const drift = decideDrift(remembered, fingerprint, policy, op);
  if (drift.kind === 'report') {
    const message = 'live state drifted from the unchanged manifest; reported, not reverted (drift policy report)';
    // No memory: the reported desired state is remembered, so a later manifest change is told from this drift.
    return skip('out_of_sync', 'DriftReported', message, {
      drift: { policy, fields: fieldsOf(change) },
      ...(remembered === undefined ? { remember: fingerprint } : {}),
    });
  }
  if (drift.kind === 'heal')
    return writeOf(
      op,
      'live state drifted from the unchanged manifest: reverting it (drift policy heal)',
      { drift: true },
      { policy, fields: fieldsOf(change) },
    );
  return writeOf(op, change.reason ?? 'live state differs from the manifest');
}

/** Sync, and the write or why none: the rules in the order docs/decision.md lists them. */
function decideSync(input: DecisionInput): Verdict {
  const { change, settings } = input;
  const daemon = settings.mode === 'daemon';
  if (change.action === 'blocked') {
    // Kept at its last good version, or unknown (a file that fails to load may declare it): a manifest error either way.
    return input.heldAtLastGood || change.unknown === true
      ? skip(
          'blocked',
          'ManifestErrors',
          change.reason ?? 'the manifest file has errors; the last good version stays in force',
        )
      : skip('blocked', 'PlanBlocked', change.reason ?? 'the plan blocks it');
  }
  if (change.action === 'orphan')
    return skip('out_of_sync', 'Orphan', change.reason ?? 'live, in no manifest; never deleted without --prune');
  if (change.action === 'delete') {
    // The daemon's delete waits for its grace or for a person (src/core/prune-grace.ts): nothing is sent yet.
    if (change.pending_delete) return skip('out_of_sync', 'DeletePending', change.reason ?? 'delete pending');
    return writeOf('delete', change.reason ?? 'owned by converge, no longer declared');
  }
  if (change.suspended === true || input.desired?.suspend === true)
    return skip('suspended', 'Suspended', 'converge/suspend is true: changes are planned, never applied');
  const fingerprint = input.fingerprint;
  if (change.action === 'noop') {
    const rebuild = 'a rebuild was asked for (--retry-failed): a new revision of the same input';
    if (input.requests?.rebuild === true && fingerprint !== undefined) return writeOf('rebuild', rebuild);
    const remember =
      daemon && fingerprint !== undefined && input.remembered !== fingerprint ? { remember: fingerprint } : {};
    return skip('synced', 'Synced', 'live state matches the manifest', remember);
  }
  if (!WRITES.has(change.action))
    return skip('out_of_sync', 'OutOfSync', change.reason ?? 'live state differs from the manifest');
  if (input.conflict) return skip('out_of_sync', 'Conflict', input.conflict.message);
  if (!daemon || fingerprint === undefined)
    return writeOf(
      change.action === 'create' ? 'create' : 'update',
      change.reason ?? 'live state differs from the manifest',
    );
  return daemonWrite(input, fingerprint);
}

/** The one decision about one resource. Pure: the same inputs give the same outcome. */
export function decide(input: DecisionInput): Outcome {
  const { change } = input;
  const verdict = decideSync(input);
  const health = kindOf(change.kind).health({
    action: change.action,
    live: input.live,
    revision: input.revision,
    hold: input.hold,
    ...(input.clock ? { clock: input.clock } : {}),
  });
  const key = resourceKey(change.kind, change.name);
  const decided: Outcome = { key, kind: change.kind, name: change.name, action: change.action, health, ...verdict };
  return withWriteInFlight(decided, input.write);
}

/**
 * The outcome once a write of this desired state is known to be queued or just finished (`write`): it stands for a
 * rebuild, and for whatever the rules made of a create, update or adopt that is neither suspended nor in Conflict (the
 * write, a hold, drift reported, secrets unknown): no second job, and no drift. A delete and the rest stand as decided.
 * decide() takes this step for `input.write`; the daemon's act (src/daemon/cycle/act.ts) takes it with the queue's
 * answer on the outcome already decided, so a resource is decided once per reconcile.
 */
export function withWriteInFlight(decided: Outcome, write: WriteInFlight | undefined): Outcome {
  if (!write || !(decided.write?.op === 'rebuild' || standsForWrite(decided))) return decided;
  const { key, kind, name, action, health } = decided;
  return { key, kind, name, action, health, ...inFlight(write) };
}

/**
 * A decided outcome that a gate after the decision holds back (a wave, src/core/waves.ts; a change window,
 * src/daemon/cycle/window-gate.ts): nothing written, out of sync with the gate's reason and line, as decide() skips.
 */
export function heldBack(
  decided: Outcome,
  reason: 'WaveHeld' | 'WaveWaiting' | 'WindowHeld',
  message: string,
): Outcome {
  return { ...decided, ...skip('out_of_sync', reason, message) };
}

/** A planned create, update or adopt that converge could write now: not suspended, and no Conflict holds it. */
function standsForWrite(decided: Outcome): boolean {
  return WRITES.has(decided.action) && decided.sync.reason !== 'Suspended' && decided.sync.reason !== 'Conflict';
}

/** The decided write was enqueued as `job`: Applying; its drift, if any, is kept (this very write reverts it). */
export function applying(outcome: Outcome, job: { jobId: string; operation: string }): Outcome {
  const message = `job ${job.jobId} (${job.operation}) is queued`;
  return { ...outcome, sync: { status: 'out_of_sync', reason: 'Applying', message }, job };
}

/** "not written: SecretsUnknown: …": why nothing was written, one line, the same in every output. Undefined when written. */
export function skipLine(outcome: Pick<Outcome, 'skip'>): string | undefined {
  if (!outcome.skip || outcome.skip.code === 'Synced') return undefined;
  return `not written: ${outcome.skip.code}: ${outcome.skip.message}`;
}

/** "health degraded (RevisionBuildFailed): revision r1 ended BUILD_FAILED; …": one line for every output. */
export function healthLine(health: HealthCondition): string {
  return `health ${health.status} (${health.reason}): ${health.message}`;
}
