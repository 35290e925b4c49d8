// The inner reconcile of the manifest directory: gather the inputs (manifests at their last good version, live, memory, holds, conflicts, revisions), decide each resource, act on the outcomes.
import type { ResourceHold } from '../../core/holds.js';
import type { AppliedRecord, DesiredResource, DriftPolicy, LiveDeployment, Plan, PlanChange } from '../../core/model.js';
import type { Outcome } from '../../core/decide.js';
import type { RevisionReading } from '../../core/kinds/index.js';
import { decideOutcomes } from '../../plan/outcomes.js';
import { resourceKey } from '../../core/model.js';
import { plan, type PlanInput } from '../../plan/plan.js';
import { gatherPlanInput } from '../../observe/gather.js';
import { readLatestRevisions } from '../../observe/revisions.js';
import { desiredFingerprint, driftReason } from '../../core/drift.js';
import { enqueueOutcomes } from './act.js';
import { deletesWaitingForProbe, probeDeletes } from './delete-probe.js';
import { declaringFiles } from '../../core/declared-files.js';
import { DEFAULT_PRUNE_GRACE_MS, deleteCandidates, markPendingDeletes, pruneGrace } from '../../core/prune-grace.js';
import { confirms, deleteIntentOf, type DeleteConfirmation, type DeleteIntent } from '../../core/job-intent.js';
import type { CycleContext } from './cycle-context.js';
import type { HeldResource } from './last-good.js';
import { DEFAULT_FLAP, type Conflict } from '../../core/flap-guard.js';
import type { ManifestVersion } from '../../core/manifest-version.js';

/** What a reconcile keeps of each live deployment it listed: its id by name (the decoded deployments are let go when it ends). */
export type LiveRef = Pick<LiveDeployment, 'id' | 'name'>;

/** The id and name of each live deployment, not the deployment: the last outcome is held until the next reconcile. */
export function liveRefs(deployments: readonly LiveDeployment[]): LiveRef[] {
  return deployments.map(({ id, name }) => ({ id, name }));
}

export interface ReconcileOutcome {
  plan: Plan;
  resources: ReadonlyMap<string, DesiredResource>;
  live: readonly LiveRef[];
  files: number;
  /** The decision about every planned resource (src/core/decide.ts), by resourceKey. */
  outcomes: ReadonlyMap<string, Outcome>;
  /** Resources of files with errors, kept at their last good version. */
  held: readonly HeldResource[];
  /** Drift found: deployments whose live state left an unchanged manifest, with the policy applied (from the outcomes), and who changed it. */
  drift: ReadonlyArray<{ key: string; policy: DriftPolicy; fields: string[]; reason: string; fingerprint?: string }>;
  /** Jobs added (a resource whose job of the same desired state was still waiting or active is not counted). */
  enqueued: number;
  /** Fingerprint of each listed resource's desired state (by resourceKey). */
  fingerprints?: ReadonlyMap<string, string>;
  /** The holds in force for the current desired states (by resourceKey). */
  holds?: ReadonlyMap<string, ResourceHold>;
  /** Which manifests this reconcile read (git commit or content hash). */
  version?: ManifestVersion;
  /** The applied records the plan read: what converge last wrote to each resource, and from which manifests. */
  applied?: ReadonlyMap<string, AppliedRecord>;
  /** Conflicts standing after this reconcile, by resource key. */
  conflicts?: ReadonlyMap<string, Conflict>;
  /** Conflicts this reconcile released: the resource's desired state changed to one the conflict does not hold. */
  released?: string[];
  /** Revision reads this reconcile sent (health is read, not guessed). */
  revisionReads?: number;
  /** When a delete waiting for prune_grace falls due (ms): the daemon reconciles then (src/core/prune-grace.ts). */
  pruneRecheckAt?: number;
  /** A targeted reconcile (src/daemon/cycle/targeted.ts): the resources it decided and the files it read; the rest is the last reconcile's. */
  targeted?: { keys: ReadonlySet<string>; files: ReadonlySet<string> };
}


