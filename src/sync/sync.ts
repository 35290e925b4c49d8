// The inner, level-triggered step of a job: re-read live state, recompute the minimal change, send only that, record it.
import { UnrecoverableError } from 'bullmq';
import type { ServiceClient } from '../service/client.js';
import { ServiceError } from '../service/errors.js';
import { applyRepositoryResolution, resolveRepositories } from '../observe/repositories.js';
import type { AppliedRecord, DeploymentResource, LiveDeployment, ProviderResource } from '../core/model.js';
import { CLIENT_SECRET, diffDeployment, diffProvider, requestBody, type DeploymentDiff } from '../plan/plan.js';
import type { CreateProviderRequest } from '../core/wire/schema.js';
import type { AppliedHint, AppliedStateStore } from '../enqueue/applied-state.js';
import type { PendingWrite, ReconcileJobResult } from '../enqueue/schema.js';
import { desiredSecrets } from './secret-values.js';

export interface SyncContext {
  client: ServiceClient;
  store: AppliedStateStore;
  /** Environment the worker resolves `env` secret references in. */
  env: NodeJS.ProcessEnv;
  now?: () => Date;
}

/**
 * How far the service's clock may be behind ours when deciding that a deployment found after a lost create
 * answer is the one this job created (its created_at is after our first send, less this margin).
 */
export const CLOCK_SKEW_MS = 120_000;

/** A create still unanswered after this long is treated as a new write (its send time is not reused). */
const PENDING_REUSE_MS = 3_600_000;

/** A job that cannot succeed as it is (blocked plan, name taken by something else): failed at once, not retried. */
function blocked(reason: string): UnrecoverableError {
  return new UnrecoverableError(`blocked: ${reason}`);
}

function pick(hashes: Record<string, string>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) if (hashes[name] !== undefined) out[name] = hashes[name]!;
  return out;
}

/**
 * The live deployment of exactly this name, or undefined. By id when known, else by name_contains (a substring
 * filter that may match others, so the exact name is picked out). Paging stops at the match: a found deployment
 * costs one request, and only a missing one reads on to the empty page that ends the list.
 */
export async function findLiveDeployment(client: ServiceClient, name: string, id?: string): Promise<LiveDeployment | undefined> {
  if (id) {
    for await (const page of client.listDeploymentPages({ deployment_ids: [id] })) {
      const hit = page.find((d) => d.id === id && d.name === name);
      if (hit) return hit;
    }
  }
  for await (const page of client.listDeploymentPages({ name_contains: name })) {
    const hit = page.find((d) => d.name === name);
    if (hit) return hit;
  }
  return undefined;
}

/** What a job found of an earlier attempt's write whose answer was lost. */
interface Settled {
  applied: AppliedRecord | undefined;
  /** The earlier write, when live state shows it landed (its hashes are now recorded as applied). */
  landed?: PendingWrite;
  /** A PATCH that starts no revision: whether it landed shows only in the diff, decided by the caller. */
  unsure?: PendingWrite;
  /** No live deployment: the pending write as read (left in place; a create retry reuses its send time). */
  pending?: PendingWrite;
}

/**
 * A write whose answer was lost may still have landed. Decide from live state whether it did, and if so record
 * its hashes as applied, so it is not sent a second time (a second PATCH with secrets is a needless revision).
 * A create landed when the deployment now exists and was created after the first send; a PATCH with secrets
 * landed when the latest revision changed since. Anything else is forgotten: this attempt decides afresh.
 */
async function settlePending(key: string, ctx: SyncContext, live: LiveDeployment | undefined): Promise<Settled> {
  const { applied, pending } = await ctx.store.read(key);
  if (!pending || (pending.op !== 'create' && pending.op !== 'patch')) return { applied };
  if (!live) return { applied, pending };
  if (pending.op === 'patch' && !pending.startsRevision) {
    await ctx.store.clearPending(key);
    return { applied, unsure: pending };
  }
  const landed =
    pending.op === 'create'
      ? Date.parse(live.created_at) >= Date.parse(pending.sentAt) - CLOCK_SKEW_MS
      : (live.latest_revision_id ?? null) !== (pending.revisionBefore ?? null);
  if (!landed) {
    await ctx.store.clearPending(key);
    return { applied };
  }
  return { applied: await ctx.store.recordWrite(key, { secrets: pending.secrets }, ctx.now?.(), applied ?? null), landed: pending };
}

