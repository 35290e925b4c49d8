// The corridor of a reconcile (src/observe/corridor.ts) as the daemon walks it, full or targeted, and its act after.
import type { ResourceHold } from '../../core/holds.js';
import type { Outcome } from '../../core/decide.js';
import { resourceKey, type DesiredResource, type DriftPolicy, type Plan } from '../../core/model.js';
import type { PlanInput } from '../../plan/plan.js';
import type { DecisionMemory } from '../../plan/outcomes.js';
import type { Gathered } from '../../observe/gather.js';
import { reconcileCorridor, type Corridor, type CorridorDeclined, type CorridorScope } from '../../observe/corridor.js';
import { desiredFingerprint, driftReason } from '../../core/drift.js';
import type { DeleteIntent } from '../../core/job-intent.js';
import { DEFAULT_FLAP, type Conflict } from '../../core/flap-guard.js';
import type { ManifestVersion } from '../../core/manifest-version.js';
import { enqueueOutcomes } from './act.js';
import type { CycleContext } from './cycle-context.js';
import type { HeldResource } from './last-good.js';

/** How one reconcile of the daemon walks the corridor: its scope, and what it makes of the input loaded. */
export interface DaemonPass<D extends CorridorDeclined = never> {
  scope: CorridorScope;
  /** Writes whose answer was lost, read before the applied state (their jobs settle them: never held). */
  pendingWrites: ReadonlySet<string>;
  /** The resources a targeted reconcile decides; undefined: every one (the full reconcile). */
  keys?: ReadonlySet<string> | undefined;
  input: (gathered: Gathered) => Promise<NoInfer<PlanInput | D>>;
  planned?: (result: Plan, gathered: Gathered) => Promise<Plan>;
  /** Resources of files with errors, kept at their last good version (known once the input is made). */
  held: () => readonly HeldResource[];
}

/** What the daemon reads of its own memory in Redis before it decides. */
interface DaemonState {
  remembered: Map<string, string>;
  storedHolds: ReadonlyMap<string, ResourceHold>;
  conflicts: Map<string, Conflict>;
  released: string[];
}

/** What the corridor decided for the daemon, with the memory it was decided with. */
export interface DaemonDecided extends Corridor {
  state: DaemonState;
}

/** A deployment whose live state left an unchanged manifest, the policy applied, and who changed it. */
export interface DriftFound {
  key: string;
  policy: DriftPolicy;
  fields: string[];
  reason: string;
  fingerprint?: string;
}

/** What a reconcile decided and did. */
export interface Acted {
  outcomes: Map<string, Outcome>;
  fingerprints: ReadonlyMap<string, string>;
  holds: ReadonlyMap<string, ResourceHold>;
  conflicts: Map<string, Conflict>;
  released: string[];
  added: number;
  drift: DriftFound[];
  revisions: { requests: number };
}

/** Releases the conflicts of resources whose desired state is one the conflict does not hold; returns the rest. */
async function standingConflicts(
  ctx: CycleContext,
  resources: ReadonlyMap<string, DesiredResource>,
  secretHashes: PlanInput['secretHashes'],
): Promise<{ conflicts: Map<string, Conflict>; released: string[] }> {
  const conflicts = (await ctx.conflicts?.all()) ?? new Map<string, Conflict>();
  const releasing: string[] = [];
  for (const [key, conflict] of conflicts) {
    const resource = resources.get(key);
    if (!resource) continue;
    if (!conflict.desired.includes(desiredFingerprint(resource, secretHashes.get(key) ?? {}))) releasing.push(key);
  }
  const released = releasing.length > 0 && ctx.conflicts ? await ctx.conflicts.release(releasing, false) : [];
  for (const key of released) conflicts.delete(key);
  return { conflicts, released };
}

/** The daemon's memory of each resource, for its decision (DecisionMemory, src/plan/outcomes.ts). */
function decisionMemory(ctx: CycleContext, state: DaemonState, pass: DaemonPass<CorridorDeclined>): DecisionMemory {
  const rollouts = ctx.rollouts;
  const memory: DecisionMemory = {
    holds: state.storedHolds,
    conflicts: state.conflicts,
    remembered: state.remembered,
    heldAtLastGood: new Set(pass.held().map((h) => h.key)),
    pendingWrites: pass.pendingWrites,
    requests: (key, resource) => ({
      rebuild: ctx.rebuilds?.wanted(key) === true,
      writeSecrets: resource !== undefined && ctx.secretWrites?.approved(key, resource.name) === true,
    }),
  };
  if (!rollouts) return memory;
  return {
    ...memory,
    knownRevision: (key, revisionId) => rollouts.reading(key, revisionId),
    rolloutSince: (key, revisionId) => rollouts.rolloutSince(key, revisionId),
  };
}

/**
 * Walks the corridor with the daemon's memory: its desired-state memory, holds and conflicts are read after the plan,
 * a revision the poller follows or a hold names is not read again, and each resource is decided once. Throws what
 * loading or listing throws; answers the pass's own decline.
 */