/** Releases the conflicts of resources whose desired state is now one the conflict does not hold; returns those still standing. */
async function standingConflicts(ctx: CycleContext, resources: ReadonlyMap<string, DesiredResource>, secretHashes: PlanInput['secretHashes']): Promise<{ conflicts: Map<string, Conflict>; released: string[] }> {
  const conflicts = (await ctx.conflicts?.all()) ?? new Map<string, Conflict>();
  const releasing: string[] = [];
  for (const [key, conflict] of conflicts) {
    const resource = resources.get(key);
    if (resource && !conflict.desired.includes(desiredFingerprint(resource, secretHashes.get(key) ?? {}))) releasing.push(key);
  }
  const released = releasing.length > 0 && ctx.conflicts ? await ctx.conflicts.release(releasing, false) : [];
  for (const key of released) conflicts.delete(key);
  return { conflicts, released };
}

/**
 * The plan's deletes through the prune rule (src/core/prune-grace.ts): those not yet due are marked pending (nothing is
 * sent for them); the absences are remembered in Redis, so a restart keeps counting the grace, timed on Redis' clock
 * (ctx.now), so a new leader with another wall clock counts the same grace. `recheckIn`: ms until the first one is due.
 */
async function graceDeletes(ctx: CycleContext, result: Plan, manifests: string): Promise<{ plan: Plan; recheckAt?: number; recheckIn?: number; intents?: Map<string, DeleteIntent> }> {
  const applied = ctx.applied;
  if (!applied.absences || !applied.recordAbsences) return { plan: result };
  const before = await applied.absences();
  const candidates = deleteCandidates(result.changes);
  if (candidates.length === 0 && before.size === 0) return { plan: result };
  // A person's confirmation is read from Redis, where it was stored before it was answered: a new leader finds it too.
  const stored = (candidates.length > 0 ? await applied.confirmations?.() : undefined) ?? new Map<string, DeleteConfirmation>();
  const now = ctx.now ? await ctx.now() : Date.now();
  const graced = pruneGrace({
    absent: before,
    candidates,
    manifests,
    now,
    graceMs: ctx.settings.pruneGrace ?? DEFAULT_PRUNE_GRACE_MS,
    mode: ctx.settings.pruneMode ?? 'auto',
    confirmed: (key, absence) => confirms(stored.get(key), absence),
  });
  await applied.recordAbsences(before, graced.absent);
  // What each due delete's job checks again when it runs (src/core/job-intent.ts): the absence it is decided on, and why.
  const intents = new Map([...graced.due].map((key) => {
    const absence = graced.absent.get(key)!;
    return [key, deleteIntentOf(absence, confirms(stored.get(key), absence))] as const;
  }));
  const probe = graced.due.size > 0 ? await probeDeletes(ctx.client) : { deletes: true as const };
  // Not answered: nothing is known of the service's DELETE; the due deletes wait, the rest of the reconcile goes on.
  if (probe.deletes === 'unknown') {
    const waiting = deletesWaitingForProbe(result, graced, probe.note, now);
    return { ...waiting, recheckIn: Math.max(0, waiting.recheckAt - now) };
  }
  const marked: Plan = { ...result, changes: probe.deletes ? markPendingDeletes(result.changes, graced.waiting) : withoutDeletes(result.changes, probe.note) };
  if (!probe.deletes) marked.notes = [...(result.notes ?? []), probe.note];
  return { plan: marked, intents, ...(graced.recheckAt === undefined ? {} : { recheckAt: graced.recheckAt, recheckIn: Math.max(0, graced.recheckAt - now) }) };
}

/** The service has no DELETE endpoint (the probe said so): each planned delete is a released orphan, with the probe's note. */
function withoutDeletes(changes: readonly PlanChange[], note: string): PlanChange[] {
  return changes.map((change) => {
    if (change.action !== 'delete') return change;
    const { id: _id, ...rest } = change;
    return { ...rest, action: 'orphan', released: true, reason: note };
  });
}

/** What a reconcile gathered and remembered, for the decision of each resource. */
interface DaemonDecisionInputs {
  result: Plan;
  gathered: Awaited<ReturnType<typeof gatherPlanInput>>;
  input: PlanInput;
  lastGood: { held: readonly HeldResource[] };
  revisions: ReadonlyMap<string, RevisionReading>;
  storedHolds: ReadonlyMap<string, ResourceHold>;
  conflicts: ReadonlyMap<string, Conflict>;
  remembered: ReadonlyMap<string, string>;
  pendingWrites: ReadonlySet<string>;
}

