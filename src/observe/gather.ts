// The I/O half of planning: reads manifests, live deployments, applied state, repositories and discovery into a PlanInput.
import type { ServiceClient } from '../service/client.js';
import { resolveRepositories } from '../service/repositories.js';
import type { DeploymentDeletes } from '../service/deployments.js';
import { failingFiles, type Diagnostic } from '../core/diagnostics.js';
import { emptyFiles, unseenFiles, unseenFilesOf } from '../core/declared-files.js';
import {
  formatLocation,
  resourceKey,
  type AppliedRecord,
  type DeploymentResource,
  type DesiredResource,
  type DiscoveryPreview,
  type ListedDeployment,
  type LiveState,
} from '../core/model.js';
import { mapBounded } from '../core/map-bounded.js';
import { inListing, listedKind, mcpProviders, repositoryResources, resolvedAtEdge } from '../core/kinds/index.js';
import type { PlanInput } from '../plan/plan.js';
import type { PreparedChanges } from '../plan/prepared.js';
import { previewDiscovery } from '../discovery/discover.js';
import type { Environment } from './environment.js';
import { LIST_PREFETCH, listLiveDeployments, listLiveProviders } from './live.js';
import { loadManifestDir, type ManifestCache, type ManifestDirResult } from './manifests.js';
import { readManifestVersion } from './manifest-version.js';
import { PlanAhead } from './plan-ahead.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import { hashDesiredSecrets, secretErrorDiagnostic, shortSecretDiagnostic } from '../secrets/resolve.js';
import type { AdoptPolicy } from '../core/ownership.js';
import type { PruneOptions } from '../plan/prune.js';

/** Read-only view of the applied-state store (Redis); absent when converge runs without one. */
export interface AppliedStateReader {
  getAll(): Promise<Map<string, AppliedRecord>>;
}

export interface GatherOptions {
  dir: string;
  env: NodeJS.ProcessEnv;
  client: ServiceClient;
  allowLiteralSecrets: boolean;
  allowLocalDiscovery: boolean;
  applied?: AppliedStateReader;
  /** Variables files and overlay directories read with `dir` (docs/environments.md). */
  environment?: Environment | undefined;
  /** Parse results of earlier loads of `dir` (a long-lived daemon): files whose bytes did not change are not parsed again. */
  manifestCache?: ManifestCache;
  /** Called once the manifest files are read and parsed (the daemon's step clock: src/daemon/cycle/cycle-context.ts). */
  onManifestsRead?: () => void;
  /** Called with the number of live deployments listed so far (progress on a TTY). */
  onLiveProgress?: (count: number) => void;
  /**
   * name_prefix: only deployments whose names start with it are listed (the service is asked with
   * name_contains, then the names are filtered by prefix), planned and reported as orphans.
   */
  namePrefix?: string | undefined;
  /** Notes for the plan from the caller (e.g. applied state not read). */
  notes?: string[];
  /** adopt setting (default auto). */
  adoptPolicy?: AdoptPolicy;
  /**
   * --prune and --max-deletes; absent: prune off. Whether the service deletes is probed here, once, when prune could
   * delete, unless `probe` is false (the daemon probes when a delete falls due: src/daemon/cycle/cycle.ts), or `deletes`
   * gives the answer already (apply --plan: the saved plan's, so a refused plan sends no DELETE).
   */
  prune?: { enabled: boolean; maxDeletes: number; probe?: boolean; deletes?: DeploymentDeletes };
}

export interface Gathered {
  input: PlanInput;
  /** Desired resources after repository resolution, by resourceKey. */
  resources: Map<string, DesiredResource>;
  /** The live side the plan read (the same as `input.live`). */
  live: LiveState;
  files: string[];
  diagnostics: Diagnostic[];
  /** Which manifests were read: the git commit of the directory, else its content hash, and when. */
  version: ManifestVersion;
  /** The content hash of the files read (manifests, variables files, overlays), whether or not they are in git. */
  contentId: string;
  /** Changes diffed while the manifests compiled, for plan() to take where they fit (src/observe/plan-ahead.ts). */
  prepared?: PreparedChanges;
}

