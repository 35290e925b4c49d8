// The inner reconcile of the manifest directory: load, hold broken files at their last good version, plan, enqueue.
import type { ServiceClient } from '../service/client.js';
import { holdApplies, type ResourceHold } from '../core/holds.js';
import type { AppliedRecord, DesiredResource, DriftPolicy, LiveDeployment, Plan, PlanChange } from '../core/model.js';
import { resourceKey } from '../core/model.js';
import { kindOf } from '../core/kinds/index.js';
import { plan, type PlanInput } from '../plan/plan.js';
import type { Enqueuer } from '../queue/enqueuer.js';
import { buildDeleteJobData, buildJobData, operationFor } from '../queue/jobs.js';
import type { AdoptPolicy } from '../core/ownership.js';
import { gatherPlanInput } from '../observe/gather.js';
import type { Environment } from '../observe/environment.js';
import type { ManifestCache } from '../observe/manifests.js';
import { decideDrift, desiredFingerprint, driftReason, type DesiredMemory } from './drift.js';
import type { HeldResource, LastGoodManifests } from './last-good.js';
import type { Conflict } from '../core/flap-guard.js';
import type { ManifestVersion } from '../core/manifest-version.js';

/** What the inner reconcile needs; the outer (daemon.ts) owns it. */
export interface CycleContext {
  /** Absolute manifest directory. */
  dir: string;
  /** Variables files and overlay directories read with it (docs/environments.md). */
  environment?: Environment | undefined;
  env: NodeJS.ProcessEnv;
  client: ServiceClient;
  /** Adds the jobs (newest desired state of each resource wins). */
  enqueuer: Pick<Enqueuer, 'enqueue' | 'inFlightJob'>;
  applied: {
    getAll(): Promise<Map<string, AppliedRecord>>;
    /** Resources with a write whose answer is not known yet: their job settles it, so they are never held. */
    pendingKeys?(): Promise<Set<string>>;
    /** Records which declared resources carry converge/prune: "false" (AppliedStateStore.recordKeep). */
    recordKeep?(declared: Iterable<string>, keep: ReadonlySet<string>): Promise<void>;
  };
  memory: DesiredMemory;
  lastGood: LastGoodManifests;
  settings: {
    allowLocalDiscovery: boolean;
    driftPolicy: DriftPolicy;
    namePrefix?: string | undefined;
    /** adopt setting (default auto). */
    adopt?: AdoptPolicy;
    /** --prune, --max-deletes, --prune-tracing-projects (default: prune off). */
    prune?: boolean;
    maxDeletes?: number;
    pruneTracingProjects?: boolean;
  };
  /** Parse results kept between reconciles: an edit re-parses only the files whose bytes changed. */
  manifestCache?: ManifestCache;
  /** Called right after each job is enqueued (before the reconcile ends), so a fast job's result is never missed. */
  onEnqueued?: (job: EnqueuedJob) => void;
  /**
   * Whether a job of this resource carrying this desired state finished since this reconcile began: the live state
   * the plan read may predate it, so the change it plans is that job's, already done.
   */
  finishedSince?: (key: string, desired: string) => boolean;
  /** Resources an operator asked to have their secrets written although they cannot be compared (POST /reconcile). */
  secretWrites?: SecretWrites;
  /** Holds (src/core/holds.ts): a resource held for its current desired state gets no write. */
  holds?: HoldStore;
  /**
   * Resources whose hold an operator released (`converge reconcile --retry-failed`): one whose plan has nothing to
   * write gets a rebuild job (its unchanged revision fields, a new revision of the same input).
   */
  rebuilds?: { wanted(key: string): boolean; done(key: string): void };
  /** The flap guard's standing conflicts (src/store/flap-store.ts): a held desired state is not enqueued again. */
  conflicts?: ConflictsView;
  /**
   * The leader lease's fencing token while this replica holds it, undefined once lost (see leadership.ts): stamped on
   * every job, and a lost lease stops the enqueue (NotLeaderError). Absent: no lease (every job goes in, unstamped).
   */
  fence?: () => number | undefined;
}

/** Where holds live (src/store/holds-store.ts). */
export interface HoldStore {
  getAll(): Promise<Map<string, ResourceHold>>;
  set(key: string, hold: ResourceHold): Promise<void>;
  release(keys: readonly string[]): Promise<number>;
}

/** The flap guard's conflicts as a reconcile sees them (FlapStore satisfies it). */
export interface ConflictsView {
  all(): Promise<Map<string, Conflict>>;
  /** Releases the conflicts of `keys`; `forget` false keeps their recent writes on record. */
  release(keys: readonly string[], forget?: boolean): Promise<string[]>;
}

