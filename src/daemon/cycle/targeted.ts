// A watch event's reconcile: the changed files' resources, decided against their live state only, through the corridor.
import { waveOf } from '../../core/waves.js';
import { compareDiagnostics } from '../../core/diagnostics.js';
import { insertSorted } from '../../core/sorted-merge.js';
import { inListing } from '../../core/kinds/index.js';
import { mapBounded } from '../../core/map-bounded.js';
import {
  resourceKey,
  resourceName,
  type AppliedRecord,
  type DesiredResource,
  type LiveDeployment,
  type Plan,
  type PlanChange,
} from '../../core/model.js';
import type { GatherOptions, Gathered } from '../../observe/gather.js';
import { recordDeclarations, type CorridorDeclined } from '../../observe/corridor.js';
import { loadChangedManifests } from '../../observe/manifests.js';
import { compareChanges, summarize } from '../../plan/summary.js';
import { sendingOnce } from '../../service/call-scope.js';
import { BadResponseError, NetworkError } from '../../service/errors.js';
import { findLiveDeployment } from '../../service/find-deployment.js';
import { ServiceError } from '../../core/errors.js';
import { liveRefs, type ReconcileOutcome } from './cycle.js';
import { actOn, daemonCorridor, type Acted, type DaemonDecided } from './daemon-corridor.js';
import type { CycleContext } from './cycle-context.js';

/** A targeted reconcile's answer: its outcome, folded into the last full one; or why the change takes the full path. */
export type Targeted = { outcome: ReconcileOutcome } | { full: string };

/** Live reads in flight at once (one request each, by id or by name_contains). */
const READS_IN_FLIGHT = 8;

/** What the changed files declared at the last reconcile and declare now, or why the change takes the full path. */
interface Scope {
  /** Every resource key decided: declared before or now by a changed file. */
  keys: Set<string>;
  loaded: NonNullable<Awaited<ReturnType<typeof loadChangedManifests>>>;
}

/** The resources the changed files declare now and declared before (previous), when one by one is the same as the full path. */
async function scopeOf(
  ctx: CycleContext,
  previous: ReconcileOutcome,
  paths: readonly string[],
): Promise<Scope | string> {
  if (!ctx.manifestCache || ctx.environment) return 'variables files or overlays are read with the manifests';
  if (previous.held.length > 0 || previous.plan.diagnostics.some((d) => d.severity === 'error'))
    return 'a manifest has errors';
  const loaded = await loadChangedManifests(ctx.dir, paths, { allowLiteralSecrets: false, cache: ctx.manifestCache });
  // A file removed, renamed away or that fails to load: the full path holds, orphans or prunes what it declared.
  if (!loaded) return 'a changed file is gone or does not load';
  if (loaded.blocked.length > 0) return 'a name is declared twice';
  const changed = new Set(paths);
  const before = [...previous.resources].filter(([, r]) => changed.has(r.location.file));
  const now = new Map(loaded.resources.map((r) => [resourceKey(r.kind, r.name), r] as const));
  if (before.some(([key]) => !now.has(key)))
    return "a resource is no longer declared where it was (orphans and prune are the full listing's)";
  for (const [key, r] of now) {
    const elsewhere = previous.resources.get(key);
    if (elsewhere && !changed.has(elsewhere.location.file)) return 'a name is declared by another file too';
    if (!inListing(r.kind)) return 'a changed file declares a resource the deployment listing does not hold';
    if (ctx.settings.namePrefix !== undefined && !r.name.startsWith(ctx.settings.namePrefix))
      return 'a resource outside the name prefix';
  }
  if (ctx.settings.prune && ctx.applied.absences) {
    // A resource declared again while its absence counts toward prune_grace: the full path ends the absence.
    const absent = await ctx.applied.absences();
    if ([...now.keys()].some((key) => absent.has(key))) return 'a resource comes back while prune counts its absence';
  }
  return { keys: new Set([...before.map(([key]) => key), ...now.keys()]), loaded };
}