const LOST_ANSWER = 'the answer to an earlier attempt was lost; live state shows its write landed';

/** The result of a job that has nothing left to send: its own earlier write, or nothing at all, did the work. */
function settledResult(settled: Settled, live: LiveDeployment | undefined): ReconcileJobResult {
  const earlier = settled.landed ?? settled.unsure;
  if (!earlier) return deploymentResult('unchanged', false, live);
  if (earlier.op === 'create') return deploymentResult('created', true, live, LOST_ANSWER);
  return deploymentResult('updated', earlier.startsRevision === true, live, LOST_ANSWER);
}

function deploymentResult(outcome: ReconcileJobResult['outcome'], newRevision: boolean, live: LiveDeployment | undefined, message?: string): ReconcileJobResult {
  const result: ReconcileJobResult = { outcome, new_revision: newRevision };
  if (live) {
    result.deploymentId = live.id;
    result.latestRevisionId = live.latest_revision_id ?? null;
  }
  if (message) result.message = message;
  return result;
}

interface DeploymentPlanning {
  resource: DeploymentResource;
  hashes: Record<string, string>;
  secretErrors: string[];
  repositoryError?: string;
  values: (names: readonly string[]) => Promise<Record<string, string>>;
}

async function prepareDeployment(resource: DeploymentResource, ctx: SyncContext): Promise<DeploymentPlanning> {
  let desired = resource;
  let repositoryError: string | undefined;
  const config = resource.spec.source_config ?? {};
  // Jobs from apply carry the repository already resolved in the same reconcile; resolve only what is missing.
  if (resource.spec.repository && (!config.integration_id || !config.repo_url)) {
    const resolution = await resolveRepositories(ctx.client, [resource]);
    desired = applyRepositoryResolution(resource, resolution.resolved);
    repositoryError = resolution.errors.get(resource.name);
  }
  const secrets = await desiredSecrets(desired, ctx.env);
  const planning: DeploymentPlanning = {
    resource: desired,
    hashes: secrets.hashes,
    secretErrors: secrets.errors,
    values: secrets.values,
  };
  if (repositoryError) planning.repositoryError = repositoryError;
  return planning;
}

function diffFor(p: DeploymentPlanning, live: LiveDeployment | undefined, applied: AppliedRecord | undefined): DeploymentDiff {
  const ctx: Parameters<typeof diffDeployment>[2] = { secretHashes: p.hashes, secretErrors: p.secretErrors };
  if (applied) ctx.applied = applied;
  if (p.repositoryError) ctx.repositoryError = p.repositoryError;
  return diffDeployment(p.resource, live, ctx);
}

/** Thrown by patchIfNeeded when the read-ahead record it was given is no longer the stored one: nothing was sent. */
const MARK_REFUSED = new Error('the applied record changed since it was read ahead, or a write is pending');

/**
 * Sends the PATCH of `diff` (if any) and records it. With `expected` (the applied record `applied` came from, read
 * ahead), the pending write is recorded only if that record is still the stored one and nothing else is pending:
 * otherwise nothing is sent and MARK_REFUSED is thrown.
 */
async function patchIfNeeded(
  key: string,
  p: DeploymentPlanning,
  diff: DeploymentDiff,
  live: LiveDeployment,
  ctx: SyncContext,
  /** The applied record read during this job (written over, not read again, after the PATCH). */
  applied: AppliedRecord | undefined,
  expected?: AppliedHint,
): Promise<Patched> {
  if (diff.change.action === 'blocked') throw blocked(diff.change.reason ?? 'the plan blocks it');
  if (!diff.request || diff.request.op !== 'patch') return { sent: false, live, newRevision: false };
  const written = pick(p.hashes, diff.secretNames);
  const body = requestBody(diff, await p.values(diff.secretNames));
  const pending: PendingWrite = {
    op: 'patch',
    secrets: written,
    sentAt: (ctx.now?.() ?? new Date()).toISOString(),
    revisionBefore: live.latest_revision_id ?? null,
    startsRevision: diff.change.new_revision,
  };
  if (!expected) await ctx.store.setPending(key, pending);
  else if (!(await ctx.store.markPending(key, expected, pending)).marked) throw MARK_REFUSED;
  const updated = await ctx.client.patchDeployment(diff.request.id, body!);
  const recorded = await ctx.store.recordWrite(key, { secrets: written }, ctx.now?.(), applied ?? null);
  return { sent: true, live: updated, newRevision: diff.change.new_revision, applied: recorded };
}