/** The decision of each planned resource through the one corridor (src/plan/outcomes.ts), with the daemon's memory. */
function daemonOutcomes(ctx: CycleContext, g: DaemonDecisionInputs) {
  const rollouts = ctx.rollouts;
  return decideOutcomes(g.result, {
    mode: 'daemon',
    resources: g.gathered.resources,
    live: g.gathered.live.deployments,
    revisions: g.revisions,
    secretHashes: g.input.secretHashes,
    driftPolicy: ctx.settings.driftPolicy,
    now: rollouts?.now() ?? Date.now(),
    ...(rollouts ? { progressDeadlineMs: rollouts.deadlineMs } : {}),
    memory: {
      holds: g.storedHolds,
      conflicts: g.conflicts,
      remembered: g.remembered,
      heldAtLastGood: new Set(g.lastGood.held.map((h) => h.key)),
      pendingWrites: g.pendingWrites,
      requests: (key, resource) => ({
        rebuild: ctx.rebuilds?.wanted(key) === true,
        writeSecrets: resource !== undefined && ctx.secretWrites?.approved(key, resource.name) === true,
      }),
      ...(rollouts ? { knownRevision: (key: string, revisionId: string) => rollouts.reading(key, revisionId), rolloutSince: (key: string, revisionId: string) => rollouts.rolloutSince(key, revisionId) } : {}),
    },
  });
}