/** The applied records of the resources decided, one read each where the store has it (not every record of the prefix). */
async function appliedOf(
  ctx: CycleContext,
  resources: readonly DesiredResource[],
): Promise<Map<string, AppliedRecord>> {
  const get = ctx.applied.get?.bind(ctx.applied);
  if (!get) return ctx.applied.getAll();
  const keys = resources.map((r) => resourceKey(r.kind, r.name));
  const records = await Promise.all(keys.map((key) => get(key)));
  return new Map(keys.flatMap((key, i) => (records[i] ? [[key, records[i]] as const] : [])));
}

/**
 * The live deployment of each declared name, read by the id the last listing or the applied state knows, else by
 * name_contains. Each read is tried once: a failure gives the change to the full reconcile, whose listing owns the
 * retries and the reconcile's backoff (docs/daemon.md).
 */
async function readLive(
  ctx: CycleContext,
  previous: ReconcileOutcome,
  resources: readonly DesiredResource[],
  applied: Promise<Map<string, { ownership?: { id: string } }>>,
): Promise<LiveDeployment[]> {
  const names = new Set(resources.map((r) => r.name));
  const known = new Map(previous.live.filter((d) => names.has(d.name)).map((d) => [d.name, d.id] as const));
  const records = await applied;
  const found: LiveDeployment[] = [];
  await mapBounded(resources, READS_IN_FLIGHT, async (r) => {
    const id = known.get(r.name) ?? records.get(resourceKey(r.kind, r.name))?.ownership?.id;
    const live = await sendingOnce(() => findLiveDeployment(ctx.client, r.name, id));
    if (live) found.push(live);
  });
  return found;
}

/** Whether the declared resources are in more than one wave (converge/wave). */
function spansWaves(resources: Iterable<DesiredResource>): boolean {
  const waves = new Set<number>();
  for (const resource of resources) waves.add(waveOf(resource));
  return waves.size > 1;
}

/**
 * Reconciles the changed files' resources only, or answers why this change takes the full path (a file removed or
 * failing, a resource no longer declared, a name declared twice, variables or overlays, prune's absences). Its scope
 * is the changed files and the live deployments of their names; the corridor, the decision (once per resource),
 * holds, flap guard and enqueue are the full reconcile's (src/daemon/cycle/daemon-corridor.ts); it never deletes: its
 * live side holds only declared names, so it plans no orphan.
 */
export async function reconcileFiles(
  ctx: CycleContext,
  previous: ReconcileOutcome,
  paths: readonly string[],
): Promise<Targeted> {
  ctx.steps?.enter('state');
  const pendingWrites = (await ctx.applied.pendingKeys?.()) ?? new Set<string>();
  ctx.steps?.enter('manifests');
  const scope = await scopeOf(ctx, previous, paths);
  if (typeof scope === 'string') return { full: scope };
  // Waves gate a write on every other resource's state (src/core/waves.ts): only the full reconcile decides them all.
  if (spansWaves([...previous.resources.values(), ...scope.loaded.resources]))
    return { full: 'the resources span several rollout waves' };
  ctx.steps?.enter('listing');
  const appliedRead = appliedOf(ctx, scope.loaded.resources);
  appliedRead.catch(() => undefined);
  const listing = readLive(ctx, previous, scope.loaded.resources, appliedRead);
  let decided: DaemonDecided | CorridorDeclined;
  try {
    decided = await daemonCorridor<CorridorDeclined>(ctx, {
      scope: { files: filesOptions(ctx), loaded: scope.loaded, live: listing, applied: appliedRead },
      pendingWrites,
      keys: scope.keys,
      input: async (gathered) => {
        // A secret or a repository that does not resolve: the full path reports them with every other finding.
        const blocked = gathered.diagnostics.some((d) => d.severity === 'error');
        if (blocked) return { declined: 'a changed resource is blocked' };
        ctx.steps?.enter('state');
        await recordDeclarations(ctx.applied, gathered);
        ctx.steps?.enter('decision');
        ctx.lastGood.observeValidFiles(scope.loaded.files, scope.loaded.resources);
        return gathered.input;
      },
      held: () => [],
    });
  } catch (error) {
    // The service did not answer a read: the full reconcile reads it again, with its retries and backoff.
    if (unanswered(error)) return { full: `a live read failed (${error.message})` };
    throw error;
  }
  if ('declined' in decided) return { full: decided.declined };
  const acted = await actOn(ctx, decided, scope.keys);
  return { outcome: folded(ctx, previous, { scope, paths, result: decided.plan, gathered: decided.gathered, acted }) };
}

