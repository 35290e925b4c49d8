// The daemon's full reconcile of the manifest directory: the corridor over the whole tree, prune's grace, the act.
import type { ResourceHold } from '../../core/holds.js';
import type {
  AppliedRecord,
  DesiredResource,
  DriftPolicy,
  ListedDeployment,
  Plan,
  PlanChange,
} from '../../core/model.js';
import type { Outcome } from '../../core/decide.js';
import type { GatherOptions } from '../../observe/gather.js';
import { recordDeclarations } from '../../observe/corridor.js';
import { actOn, daemonCorridor } from './daemon-corridor.js';
import { deletesWaitingForProbe, probeDeletes } from './delete-probe.js';
import { DEFAULT_PRUNE_GRACE_MS, deleteCandidates, markPendingDeletes, pruneGrace } from '../../core/prune-grace.js';
import { confirms, deleteIntentOf, type DeleteConfirmation, type DeleteIntent } from '../../core/job-intent.js';
import type { CycleContext } from './cycle-context.js';
import type { HeldResource, HoldResult } from './last-good.js';
import type { Conflict } from '../../core/flap-guard.js';
import type { ManifestVersion } from '../../core/manifest-version.js';

/** What a reconcile keeps of each live deployment it listed: its id by name (the decoded deployments are let go when it ends). */
export type LiveRef = Pick<ListedDeployment, 'id' | 'name'>;

