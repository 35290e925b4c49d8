// The inner reconcile of the manifest directory: load, hold broken files at their last good version, plan, enqueue.
import type { ServiceClient } from '../service/client.js';
import type { AppliedRecord, DesiredResource, DriftPolicy, LiveDeployment, Plan, PlanChange } from '../core/model.js';
import { resourceKey } from '../core/model.js';
import { kindOf } from '../core/kinds/index.js';
import { plan, type PlanInput } from '../plan/plan.js';
import type { Enqueuer } from '../enqueue/enqueuer.js';
import { buildJobData, operationFor } from '../enqueue/jobs.js';
import { gatherPlanInput } from '../observe/gather.js';
import type { ManifestCache } from '../observe/manifests.js';
import { decideDrift, desiredFingerprint, type DesiredMemory } from './drift.js';
import type { HeldResource, LastGoodManifests } from './last-good.js';

/** What the inner reconcile needs; the outer (daemon.ts) owns it. */
export interface CycleContext {
  /** Absolute manifest directory. */
  dir: string;
  env: NodeJS.ProcessEnv;
  client: ServiceClient;
  /** Adds the jobs (newest desired state of each resource wins). */
  enqueuer: Pick<Enqueuer, 'enqueue' | 'inFlightJob'>;
  applied: {
    getAll(): Promise<Map<string, AppliedRecord>>;
    /** Resources with a write whose answer is not known yet: their job settles it, so they are never held. */
    pendingKeys?(): Promise<Set<string>>;
  };
  memory: DesiredMemory;
  lastGood: LastGoodManifests;
  settings: { allowLocalDiscovery: boolean; driftPolicy: DriftPolicy; namePrefix?: string | undefined };
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
  /**
   * The leader lease's fencing token while this replica holds it, undefined once lost (see leadership.ts): stamped on
   * every job, and a lost lease stops the enqueue (NotLeaderError). Absent: no lease (every job goes in, unstamped).
   */
  fence?: () => number | undefined;
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
  drift: ReadonlyArray<{ key: string; policy: DriftPolicy; fields: string[] }>;
  /** Jobs added (a resource whose job of the same desired state was still waiting or active is not counted). */
  enqueued: number;
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
    env: ctx.env,
    client: ctx.client,
    // A literal secret lives only in a manifest file: the daemon never accepts one (`converge run` refuses the setting).
    allowLiteralSecrets: false,
    allowLocalDiscovery: ctx.settings.allowLocalDiscovery,
    namePrefix: ctx.settings.namePrefix,
    applied: ctx.applied,
    ...(ctx.manifestCache ? { manifestCache: ctx.manifestCache } : {}),
  });
  const hold = ctx.lastGood.observe({
    resources: gathered.input.resources,
    blocked: gathered.input.blocked,
    diagnostics: gathered.diagnostics,
    files: gathered.files,
  });
  const input: PlanInput = { ...gathered.input, blocked: [...gathered.input.blocked, ...hold.extraBlocked] };
  const result = plan(input);
  const remembered = await ctx.memory.getAll();

  const inSync = new Map<string, string>();
  const decisions = new Map<string, Decision>();
  const drift: Array<{ key: string; policy: DriftPolicy; fields: string[] }> = [];
  const holdCandidates: Array<{ key: string; fingerprint: string; secrets: string[]; remember: boolean }> = [];
  const toEnqueue: Array<{ resource: DesiredResource; change: PlanChange; key: string; fingerprint?: string; drift: boolean; secretsApproved?: true }> = [];

  for (const change of result.changes) {
    const key = resourceKey(change.kind, change.name);
    const resource = gathered.resources.get(key);
    if (!resource) continue;
    // Drift is seen only where the service lists the live side; elsewhere every planned change is applied.
    const fingerprint = kindOf(resource.kind).listed ? desiredFingerprint(resource, input.secretHashes.get(key) ?? {}) : undefined;
    if (change.action === 'noop') {
      if (fingerprint && remembered.get(key) !== fingerprint) inSync.set(key, fingerprint);
      continue;
    }
    if (change.action !== 'create' && change.action !== 'update') continue;
    if (change.suspended || resource.suspend) {
      decisions.set(key, { kind: 'suspended' });
      continue;
    }
    if (!fingerprint) {
      toEnqueue.push({ resource, change, key, drift: false });
      continue;
    }
    const last = remembered.get(key);
    const approved = ctx.secretWrites?.approved(key, resource.name) === true;
    // A write of converge's own whose answer was lost (pending) is settled by its job from live state: not held.
    if (change.action === 'update' && onlyUncomparedSecrets(change) && !pendingWrites.has(key) && (approved || last === undefined || last === fingerprint)) {
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
    const decision = decideDrift(last, fingerprint, policy, change.action);
    if (decision.kind !== 'apply') drift.push({ key, policy, fields: change.fields.map((f) => f.path) });
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
  const pending: typeof toEnqueue = [];
  const desiredOf: string[] = [];
  for (const item of toEnqueue) {
    pending.push(item);
    desiredOf.push(item.fingerprint ?? desiredFingerprint(item.resource, input.secretHashes.get(item.key) ?? {}));
  }
  const datas = pending.map((item, i) =>
    buildJobData(item.resource, operationFor(item.resource, item.change.action === 'create' ? 'create' : 'update'), { origin: 'daemon', desired: desiredOf[i]! }),
  );
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
    ctx.onEnqueued?.(job);
    decisions.set(item.key, { kind: 'enqueued', job, drift: item.drift });
  }, {
    skipInFlight: true,
    finishedSince: (data) => data.desired !== undefined && ctx.finishedSince?.(data.key, data.desired) === true,
    ...(ctx.fence ? { fence: ctx.fence } : {}),
  });

  await ctx.memory.set(inSync);
  const declared = new Set<string>([...gathered.resources.keys(), ...input.blocked.map((b) => resourceKey(b.kind, b.name))]);
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
  };
}