export async function daemonCorridor<D extends CorridorDeclined = never>(
  ctx: CycleContext,
  pass: DaemonPass<D>,
): Promise<DaemonDecided | D> {
  const rollouts = ctx.rollouts;
  let state: DaemonState | undefined;
  const decided = await reconcileCorridor<D>({
    scope: pass.scope,
    decision: {
      mode: 'daemon',
      driftPolicy: ctx.settings.driftPolicy,
      now: () => rollouts?.now() ?? Date.now(),
      progressDeadlineMs: rollouts?.deadlineMs,
      ...(ctx.decide ? { decide: ctx.decide } : {}),
    },
    input: pass.input,
    ...(pass.planned ? { planned: pass.planned } : {}),
    memory: async (gathered, input) => {
      ctx.steps?.enter('state');
      const [remembered, storedHolds, standing] = await Promise.all([
        pass.keys ? ctx.memory.getSome(pass.keys) : ctx.memory.getAll(),
        ctx.holds?.getAll() ?? Promise.resolve(new Map<string, ResourceHold>()),
        standingConflicts(ctx, gathered.resources, input.secretHashes),
      ]);
      state = { remembered, storedHolds, ...standing };
      const known = (key: string, revisionId: string): boolean =>
        rollouts?.knows(key, revisionId) === true || storedHolds.get(key)?.revisionId === revisionId;
      return { memory: decisionMemory(ctx, state, pass), known };
    },
    onStep: (step) => ctx.steps?.enter(step),
  });
  if ('declined' in decided) return decided;
  return { ...decided, state: state! };
}

/**
 * The flap guard's record of what this leader term read, before any job of it is enqueued: a later return to earlier
 * manifests that this term read go back is its rollback, not a fight (src/core/flap-guard.ts wentBack).
 */
async function recordRead(ctx: CycleContext, version: ManifestVersion | undefined): Promise<void> {
  const token = ctx.fence?.();
  if (token === undefined || !version || !ctx.conflicts?.recordRead) return;
  await ctx.conflicts.recordRead(token, version, ctx.settings.flapWindow ?? DEFAULT_FLAP.windowMs);
}

/**
 * Acts on the outcomes decided: enqueues the decided writes (act.ts updates an outcome with what the queue answers,
 * never deciding it again), remembers what is in sync and ends the holds that are over; `keys` (a targeted
 * reconcile's resources) bounds the holds and memory it may end.
 */
export async function actOn(
  ctx: CycleContext,
  decided: DaemonDecided,
  keys?: ReadonlySet<string>,
  intents?: ReadonlyMap<string, DeleteIntent>,
): Promise<Acted> {
  const { plan: result, gathered, input, outcomes, inputs, fingerprints, holds, state } = decided;
  await recordRead(ctx, gathered.version);
  ctx.steps?.enter('enqueue');
  const { resources, version } = gathered;
  const secretHashes = input.secretHashes;
  // The wave each resource to delete was last declared in: prune deletes in descending wave order (docs/rollouts.md).
  const deleteWaves = new Map(
    [...outcomes.values()]
      .filter((o) => o.action === 'delete')
      .map((o) => [o.key, gathered.input.applied.get(o.key)?.wave ?? 0]),
  );
  const added = await enqueueOutcomes(ctx, {
    outcomes,
    inputs,
    resources,
    secretHashes,
    version,
    intents,
    deleteWaves,
  });
  ctx.steps?.enter('state');

  const inSync = [...outcomes.values()].flatMap((o) => (o.remember ? [[o.key, o.remember] as const] : []));
  await ctx.memory.set(new Map(inSync));
  // Declared, or unknown: a file that fails to load may declare it (its hold and memory are kept until it loads).
  const unknown = result.changes.filter((c) => c.unknown === true).map((c) => resourceKey(c.kind, c.name));
  const blocked = input.blocked.map((b) => resourceKey(b.kind, b.name));
  const declared = new Set<string>([...resources.keys(), ...blocked, ...unknown]);
  // A hold about an older desired state (the manifest changed) or a resource no manifest declares any more is over.
  const over = (key: string, hold: ResourceHold): boolean =>
    !declared.has(key) || (fingerprints.has(key) && hold.desired !== fingerprints.get(key));
  const inScope = (key: string): boolean => keys === undefined || keys.has(key);
  const stale = [...state.storedHolds].filter(([key, hold]) => inScope(key) && over(key, hold));
  if (stale.length > 0) await ctx.holds?.release(stale.map(([key]) => key));
  if (keys === undefined) await ctx.memory.retain(declared);

  const drift = [...outcomes.values()].flatMap((o): DriftFound[] => {
    if (!o.drift) return [];
    // Who changed it: the live deployment the decision was given, against converge's last write.
    const reason = driftReason(o.drift.fields, inputs.get(o.key)?.live, gathered.input.applied.get(o.key));
    const fingerprint = fingerprints.get(o.key);
    return [{ key: o.key, ...o.drift, reason, ...(fingerprint !== undefined ? { fingerprint } : {}) }];
  });
  const { conflicts, released } = state;
  return { outcomes, fingerprints, holds, conflicts, released, added, drift, revisions: decided.revisions };
}