interface Patched {
  sent: boolean;
  live: LiveDeployment;
  newRevision: boolean;
  applied?: AppliedRecord;
}

/**
 * One Deployment job. `snapshot`: the deployment as the plan listed it moments ago (see snapshots.ts); when given,
 * the job may trust it instead of reading live state again (patchFromSnapshot).
 */
export async function reconcileDeployment(
  key: string,
  resource: DeploymentResource,
  ctx: SyncContext,
  knownId?: string,
  snapshot?: LiveDeployment,
): Promise<ReconcileJobResult> {
  const p = await prepareDeployment(resource, ctx);
  if (snapshot) {
    const done = await patchFromSnapshot(key, p, snapshot, ctx, knownId);
    if (done) return done;
  }
  return reconcileFresh(key, p, ctx, knownId);
}

/**
 * Saves the re-read: the plan's snapshot is trusted when nothing of an earlier write is pending and it calls for a
 * PATCH. Level-triggered all the same: the PATCH answer is the deployment right after the write, and when it still
 * differs from the manifest (someone changed it after the snapshot) the job goes the full way at once (read,
 * recompute, write what is left). Undefined: nothing was sent; take the full way.
 *
 * The applied record comes from the store's read-ahead when there is one (then the write is marked pending only if
 * that record is still the stored one: one round trip instead of a read and a write), else from a read.
 */
async function patchFromSnapshot(
  key: string,
  p: DeploymentPlanning,
  snapshot: LiveDeployment,
  ctx: SyncContext,
  knownId: string | undefined,
): Promise<ReconcileJobResult | undefined> {
  const hint = ctx.store.takeHint(key);
  let applied: AppliedRecord | undefined;
  if (hint) {
    applied = hint.record;
  } else {
    const read = await ctx.store.read(key);
    if (read.pending) return undefined;
    applied = read.applied;
  }
  const diff = diffFor(p, snapshot, applied);
  if (diff.change.action !== 'update' || diff.request?.op !== 'patch') return undefined;
  let patched: Patched;
  try {
    patched = await patchIfNeeded(key, p, diff, snapshot, ctx, applied, hint);
  } catch (error) {
    // Gone since the snapshot: the full way finds out what is there now (and creates it when nothing is).
    if (error instanceof ServiceError && error.status === 404) return undefined;
    // The applied record changed since it was read ahead, or a write is pending: nothing was sent; the full way decides.
    if (error === MARK_REFUSED) return undefined;
    throw error;
  }
  const after = diffFor(p, patched.live, patched.applied);
  if (!after.request && after.change.action !== 'blocked') return deploymentResult('updated', patched.newRevision, patched.live);
  const rest = await reconcileFresh(key, p, ctx, knownId);
  return { ...rest, outcome: rest.outcome === 'unchanged' ? 'updated' : rest.outcome, new_revision: rest.new_revision || patched.newRevision };
}