/** What the applied state keeps of the manifests read, for prune: converge/prune "false", and which file declares each. */
export async function recordDeclarations(ctx: CycleContext, gathered: Awaited<ReturnType<typeof gatherPlanInput>>): Promise<void> {
  // converge/prune: "false" is remembered per resource, so it still holds once the manifest is gone.
  await ctx.applied.recordKeep?.(gathered.resources.keys(), new Set([...gathered.resources].filter(([, r]) => r.keep).map(([key]) => key)));
  // Which file declares each resource: prune tells a file emptied later from one removed.
  await ctx.applied.recordFiles?.(declaringFiles(gathered.resources.values()), gathered.input.applied);
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

/** What a reconcile decided and did (decideAndAct). */
interface Acted {
  outcomes: Map<string, Outcome>;
  fingerprints: ReadonlyMap<string, string>;
  holds: ReadonlyMap<string, ResourceHold>;
  conflicts: Map<string, Conflict>;
  released: string[];
  added: number;
  drift: ReconcileOutcome['drift'];
  revisions: { requests: number };
}

/**
 * Decides each planned resource with the daemon's memory, enqueues the decided writes, remembers what is in sync and
 * ends the holds that are over: the one step of a full reconcile and a targeted one (src/daemon/cycle/targeted.ts),
 * whose `scope` (the resources it decided) bounds the holds and memory it may end.
 */
export async function decideAndAct(ctx: CycleContext, g: Pick<DaemonDecisionInputs, 'result' | 'gathered' | 'input' | 'lastGood' | 'pendingWrites'> & { intents?: ReadonlyMap<string, DeleteIntent> | undefined }, scope?: ReadonlySet<string>): Promise<Acted> {
  const { result, gathered, input } = g;
  ctx.steps?.enter('state');
  const [remembered, storedHolds, { conflicts, released }] = await Promise.all([
    scope ? ctx.memory.getSome(scope) : ctx.memory.getAll(),
    ctx.holds?.getAll() ?? Promise.resolve(new Map<string, ResourceHold>()),
    standingConflicts(ctx, gathered.resources, input.secretHashes),
  ]);
  const rollouts = ctx.rollouts;
  ctx.steps?.enter('revisions');
  // Health is read, not guessed: the latest revision of each deployment whose latest is not active, unless already known.
  const revisions = await readLatestRevisions(ctx.client, result.changes, gathered.live.deployments, {
    known: (key, revisionId) => rollouts?.knows(key, revisionId) === true || storedHolds.get(key)?.revisionId === revisionId,
  });
  ctx.steps?.enter('decision');
  // The same corridor as plan and apply (src/plan/outcomes.ts), with the daemon's memory.
  const { inputs, outcomes, fingerprints, holds } = daemonOutcomes(ctx, { ...g, revisions: revisions.readings, storedHolds, conflicts, remembered });
  await recordRead(ctx, gathered.version);
  ctx.steps?.enter('enqueue');
  const added = await enqueueOutcomes(ctx, { outcomes, inputs, resources: gathered.resources, secretHashes: input.secretHashes, version: gathered.version, intents: g.intents });
  ctx.steps?.enter('state');

  await ctx.memory.set(new Map([...outcomes.values()].flatMap((o) => (o.remember ? [[o.key, o.remember] as const] : []))));
  // Declared, or unknown: a file that fails to load may declare it (its hold and memory are kept until it loads).
  const unknown = result.changes.filter((c) => c.unknown === true).map((c) => resourceKey(c.kind, c.name));
  const declared = new Set<string>([...gathered.resources.keys(), ...input.blocked.map((b) => resourceKey(b.kind, b.name)), ...unknown]);
  // A hold about an older desired state (the manifest changed) or a resource no manifest declares any more is over.
  const stale = [...storedHolds].filter(([key, hold]) => (scope === undefined || scope.has(key)) && (!declared.has(key) || (fingerprints.has(key) && hold.desired !== fingerprints.get(key)))).map(([key]) => key);
  if (stale.length > 0) await ctx.holds?.release(stale);
  if (scope === undefined) await ctx.memory.retain(declared);

  const drift = [...outcomes.values()].flatMap((o) => {
    if (!o.drift) return [];
    // Who changed it: the live deployment the decision was given, against converge's last write.
    const reason = driftReason(o.drift.fields, inputs.get(o.key)?.live, gathered.input.applied.get(o.key));
    return [{ key: o.key, ...o.drift, reason, ...(fingerprints.has(o.key) ? { fingerprint: fingerprints.get(o.key)! } : {}) }];
  });
  return { outcomes, fingerprints, holds, conflicts, released, added, drift, revisions };
}

/**
 * One full reconcile: gather every input, decide each resource (src/core/decide.ts), enqueue the decided writes,
 * remember what is in sync. Throws when the directory cannot be read (UsageError) or the service cannot be listed:
 * then nothing was enqueued. Resources of a file with errors are planned as blocked at their last good version.
 */
export async function reconcileDirectory(ctx: CycleContext): Promise<ReconcileOutcome> {
  ctx.steps?.enter('state');
  // Read before the applied state: a job that settles its pending write meanwhile is then seen in one or the other.
  const pendingWrites = (await ctx.applied.pendingKeys?.()) ?? new Set<string>();
  ctx.steps?.enter('manifests');
  const gathered = await gatherPlanInput({
    dir: ctx.dir,
    environment: ctx.environment,
    env: ctx.env,
    client: ctx.client,
    // A literal secret lives only in a manifest file: the daemon never accepts one (`converge run` refuses the setting).
    allowLiteralSecrets: false,
    allowLocalDiscovery: ctx.settings.allowLocalDiscovery,
    namePrefix: ctx.settings.namePrefix,
    applied: ctx.applied,
    ...(ctx.manifestCache ? { manifestCache: ctx.manifestCache } : {}),
    ...(ctx.settings.adopt ? { adoptPolicy: ctx.settings.adopt } : {}),
    // The DELETE probe waits until a delete falls due (graceDeletes): a delete that waits sends nothing at all.
    prune: { enabled: ctx.settings.prune === true, maxDeletes: ctx.settings.maxDeletes ?? 5, probe: false },
    onManifestsRead: () => ctx.steps?.enter('listing'),
  });
  ctx.steps?.enter('state');
  await recordDeclarations(ctx, gathered);
  ctx.steps?.enter('decision');
  const lastGood = ctx.lastGood.observe({ resources: gathered.input.resources, blocked: gathered.input.blocked, diagnostics: gathered.diagnostics, files: gathered.files });
  const input: PlanInput = { ...gathered.input, blocked: [...gathered.input.blocked, ...lastGood.extraBlocked] };
  const planned = plan(input);
  ctx.steps?.enter('state');
  const graced = await graceDeletes(ctx, planned, gathered.contentId);
  const result = graced.plan;
  // The reconcile that sends a delete once its grace has passed: scheduled, not left to the next resync.
  ctx.schedulePrune?.(graced.recheckIn);
  const acted = await decideAndAct(ctx, { result, gathered, input, lastGood, pendingWrites, intents: graced.intents });
  const { outcomes, fingerprints, holds, conflicts, released, added, drift, revisions } = acted;
  return {
    plan: result,
    resources: gathered.resources,
    live: liveRefs(gathered.live.deployments),
    files: gathered.files.length,
    outcomes,
    held: lastGood.held,
    drift,
    enqueued: added,
    fingerprints,
    holds,
    version: gathered.version,
    applied: gathered.input.applied,
    conflicts,
    released,
    revisionReads: revisions.requests,
    ...(graced.recheckAt !== undefined ? { pruneRecheckAt: graced.recheckAt } : {}),
  };
}