/** The id and name of each live deployment, not the deployment: the last outcome is held until the next reconcile. */
export function liveRefs(deployments: readonly ListedDeployment[]): LiveRef[] {
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

/** The plan with its deletes through the prune rule, when the first waiting one falls due, each due one's intent. */
interface Graced {
  plan: Plan;
  recheckAt?: number;
  recheckIn?: number;
  intents?: Map<string, DeleteIntent>;
}

/**
 * The plan's deletes through the prune rule (src/core/prune-grace.ts): those not yet due are marked pending (nothing is
 * sent for them); the absences are remembered in Redis, so a restart keeps counting the grace, timed on Redis' clock
 * (ctx.now), so a new leader with another wall clock counts the same grace. `recheckIn`: ms until the first one is due.
 */
async function graceDeletes(ctx: CycleContext, result: Plan, manifests: string): Promise<Graced> {
  const applied = ctx.applied;
  if (!applied.absences || !applied.recordAbsences) return { plan: result };
  const before = await applied.absences();
  const candidates = deleteCandidates(result.changes);
  if (candidates.length === 0 && before.size === 0) return { plan: result };
  // A person's confirmation is read from Redis, where it was stored before it was answered: a new leader finds it too.
  const stored =
    (candidates.length > 0 ? await applied.confirmations?.() : undefined) ?? new Map<string, DeleteConfirmation>();
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
  const intents = new Map(
    [...graced.due].map((key) => {
      const absence = graced.absent.get(key)!;
      return [key, deleteIntentOf(absence, confirms(stored.get(key), absence))] as const;
    }),
  );
  const probe = graced.due.size > 0 ? await probeDeletes(ctx.client) : { deletes: true as const };
  // Not answered: nothing is known of the service's DELETE; the due deletes wait, the rest of the reconcile goes on.
  if (probe.deletes === 'unknown') {
    const waiting = deletesWaitingForProbe(result, graced, probe.note, now);
    return { ...waiting, recheckIn: Math.max(0, waiting.recheckAt - now) };
  }
  const marked: Plan = {
    ...result,
    changes: probe.deletes
      ? markPendingDeletes(result.changes, graced.waiting)
      : withoutDeletes(result.changes, probe.note),
  };
  if (!probe.deletes) marked.notes = [...(result.notes ?? []), probe.note];
  return {
    plan: marked,
    intents,
    ...(graced.recheckAt === undefined
      ? {}
      : { recheckAt: graced.recheckAt, recheckIn: Math.max(0, graced.recheckAt - now) }),
  };
}

/** The service has no DELETE endpoint (the probe said so): each planned delete is a released orphan, with the probe's note. */
function withoutDeletes(changes: readonly PlanChange[], note: string): PlanChange[] {
  return changes.map((change) => {
    if (change.action !== 'delete') return change;
    const { id: _id, ...rest } = change;
    return { ...rest, action: 'orphan', released: true, reason: note };
  });
}

/**
 * One full reconcile: the corridor over the whole tree (src/daemon/cycle/daemon-corridor.ts: load, hold broken files
 * at their last good version, plan, deletes through prune_grace, decide each resource once), then the act on its
 * outcomes: enqueue the decided writes, remember what is in sync. Throws when the directory cannot be read
 * (UsageError) or the service cannot be listed: then nothing was enqueued.
 */
export async function reconcileDirectory(ctx: CycleContext): Promise<ReconcileOutcome> {
  ctx.steps?.enter('state');
  // Read before the applied state: a job that settles its pending write meanwhile is then seen in one or the other.
  const pendingWrites = (await ctx.applied.pendingKeys?.()) ?? new Set<string>();
  ctx.steps?.enter('manifests');
  let lastGood: HoldResult = { extraBlocked: [], held: [] };
  let graced: Graced | undefined;
  const decided = await daemonCorridor(ctx, {
    scope: { tree: treeOptions(ctx) },
    pendingWrites,
    input: async (gathered) => {
      ctx.steps?.enter('state');
      await recordDeclarations(ctx.applied, gathered);
      ctx.steps?.enter('decision');
      const { resources, blocked } = gathered.input;
      lastGood = ctx.lastGood.observe({ resources, blocked, diagnostics: gathered.diagnostics, files: gathered.files });
      return { ...gathered.input, blocked: [...blocked, ...lastGood.extraBlocked] };
    },
    planned: async (planned, gathered) => {
      ctx.steps?.enter('state');
      graced = await graceDeletes(ctx, planned, gathered.contentId);
      // The reconcile that sends a delete once its grace has passed: scheduled, not left to the next resync.
      ctx.schedulePrune?.(graced.recheckIn);
      return graced.plan;
    },
    held: () => lastGood.held,
  });
  const { gathered } = decided;
  const acted = await actOn(ctx, decided, undefined, graced?.intents);
  return {
    plan: decided.plan,
    resources: gathered.resources,
    live: liveRefs(gathered.live.deployments),
    files: gathered.files.length,
    outcomes: acted.outcomes,
    held: lastGood.held,
    drift: acted.drift,
    enqueued: acted.added,
    fingerprints: acted.fingerprints,
    holds: acted.holds,
    version: gathered.version,
    applied: gathered.input.applied,
    conflicts: acted.conflicts,
    released: acted.released,
    revisionReads: acted.revisions.requests,
    ...(graced?.recheckAt !== undefined ? { pruneRecheckAt: graced.recheckAt } : {}),
  };
}

/** The whole tree's load and listing, as the daemon reads them. */
function treeOptions(ctx: CycleContext): GatherOptions {
  return {
    dir: ctx.dir,
    environment: ctx.environment,
    env: ctx.env,
    client: ctx.client,
    // A literal secret lives only in a manifest file: the daemon never accepts one (`converge run` refuses it).
    allowLiteralSecrets: false,
    allowLocalDiscovery: ctx.settings.allowLocalDiscovery,
    namePrefix: ctx.settings.namePrefix,
    applied: ctx.applied,
    ...(ctx.manifestCache ? { manifestCache: ctx.manifestCache } : {}),
    ...(ctx.settings.adopt ? { adoptPolicy: ctx.settings.adopt } : {}),
    // The DELETE probe waits until a delete falls due (graceDeletes): a delete that waits sends nothing at all.
    prune: { enabled: ctx.settings.prune === true, maxDeletes: ctx.settings.maxDeletes ?? 5, probe: false },
    onManifestsRead: () => ctx.steps?.enter('listing'),
  };
}