/** A read the service did not answer, or answered with an error or a body that is not what it should be. */
function unanswered(error: unknown): error is NetworkError | ServiceError | BadResponseError {
  return error instanceof NetworkError || error instanceof ServiceError || error instanceof BadResponseError;
}

/** What the changed files' load reads besides them, as the daemon reads it (no literal secret, ever). */
function filesOptions(ctx: CycleContext): GatherOptions {
  return {
    dir: ctx.dir,
    env: ctx.env,
    client: ctx.client,
    allowLiteralSecrets: false,
    allowLocalDiscovery: ctx.settings.allowLocalDiscovery,
    namePrefix: ctx.settings.namePrefix,
    ...(ctx.settings.adopt ? { adoptPolicy: ctx.settings.adopt } : {}),
  };
}

/**
 * `before` less the keys `without`, with `entries` set (a key already there keeps its place): a copy, or `before`
 * itself when that leaves it as it is (none of `without` in it, no entry).
 */
function withEntries<T>(
  before: ReadonlyMap<string, T> | undefined,
  entries: Iterable<readonly [string, T]>,
  without: ReadonlySet<string> = new Set(),
): ReadonlyMap<string, T> {
  const added = [...entries];
  if (before && added.length === 0 && ![...without].some((key) => before.has(key))) return before;
  const map = new Map(before ?? []);
  for (const key of without) map.delete(key);
  for (const [key, value] of added) map.set(key, value);
  return map;
}

/**
 * The last full outcome with this reconcile's resources in place of theirs: what status, metrics and logs read. The
 * lists stay in the plan's order: the few new entries are inserted at their place, the rest is not sorted again.
 */
function folded(
  ctx: CycleContext,
  previous: ReconcileOutcome,
  now: { scope: Scope; paths: readonly string[]; result: Plan; gathered: Gathered; acted: Acted },
): ReconcileOutcome {
  const { scope, result, gathered, acted } = now;
  /** `before` (in its order) without the decided resources, then theirs now. */
  const replaced = <T>(
    before: ReadonlyMap<string, T> | undefined,
    entries: Iterable<readonly [string, T]>,
  ): ReadonlyMap<string, T> => withEntries(before, entries, scope.keys);
  // A change whose name no decided key has is kept without making its key (the plan holds every resource).
  const decidedNames = new Set([...scope.keys].map(resourceName));
  const decided = (c: PlanChange): boolean => decidedNames.has(c.name) && scope.keys.has(resourceKey(c.kind, c.name));
  const changes = insertSorted(
    previous.plan.changes.filter((c) => !decided(c)),
    result.changes,
    compareChanges,
  );
  const changed = new Set(now.paths);
  const diagnostics = insertSorted(
    previous.plan.diagnostics.filter((d) => !changed.has(d.file)),
    result.diagnostics,
    compareDiagnostics,
  );
  const names = new Set(scope.loaded.resources.map((r) => r.name));
  return {
    plan: { ...previous.plan, changes, diagnostics, summary: summarize(changes) },
    resources: replaced(previous.resources, gathered.resources),
    live: [...previous.live.filter((d) => !names.has(d.name)), ...liveRefs(gathered.live.deployments)],
    files: ctx.manifestCache?.size ?? previous.files,
    outcomes: replaced(previous.outcomes, acted.outcomes),
    held: previous.held,
    drift: [...previous.drift.filter((d) => !scope.keys.has(d.key)), ...acted.drift],
    enqueued: acted.added,
    fingerprints: replaced(previous.fingerprints, acted.fingerprints),
    holds: replaced(previous.holds, acted.holds),
    version: gathered.version,
    applied: withEntries(previous.applied, gathered.input.applied),
    conflicts: acted.conflicts,
    released: acted.released,
    revisionReads: acted.revisions.requests,
    targeted: { keys: scope.keys, files: changed },
  };
}