/** The operator's requests to write secrets that cannot be compared (`converge reconcile --write-secrets`). */
export interface SecretWrites {
  /** Whether the resource may be written now; `name` is its metadata.name, `key` its resourceKey. */
  approved(key: string, name: string): boolean;
  /** The resource's write was enqueued: the request for it is done. */
  done(key: string): void;
}

export interface EnqueuedJob {
  key: string;
  jobId: string;
  operation: string;
  /** Fingerprint of the desired state the job carries (remembered once the job completes). Deployments only. */
  fingerprint?: string;
  /** An earlier reconcile's job, still waiting or active with the same desired state: nothing was added. */
  inFlight?: boolean;
  /** The fingerprint of the desired state the job carries (every kind; set by the cycle). */
  desired?: string;
}

/** What became of one planned create/update. */
export type Decision =
  | { kind: 'enqueued'; job: EnqueuedJob; drift: boolean }
  | { kind: 'reported'; policy: 'report' }
  /** A job of this desired state finished while this reconcile ran (its plan read live state before that). */
  | { kind: 'settled' }
  /**
   * The only change is secrets whose values cannot be compared (hidden by the service, no applied record): not
   * rewritten blind until the desired state changes or an operator asks (SecretsUnknown).
   */
  | { kind: 'secrets-unknown'; secrets: string[] }
  /** Held (src/core/holds.ts): e.g. the revision of this very desired state failed; not written again. */
  | { kind: 'held'; hold: ResourceHold }
  /** The flap guard stopped writes of this desired state (Conflict): not enqueued until it changes or is released. */
  | { kind: 'conflict'; conflict: Conflict }
  | { kind: 'suspended' };

export interface ReconcileOutcome {
  plan: Plan;
  resources: ReadonlyMap<string, DesiredResource>;
  live: readonly LiveDeployment[];
  files: number;
  /** Per planned create/update, by resourceKey. */
  decisions: ReadonlyMap<string, Decision>;
  /** Resources of files with errors, kept at their last good version. */
  held: readonly HeldResource[];
  /** Drift found: deployments whose live state left an unchanged manifest, with the policy applied. */
  drift: ReadonlyArray<{ key: string; policy: DriftPolicy; fields: string[]; reason: string }>;
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
}

/** Whether every field of the change is a secret written only because it cannot be compared. */
function onlyUncomparedSecrets(change: PlanChange): boolean {
  return change.fields.length > 0 && change.fields.every((f) => f.uncompared === true);
}

function policyOf(resource: DesiredResource, fallback: DriftPolicy): DriftPolicy {
  return resource.driftPolicy ?? fallback;
}

/**
 * One full reconcile. Throws when the directory cannot be read (UsageError) or the service cannot be listed:
 * then nothing was enqueued. Resources of a file with errors are planned as blocked at their last good version:
 * never changed, never orphaned.
 */