/** The full level-triggered way: read live state (by id when known), settle an earlier lost write, write what differs. */
async function reconcileFresh(key: string, p: DeploymentPlanning, ctx: SyncContext, knownId: string | undefined): Promise<ReconcileJobResult> {
  const resource = p.resource;
  const live = await findLiveDeployment(ctx.client, resource.name, knownId);
  const settled = await settlePending(key, ctx, live);
  const diff = diffFor(p, live, settled.applied);
  if (diff.change.action === 'blocked') throw blocked(diff.change.reason ?? 'the plan blocks it');
  if (!diff.request) return settledResult(settled, live);
  if (diff.request.op === 'patch') {
    const patched = await patchIfNeeded(key, p, diff, live!, ctx, settled.applied);
    return deploymentResult('updated', patched.newRevision, patched.live);
  }

  const written = pick(p.hashes, diff.secretNames);
  const body = requestBody(diff, await p.values(diff.secretNames));
  const now = ctx.now?.() ?? new Date();
  const earlier = settled.pending;
  const retrying = earlier?.op === 'create' && now.getTime() - Date.parse(earlier.sentAt) < PENDING_REUSE_MS;
  const sentAt = retrying ? earlier.sentAt : now.toISOString();
  await ctx.store.setPending(key, { op: 'create', secrets: written, sentAt });
  try {
    const created = await ctx.client.createDeployment(body as Parameters<ServiceClient['createDeployment']>[0]);
    await ctx.store.recordWrite(key, { secrets: written }, ctx.now?.());
    return deploymentResult('created', true, created);
  } catch (error) {
    if (!(error instanceof ServiceError) || error.status !== 409) throw error;
    return adoptDeployment(key, p, ctx, error);
  }
}

/** A create answered 409: the name exists. Re-read it, take it over, and PATCH only what still differs. */
async function adoptDeployment(key: string, p: DeploymentPlanning, ctx: SyncContext, conflict: ServiceError): Promise<ReconcileJobResult> {
  const live = await findLiveDeployment(ctx.client, p.resource.name);
  if (!live) {
    await ctx.store.clearPending(key);
    throw blocked(
      `the service answered 409 (${conflict.detail}) but lists no deployment named "${p.resource.name}": another resource, such as a tracing project, holds the name; choose another metadata.name`,
    );
  }
  const settled = await settlePending(key, ctx, live);
  const diff = diffFor(p, live, settled.applied);
  const patched = await patchIfNeeded(key, p, diff, live, ctx, settled.applied);
  const message = patched.sent ? 'the deployment already existed; converge adopted it and patched what differed' : 'the deployment already existed and matches the manifest; converge adopted it';
  return deploymentResult('adopted', patched.newRevision, patched.live, message);
}

/** One OAuthProvider job. Providers cannot be read: the applied record (definition hash) is the only knowledge. */
export async function reconcileProvider(
  key: string,
  resource: ProviderResource,
  ctx: SyncContext,
): Promise<ReconcileJobResult> {
  const secrets = await desiredSecrets(resource, ctx.env);
  const { applied, pending: earlier } = await ctx.store.read(key);
  const diff = diffProvider(resource, { secretHashes: secrets.hashes, secretErrors: secrets.errors, ...(applied ? { applied } : {}) });
  if (diff.change.action === 'blocked') throw blocked(diff.change.reason ?? 'the plan blocks it');
  if (!diff.request) return { outcome: 'unchanged', new_revision: false };

  const written = diff.request.op === 'create' && diff.request.sendClientSecret ? pick(secrets.hashes, [CLIENT_SECRET]) : {};
  const sameWrite = earlier !== undefined && earlier.definitionHash === diff.definitionHash;
  await ctx.store.setPending(key, {
    op: diff.request.op === 'create' ? 'create-provider' : 'discover-provider',
    secrets: written,
    definitionHash: diff.definitionHash,
    sentAt: sameWrite ? earlier.sentAt : (ctx.now?.() ?? new Date()).toISOString(),
  });
  try {
    if (diff.request.op === 'create') {
      const body: CreateProviderRequest = { ...diff.request.body };
      if (diff.request.sendClientSecret) body.client_secret = (await secrets.values([CLIENT_SECRET]))[CLIENT_SECRET]!;
      await ctx.client.createProvider(body);
    } else {
      await ctx.client.discoverProvider(diff.request.body);
    }
  } catch (error) {
    if (!(error instanceof ServiceError) || error.status !== 409) throw error;
    await ctx.store.recordWrite(key, { secrets: written, definitionHash: diff.definitionHash }, ctx.now?.());
    const message = sameWrite
      ? 'an earlier attempt created the provider but its answer was lost; converge recorded it as applied'
      : 'a provider with this provider_id already existed; the service cannot read providers, so converge now tracks the manifest definition as applied';
    return { outcome: 'adopted', new_revision: false, message };
  }
  await ctx.store.recordWrite(key, { secrets: written, definitionHash: diff.definitionHash }, ctx.now?.());
  return { outcome: 'created', new_revision: false };
}
