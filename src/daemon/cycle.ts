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
  enqueuer: Pick<Enqueuer, 'enqueue'>;
  applied: { getAll(): Promise<Map<string, AppliedRecord>> };
  memory: DesiredMemory;
  lastGood: LastGoodManifests;
  settings: { allowLocalDiscovery: boolean; driftPolicy: DriftPolicy; namePrefix?: string | undefined };
  /** Parse results kept between reconciles: an edit re-parses only the files whose bytes changed. */
  manifestCache?: ManifestCache;
  /** Called right after each job is enqueued (before the reconcile ends), so a fast job's result is never missed. */
  onEnqueued?: (job: EnqueuedJob) => void;
}

export interface EnqueuedJob {
  key: string;
  jobId: string;
  operation: string;
  /** Fingerprint of the desired state the job carries (remembered once the job completes). Deployments only. */
  fingerprint?: string;
}

/** What became of one planned create/update. */
export type Decision =
  | { kind: 'enqueued'; job: EnqueuedJob; drift: boolean }
  | { kind: 'reported'; policy: 'report' }
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
  enqueued: number;
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
  const toEnqueue: Array<{ resource: DesiredResource; change: PlanChange; key: string; fingerprint?: string; drift: boolean }> = [];

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
    const policy = policyOf(resource, ctx.settings.driftPolicy);
    const decision = decideDrift(remembered.get(key), fingerprint, policy);
    if (decision.kind !== 'apply') drift.push({ key, policy, fields: change.fields.map((f) => f.path) });
    if (decision.kind === 'report') {
      decisions.set(key, { kind: 'reported', policy: 'report' });
      continue;
    }
    toEnqueue.push({ resource, change, key, fingerprint, drift: decision.kind === 'heal' });
  }

  const datas = toEnqueue.map((item) =>
    buildJobData(item.resource, operationFor(item.resource, item.change.action === 'create' ? 'create' : 'update'), { origin: 'daemon' }),
  );
  await ctx.enqueuer.enqueue(datas, (enqueued, i) => {
    const item = toEnqueue[i]!;
    const job: EnqueuedJob = { key: item.key, jobId: enqueued.jobId, operation: datas[i]!.operation };
    if (item.fingerprint) job.fingerprint = item.fingerprint;
    ctx.onEnqueued?.(job);
    decisions.set(item.key, { kind: 'enqueued', job, drift: item.drift });
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
    enqueued: toEnqueue.length,
  };
}