export async function reconcileDirectory(ctx: CycleContext): Promise<ReconcileOutcome> {
  // Read before the applied state: a job that settles its pending write meanwhile is then seen in one or the other.
  const pendingWrites = (await ctx.applied.pendingKeys?.()) ?? new Set<string>();
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
    prune: { enabled: ctx.settings.prune === true, maxDeletes: ctx.settings.maxDeletes ?? 5 },
  });
  // converge/prune: "false" is remembered per resource, so it still holds once the manifest is gone.
  await ctx.applied.recordKeep?.(gathered.resources.keys(), new Set([...gathered.resources].filter(([, r]) => r.keep).map(([key]) => key)));
  const hold = ctx.lastGood.observe({
    resources: gathered.input.resources,
    blocked: gathered.input.blocked,
    diagnostics: gathered.diagnostics,
    files: gathered.files,
  });
  const input: PlanInput = { ...gathered.input, blocked: [...gathered.input.blocked, ...hold.extraBlocked] };
  const result = plan(input);
  const remembered = await ctx.memory.getAll();
  const storedHolds = (await ctx.holds?.getAll()) ?? new Map<string, ResourceHold>();
  const fingerprints = new Map<string, string>();
  const holds = new Map<string, ResourceHold>();
  const conflicts = (await ctx.conflicts?.all()) ?? new Map<string, Conflict>();
  const releasing: string[] = [];
  // A conflict holds the desired states that fought; a resource whose desired state is now another one is released.
  for (const [key, conflict] of conflicts) {
    const resource = gathered.resources.get(key);
    if (resource && !conflict.desired.includes(desiredFingerprint(resource, input.secretHashes.get(key) ?? {}))) releasing.push(key);
  }
  const released = releasing.length > 0 && ctx.conflicts ? await ctx.conflicts.release(releasing, false) : [];
  for (const key of released) conflicts.delete(key);

  const inSync = new Map<string, string>();
  const decisions = new Map<string, Decision>();
  const drift: Array<{ key: string; policy: DriftPolicy; fields: string[]; reason: string }> = [];
  const liveByName = new Map(gathered.input.live.map((d) => [d.name, d]));
  const reasonOf = (key: string, change: PlanChange): string =>
    driftReason(change.fields.map((f) => f.path), change.kind === 'Deployment' ? liveByName.get(change.name) : undefined, gathered.input.applied.get(key));
  const holdCandidates: Array<{ key: string; fingerprint: string; secrets: string[]; remember: boolean }> = [];
  const toEnqueue: Array<{ resource: DesiredResource; change: PlanChange; key: string; fingerprint?: string; drift: boolean; secretsApproved?: true; rebuild?: true }> = [];

  const deletes: Array<{ key: string; change: PlanChange }> = [];
  for (const change of result.changes) {
    const key = resourceKey(change.kind, change.name);
    if (change.action === 'delete') deletes.push({ key, change });
    const resource = gathered.resources.get(key);
    if (!resource) continue;
    // Drift is seen only where the service lists the live side; elsewhere every planned change is applied.
    const fingerprint = kindOf(resource.kind).listed ? desiredFingerprint(resource, input.secretHashes.get(key) ?? {}) : undefined;
    if (fingerprint) fingerprints.set(key, fingerprint);
    const hold = storedHolds.get(key);
    if (holdApplies(hold, fingerprint)) holds.set(key, hold);
    if (change.action === 'noop') {
      if (fingerprint && remembered.get(key) !== fingerprint) inSync.set(key, fingerprint);
      if (fingerprint && ctx.rebuilds?.wanted(key) && !resource.suspend) toEnqueue.push({ resource, change, key, fingerprint, drift: false, rebuild: true });
      continue;
    }
    if (change.action !== 'create' && change.action !== 'update' && change.action !== 'adopt') continue;
    if (change.suspended || resource.suspend) {
      decisions.set(key, { kind: 'suspended' });
      continue;
    }
    const conflict = conflicts.get(key);
    if (conflict) {
      decisions.set(key, { kind: 'conflict', conflict });
      continue;
    }
    if (!fingerprint) {
      toEnqueue.push({ resource, change, key, drift: false });
      continue;
    }
    const last = remembered.get(key);
    const approved = ctx.secretWrites?.approved(key, resource.name) === true;
    // A write of converge's own whose answer was lost (pending) is settled by its job from live state: not held.
    if (change.action !== 'create' && onlyUncomparedSecrets(change) && !pendingWrites.has(key) && (approved || last === undefined || last === fingerprint)) {
      if (approved) {
        toEnqueue.push({ resource, change, key, fingerprint, drift: false, secretsApproved: true });
        continue;
      }
      // Nothing to write but secret values converge cannot compare: sending them is a revision that may change
      // nothing. Held until the desired state changes (remembered now, so the change can be told) or an operator asks;
      // unless a job of this desired state is in flight or just finished (it records the hashes: the plan read the
      // applied state before it did).
      holdCandidates.push({ key, fingerprint, secrets: change.fields.map((f) => f.path.slice('secrets.'.length)), remember: last === undefined });
      continue;
    }
    const policy = policyOf(resource, ctx.settings.driftPolicy);
    if (holdApplies(hold, fingerprint)) {
      // The same input built a failed revision: not sent again. A drift of other fields is still reported.
      decisions.set(key, { kind: 'held', hold });
      drift.push({ key, policy: 'report', fields: change.fields.map((f) => f.path), reason: reasonOf(key, change) });
      continue;
    }
    const decision = decideDrift(last, fingerprint, policy, change.action === 'create' ? 'create' : 'update');
    if (decision.kind !== 'apply') drift.push({ key, policy, fields: change.fields.map((f) => f.path), reason: reasonOf(key, change) });
    if (decision.kind === 'report') {
      decisions.set(key, { kind: 'reported', policy: 'report' });
      // No memory: the reported desired state is remembered, so a later manifest change is told from this drift.
      if (last === undefined) inSync.set(key, fingerprint);
      continue;
    }
    toEnqueue.push({ resource, change, key, fingerprint, drift: decision.kind === 'heal' });
  }

  const lookups = await Promise.all(holdCandidates.map((c) => ctx.enqueuer.inFlightJob(c.key, c.fingerprint)));
  holdCandidates.forEach((c, i) => {
    const job = lookups[i];
    if (job && !job.finished) {
      const tracked: EnqueuedJob = { key: c.key, jobId: job.jobId, operation: 'in-flight', desired: c.fingerprint, fingerprint: c.fingerprint, inFlight: true };
      ctx.onEnqueued?.(tracked);
      decisions.set(c.key, { kind: 'enqueued', job: tracked, drift: false });
    } else if (job?.finished || ctx.finishedSince?.(c.key, c.fingerprint)) {
      decisions.set(c.key, { kind: 'settled' });
    } else {
      decisions.set(c.key, { kind: 'secrets-unknown', secrets: c.secrets });
      if (c.remember) inSync.set(c.key, c.fingerprint);
    }
  });

  let added = 0;
  const pending: Array<Omit<(typeof toEnqueue)[number], 'resource'>> = [];
  const desiredOf: string[] = [];
  for (const item of toEnqueue) {
    pending.push(item);
    desiredOf.push(item.fingerprint ?? desiredFingerprint(item.resource, input.secretHashes.get(item.key) ?? {}));
  }
  const adoptPolicy = ctx.settings.adopt === 'explicit' ? { adoptPolicy: 'explicit' as const } : {};
  const datas = toEnqueue.map((item, i) =>
    buildJobData(item.resource, operationFor(item.resource, item.change.action === 'create' ? 'create' : 'update'), {
      origin: 'daemon',
      desired: desiredOf[i]!,
      ...adoptPolicy,
      ...(item.rebuild ? { rebuild: true } : {}),
      ...(gathered.version ? { manifestVersion: gathered.version } : {}),
    }),
  );
  // Deletes (--prune) go through the same queue: the target's live id, never a name; the newest job of a key wins.
  const deleteDatas = deletes.map(({ change }) =>
    buildDeleteJobData({ kind: change.kind, name: change.name, id: change.id!, deleteTracingProject: ctx.settings.pruneTracingProjects === true }, { origin: 'daemon' }),
  );
  for (const data of deleteDatas) desiredOf.push(data.desired!);
  for (const { change, key } of deletes) pending.push({ change, key, drift: false });
  datas.push(...deleteDatas);
  // A resource whose waiting or active job already carries this desired state gets no second job (a resync, or a
  // watch reconcile, while the jobs of an earlier one still run); a different desired state replaces or follows it.
  await ctx.enqueuer.enqueue(datas, (enqueued, i) => {
    const item = pending[i]!;
    if (enqueued.how === 'finished') {
      decisions.set(item.key, { kind: 'settled' });
      return;
    }
    const job: EnqueuedJob = { key: item.key, jobId: enqueued.jobId, operation: datas[i]!.operation, desired: desiredOf[i]! };
    if (item.fingerprint) job.fingerprint = item.fingerprint;
    if (enqueued.how === 'in-flight') job.inFlight = true;
    else added += 1;
    if (item.secretsApproved) ctx.secretWrites?.done(item.key);
    if (item.rebuild) ctx.rebuilds?.done(item.key);
    ctx.onEnqueued?.(job);
    decisions.set(item.key, { kind: 'enqueued', job, drift: item.drift });
  }, {
    skipInFlight: true,
    finishedSince: (data) => data.desired !== undefined && ctx.finishedSince?.(data.key, data.desired) === true,
    ...(ctx.fence ? { fence: ctx.fence } : {}),
  });

  await ctx.memory.set(inSync);
  const declared = new Set<string>([...gathered.resources.keys(), ...input.blocked.map((b) => resourceKey(b.kind, b.name))]);
  // A hold about an older desired state (the manifest changed) or a resource no manifest declares any more is over.
  const stale = [...storedHolds].filter(([key, hold]) => !declared.has(key) || (fingerprints.has(key) && !holdApplies(hold, fingerprints.get(key)))).map(([key]) => key);
  if (stale.length > 0) await ctx.holds?.release(stale);
  await ctx.memory.retain(declared);

  return {
    plan: result,
    resources: gathered.resources,
    live: gathered.live,
    files: gathered.files.length,
    decisions,
    held: hold.held,
    drift,
    enqueued: added,
    fingerprints,
    holds,
    version: gathered.version,
    applied: gathered.input.applied,
    conflicts,
    released,
  };
}