const DISCOVERY_CONCURRENCY = 4;

/** The files and folders an environment reads besides the manifest directory (the version must cover them too). */
function environmentPaths(environment: Environment | undefined): string[] {
  return environment ? [...environment.vars, ...environment.overlays].map((input) => input.path) : [];
}

/**
 * Reads everything a plan needs. The live listing and the applied state do not depend on the manifests, so
 * they start first and are read while the manifest files are loaded; the rest follows in parallel. Each resource's
 * secrets, fingerprint and change are worked out as its file compiles (src/observe/plan-ahead.ts), the changes once
 * the live side is read.
 */
export async function gatherPlanInput(options: GatherOptions): Promise<Gathered> {
  const stop = { requested: false };
  const listing = listLiveDeployments(options.client, {
    namePrefix: options.namePrefix,
    prefetch: LIST_PREFETCH,
    stop,
    ...(options.onLiveProgress ? { onProgress: options.onLiveProgress } : {}),
  });
  const appliedRead = options.applied ? options.applied.getAll() : Promise.resolve(new Map<string, AppliedRecord>());
  // Both are awaited below; these handlers only keep a failure during loading from being reported as unhandled.
  listing.catch(() => undefined);
  appliedRead.catch(() => undefined);
  const ahead = new PlanAhead(options.env, options.namePrefix);
  // A failure to list or read is gatherFrom's to report; the changes are then not diffed ahead.
  void Promise.all([listing, appliedRead])
    .then(([live, applied]) => ahead.liveRead(live, applied))
    .catch(() => undefined);
  let loaded: ManifestDirResult;
  try {
    loaded = await loadManifestDir(options.dir, {
      allowLiteralSecrets: options.allowLiteralSecrets,
      ...(options.manifestCache ? { cache: options.manifestCache } : {}),
      ...(options.environment ? { environment: options.environment } : {}),
      onCompiled: ahead.compiled,
    });
  } catch (error) {
    stop.requested = true;
    ahead.stop();
    throw error;
  }
  options.onManifestsRead?.();
  try {
    return await gatherFrom(options, loaded, listing, appliedRead, ahead);
  } finally {
    ahead.stop();
  }
}

/**
 * The rest of a plan's input, from manifests loaded and the live deployments and applied state being read: repositories,
 * discovery, providers, secret hashes. A targeted reconcile (src/daemon/cycle/targeted.ts) hands in the changed files
 * and the live deployments of their names only.
 */
export async function gatherFrom(
  options: GatherOptions,
  loaded: ManifestDirResult,
  listing: Promise<ListedDeployment[]>,
  appliedRead: Promise<Map<string, AppliedRecord>>,
  ahead?: PlanAhead,
): Promise<Gathered> {
  const prefix = options.namePrefix;
  const outside =
    prefix === undefined ? [] : loaded.resources.filter((r) => inListing(r.kind) && !r.name.startsWith(prefix));
  const inScope = outside.length === 0 ? loaded.resources : loaded.resources.filter((r) => !outside.includes(r));
  const deployments = repositoryResources(inScope);
  const [version, listed, applied, repos, discovery, providers] = await Promise.all([
    readManifestVersion(options.dir, loaded.contentId, new Date(), environmentPaths(options.environment)),
    listing,
    appliedRead,
    deployments.some((d) => d.spec.repository)
      ? resolveRepositories(options.client, deployments)
      : Promise.resolve({ resolved: new Map(), errors: new Map<string, string>() }),
    previewProviders(inScope, options.allowLocalDiscovery),
    // prune: converge's providers are listed too when no manifest declares one (their manifests may all be gone).
    // `owned` is read only when asked: a promise derived from appliedRead ahead of time would be a second, unhandled
    // rejection when Redis cannot be read (appliedRead's own is the one reported).
    listLiveProviders(options.client, inScope, options.prune?.enabled === true, () =>
      appliedRead.then((records) => records.keys()),
    ),
  ]);
  const live: LiveState = { deployments: listed, ...(providers ? { providers } : {}) };

  const { resources, secretHashes, secretErrors, secretProblems, unsetEnv } = resolveSecrets(
    inScope,
    repos.resolved,
    discovery,
    options.env,
    ahead,
  );

  const diagnostics = [...loaded.diagnostics, ...repositoryDiagnostics(deployments, repos.errors), ...secretProblems];
  const input: PlanInput = {
    resources: [...resources.values()],
    blocked: loaded.blocked,
    diagnostics,
    live,
    applied,
    secretHashes,
    secretErrors,
    discovery,
    repositoryErrors: repos.errors,
    ownershipKnown: options.applied !== undefined,
  };
  // What could not be read is unknown, never absent: a file that fails to load may declare what no other file does.
  const unreadable = failingFiles(loaded.diagnostics);
  if (unreadable.length > 0) input.unreadable = unreadable;
  // A file present that declares nothing, or that could not be read (a dangling link, a directory, a FIFO, a file
  // that cannot be opened), is not a removal: what it declared before is unknown too.
  const unseen = unseenFiles(emptyFiles(loaded.diagnostics), loaded.unread ?? []);
  if (unseen.length > 0) input.unseenFiles = unseen;
  if (options.adoptPolicy) input.adoptPolicy = options.adoptPolicy;
  if (options.prune) input.prune = await pruneOptions(options, input, loaded.resources.length + loaded.blocked.length);
  const notes = [...(options.notes ?? [])];
  if (outside.length > 0)
    notes.push(
      outsidePrefixNote(
        outside.map((r) => r.name),
        prefix!,
      ),
    );
  if (unsetEnv.size > 0) notes.push(unsetEnvNote([...unsetEnv].sort()));
  if (notes.length > 0) input.notes = notes;
  const gathered: Gathered = {
    input,
    resources,
    live,
    files: loaded.files,
    diagnostics,
    version,
    contentId: loaded.contentId,
  };
  if (ahead) gathered.prepared = ahead.changes;
  return gathered;
}

/** Each resource in scope resolved at the edge (repositories, discovery), its secrets hashed, or where they fail. */
function resolveSecrets(
  inScope: readonly DesiredResource[],
  resolved: Parameters<typeof resolvedAtEdge>[1],
  discovery: Parameters<typeof resolvedAtEdge>[2],
  env: GatherOptions['env'],
  ahead: PlanAhead | undefined,
): ResolvedSecrets {
  const resources = new Map<string, DesiredResource>();
  const secretHashes = new Map<string, Record<string, string>>();
  const secretErrors = new Map<string, string[]>();
  const secretProblems: Diagnostic[] = [];
  const unsetEnv = new Set<string>();
  for (const raw of inScope) {
    const resource = resolvedAtEdge(raw, resolved, discovery);
    const key = resourceKey(resource.kind, resource.name);
    resources.set(key, resource);
    const hashed = (resource === raw ? ahead?.hashed(raw) : undefined) ?? hashDesiredSecrets(resource, env);
    secretHashes.set(key, hashed.hashes);
    secretProblems.push(...hashed.tooShort.map((name) => shortSecretDiagnostic(resource, name)));
    if (!hashed.errors.length) continue;
    // A secret that cannot be resolved (a variable not set, a file missing) is a diagnostic at the line of its
    // reference, and the blocked reason names the same place.
    const located = hashed.errors.map((e) => secretErrorDiagnostic(resource, e));
    secretErrors.set(
      key,
      located.map((d, i) => `${formatLocation(d)}: ${hashed.errors[i]!.message}`),
    );
    secretProblems.push(...located);
    for (const e of hashed.errors) if (e.unsetEnv) unsetEnv.add(e.unsetEnv);
  }

  return { resources, secretHashes, secretErrors, secretProblems, unsetEnv };
}

/** What resolveSecrets finds: the resources by key, their secrets' hashes, and what could not be resolved. */
interface ResolvedSecrets {
  resources: Map<string, DesiredResource>;
  secretHashes: Map<string, Record<string, string>>;
  secretErrors: Map<string, string[]>;
  secretProblems: Diagnostic[];
  unsetEnv: Set<string>;
}

/** One note for every secret variable not set: which, what it blocks, and the fix (the diagnostics give each place). */
function unsetEnvNote(names: string[]): string {
  const which =
    names.length === 1 ? `environment variable ${names[0]} is` : `${names.length} environment variables are`;
  const list = names.length === 1 ? '' : `: ${names.join(', ')}`;
  return `${which} not set${list}; the manifests read secrets from ${names.length === 1 ? 'it' : 'them'}, so the resources that do are blocked (each reference is named at its file:line:column); set ${names.length === 1 ? 'it' : 'each'} to the secret's value where converge runs`;
}

/**
 * Prune's options. Whether the service deletes is probed (once per client) only when prune is on, every file loads, and
 * some live deployment converge applied is declared nowhere, so that a plan with nothing to delete sends no probe.
 */
async function pruneOptions(options: GatherOptions, input: PlanInput, declared: number): Promise<PruneOptions> {
  const prune = options.prune!;
  const out: PruneOptions = { enabled: prune.enabled, maxDeletes: prune.maxDeletes, available: true, declared };
  if (!prune.enabled || input.unreadable || prune.probe === false) return out;
  const names = new Set([...input.resources, ...input.blocked].filter((r) => inListing(r.kind)).map((r) => r.name));
  const unseen = input.unseenFiles ?? [];
  const mayDelete = input.live.deployments.some((d) => {
    const record = names.has(d.name) ? undefined : input.applied.get(resourceKey(listedKind(), d.name));
    return record !== undefined && unseenFilesOf(record.file, unseen).length === 0;
  });
  if (!mayDelete) return out;
  const probe = prune.deletes ?? (await options.client.deploymentDeletes());
  if (!probe.deletes) out.available = { note: probe.note };
  return out;
}

/** One note for every declared deployment outside name_prefix: they are neither listed nor planned. */
function outsidePrefixNote(names: string[], prefix: string): string {
  const shown = names.slice(0, 3).join(', ') + (names.length > 3 ? ` and ${names.length - 3} more` : '');
  const count =
    names.length === 1 ? '1 deployment in the manifests is' : `${names.length} deployments in the manifests are`;
  return `${count} outside name prefix "${prefix}" and not planned: ${shown}`;
}

/** A `repository` that resolves to no repository, or to several, is a diagnostic at its line in the manifest. */
function repositoryDiagnostics(deployments: DeploymentResource[], errors: ReadonlyMap<string, string>): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const resource of deployments) {
    const message = errors.get(resource.name);
    if (!message) continue;
    const at = resource.repositoryLocation ?? resource.location;
    out.push({
      severity: 'error',
      code: 'E_REPOSITORY',
      file: at.file,
      line: at.line,
      column: at.column,
      message: `Deployment ${resource.name}: ${message}`,
    });
  }
  return out;
}

/** Read-only MCP discovery for every mcp provider, a few at a time. */
async function previewProviders(
  resources: DesiredResource[],
  allowLocal: boolean,
): Promise<Map<string, DiscoveryPreview>> {
  const out = new Map<string, DiscoveryPreview>();
  await mapBounded(mcpProviders(resources), DISCOVERY_CONCURRENCY, async (resource) => {
    out.set(resource.name, await previewDiscovery(resource.spec.mcp_server_url, { allowLocal }));
  });
  return out;
}
