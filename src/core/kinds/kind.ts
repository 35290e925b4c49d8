// The shape of one resource kind's pure steps: what plan, queue and runner ask of it (the table of kinds is index.ts; the I/O steps are src/sync/kinds.ts).
import type { z } from 'zod';
import { objectHash } from '../hash.js';
import type { HealthCondition } from '../health.js';
import type { ResourceHold } from '../holds.js';
import type {
  Action,
  AppliedRecord,
  DesiredResource,
  DiscoveryPreview,
  ListedDeployment,
  LiveProvider,
  LiveProviders,
  PlanChange,
  ResourceKind,
  SecretSource,
} from '../model.js';
import type { CatalogEntry } from '../repositories.js';
import type { ExportedDocument } from './export-names.js';
import type { SecretSourceFromJob } from './job.js';

/** What the plan knows of one resource besides its manifest and live state; each kind reads what concerns it. */
export interface PlanContext {
  /** secret name -> secretHash() of the desired value; a declared secret missing here could not be resolved. */
  secretHashes: Record<string, string>;
  /** What converge last wrote to the resource (hashes only). */
  applied?: AppliedRecord;
  /** Messages (never values) of secrets that could not be resolved: they block the resource. */
  secretErrors?: string[];
  /** Why spec.repository could not be resolved (deployments). */
  repositoryError?: string;
  /** What read-only MCP discovery found (providers with mcp_server_url). */
  discovery?: DiscoveryPreview;
  /**
   * Providers, when the service can read them: the live provider of this provider_id (undefined: the service has
   * none). Absent: the service cannot read providers (spec-only), and the applied record is all converge knows.
   */
  provider?: { live: LiveProvider | undefined };
}

/** A revision as read from the service (GET …/revisions/{id}): its id, status and when it began. */
export interface RevisionReading {
  id: string;
  status: string;
  createdAt?: string | null | undefined;
  /** When the service says it last changed status. */
  updatedAt?: string | null | undefined;
}

/** What the progress deadline reads: now, since when the rollout is known to build (ms), the deadline (ms). */
export interface RolloutClock {
  now: number;
  since?: number | undefined;
  deadlineMs: number;
}

/** What a kind's health reads of one resource. */
export interface HealthInput {
  /** The plan's action, when a plan or a reconcile asks (a rollout follower, src/core/rollout.ts, has none). */
  action?: Action;
  /** The live resource as listed; undefined with `revision`: a follower read only the latest revision. */
  live: ListedDeployment | undefined;
  /** The latest revision, when read: its word beats the listing's. */
  revision?: RevisionReading | undefined;
  /** A hold of a failed revision (its status, when it is the latest revision). */
  hold?: ResourceHold | undefined;
  clock?: RolloutClock;
}

/** A secret a resource declares: its name (the provider's is CLIENT_SECRET) and where its value comes from. */
export interface DeclaredSecret {
  name: string;
  from: SecretSource;
}

/** A literal secret value written in a manifest: where (a data path from the document root) and what to write instead. */
export interface LiteralSecret {
  path: PropertyKey[];
  message: string;
}

/** A warning of a valid manifest (src/core/manifest/warnings.ts reports it): data path from the root, at its key or value. */
export interface ManifestFinding {
  path: PropertyKey[];
  at: 'key' | 'value';
  code: string;
  message: string;
}

/**
 * What the manifest format asks of a kind (src/core/manifest): its literal secret fields, hints for keys written at the
 * wrong place, and the warnings of a valid manifest. Methods, so a kind's own manifest type stands in for any.
 */
export interface ManifestHooks {
  /** Literal secret values in a document's data of this kind (the value itself is never repeated in a message). */
  literalSecrets(data: Record<string, unknown>): LiteralSecret[];
  /** Where an unknown key `key` under `parent` (a display path: "spec.source_config") of this kind belongs, if the kind knows. */
  keyHint(parent: string, key: string): string | undefined;
  /** The warnings of one valid manifest of this kind (what it leaves to defaults that cannot change later). */
  warnings(manifest: { kind: string; spec: unknown }): ManifestFinding[];
  /**
   * The warnings only a command without live state gives (`converge validate`, ParseOptions.createWarnings): what a
   * create of this resource needs that the manifest leaves out and a live resource converge takes over may lack.
   */
  createWarnings(manifest: {
    kind: string;
    metadata: { annotations?: Record<string, string> | undefined };
    spec: unknown;
  }): ManifestFinding[];
}

/** A live resource named in no manifest: a deployment (its id), or a provider (its provider_id as name, its id). */
export interface LiveOrphan {
  kind: ResourceKind;
  name: string;
  id: string;
  status?: string;
  /** Reported even when converge does not own it (deployments); providers appear only when converge owns them. */
  reportUnowned: boolean;
}

/** What a saved plan records of a live resource: its id, when it last changed, and (deployments) its revisions. */
export interface LiveStamp {
  id: string;
  updated_at: string | null;
  latest_revision_id: string | null;
  active_revision_id: string | null;
}

/**
 * The live side of one plan as the service's listings read it (built by liveView, index.ts); each kind's live hooks
 * read their own part of it.
 */
export interface LiveView {
  /** Live deployments by name (of a name listed twice, the last). */
  deployments: ReadonlyMap<string, ListedDeployment>;
  /** Live deployments no manifest claims, in the listing's order (pairing's leftovers, src/plan/pairing.ts). */
  unclaimed: readonly ListedDeployment[];
  /** Live providers by provider_id, when the service listed them; absent: not listed, or it cannot list them. */
  providers?: ReadonlyMap<string, LiveProvider>;
}

/** What `converge export` read of the service (src/cli/commands/export-run.ts): each kind exports its own. */
export interface ExportSource {
  /** Every live deployment (of the name prefix, when given). */
  deployments: readonly ListedDeployment[];
  /** The code-host repositories, when a deployment builds from one (else empty). */
  catalog: readonly CatalogEntry[];
  providers: LiveProviders;
}

/** One kind's exported manifests, and what could not be exported and why ("Deployment/web: …"). */
export interface Exported {
  docs: ExportedDocument[];
  skipped: string[];
}

/**
 * One resource kind. `R` is its desired resource, `S` the zod schema of its job payload, `O` its job operations.
 * Methods (not function properties), so a kind of one resource type stands in the table for the kind of any.
 */
export interface KindModule<
  R extends DesiredResource = DesiredResource,
  S extends z.ZodType = z.ZodType,
  O extends string = string,
> {
  readonly kind: R['kind'];
  /**
   * The service lists live resources of this kind: the plan pairs each desired one with the live one of its name,
   * live ones named in no manifest are orphans, and drift of the live side can be told from a manifest change.
   * False: the applied record is the only knowledge converge has of the live resource.
   */
  readonly listed: boolean;
  /** A write may start a revision that builds (minutes on the real service): health follows it, a rebuild exists. */
  readonly rollout: boolean;
  /** A first write to a live resource converge did not create says so in the plan (false: the kind's diff says it itself). */
  readonly adoptNote: boolean;
  /** The folder below `converge export --out` its manifests go to ('' for the top). */
  readonly exportFolder: string;
  /** What one resource of the kind is called in counts ("1 deployment", "2 OAuth providers"). */
  readonly noun: { one: string; many: string };
  /** Whether what was written runs (healthy, progressing, degraded, unknown), from live state and the revision read. Pure. */
  health(input: HealthInput): HealthCondition;
  /**
   * The latest revision of a live resource when it is not the active one (health must read it), else undefined:
   * one revision read per such resource, none for healthy ones.
   */
  revisionToRead(live: ListedDeployment | undefined): string | undefined;
  /** The plan's change for one resource against its live state (undefined: none, or a kind that is not listed). Pure. */
  diff(resource: R, live: ListedDeployment | undefined, context: PlanContext): PlanChange;
  /**
   * A hash of what the manifest asks for: the resource without its location, secret sources replaced by the hashes of
   * the desired values. Equal for two loads of an unchanged manifest, even moved to another file. Holds no secret value.
   */
  fingerprint(resource: R, secretHashes: Readonly<Record<string, string>>): string;
  /** Every secret the resource declares. */
  secretSources(resource: R): DeclaredSecret[];
  /** The schema a job payload of this kind is checked against (no place for a secret value). */
  readonly jobSchema: S;
  /** The operations a job of this kind is named after. */
  readonly operations: readonly O[];
  /** The operation a plan's create or update of the resource maps to. */
  operation(resource: R, action: 'create' | 'update'): O;
  /** The job form of the resource: identical, except that each literal secret value is replaced by a pointer (job.ts). */
  jobPayload(resource: R): z.input<S>;
  /** The desired resource a job payload describes, each secret source turned back by `fromJob`. */
  fromJobPayload(payload: z.output<S>, fromJob: SecretSourceFromJob): R;
  /** Its hooks in the manifest format: literal secret fields, key hints, warnings. */
  readonly manifest: ManifestHooks;
  /**
   * The live resource of `name` as the plan's listings hold it (what a saved plan records of it, and whose id a first
   * write takes over), null when there is none or its listing was not read.
   */
  liveStamp(name: string, view: LiveView): LiveStamp | null;
  /** What the kind's diff reads of the live side besides the listing entry paired by name (PlanContext.provider). */
  liveContext(name: string, view: LiveView): Pick<PlanContext, 'provider'>;
  /** Live resources of the kind named in no manifest; `declared` holds the resource keys of every manifest (valid or blocked). */
  orphans(view: LiveView, declared: ReadonlySet<string>): LiveOrphan[];
  /** The manifests of the kind's live resources (`converge export`), secrets as env references only. Pure. */
  exportLive(source: ExportSource): Exported;
}

/**
 * The fingerprint last taken of each resource object, with the secret hashes it was taken with. A resource object is
 * never changed once compiled, and the daemon's manifest cache hands the same objects to every reconcile while their
 * files are unchanged (src/observe/manifests.ts), so a reconcile over unchanged manifests hashes none of them again
 * (at 10,000 deployments that was a fifth of what a resync allocated: docs/performance.md). Weak: a resource no
 * longer held is forgotten with its fingerprint.
 */
const taken = new WeakMap<DesiredResource, { secretHashes: Readonly<Record<string, string>>; fingerprint: string }>();

function sameHashes(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key]);
}

/**
 * objectHash of the resource without its location, with `spec` (secret sources left out) and the desired secret hashes.
 * `spec` is derived from the resource by its kind alone, so the resource and the hashes decide the fingerprint.
 */
export function fingerprintOf(
  resource: DesiredResource,
  spec: unknown,
  secretHashes: Readonly<Record<string, string>>,
): string {
  const known = taken.get(resource);
  if (known && sameHashes(known.secretHashes, secretHashes)) return known.fingerprint;
  // The wave orders writes; it is not what is written, so moving a resource to another wave changes no fingerprint.
  const { location: _location, secretLocations: _where, wave: _wave, ...rest } = resource;
  const fingerprint = objectHash({ ...rest, spec, secretHashes });
  taken.set(resource, { secretHashes: { ...secretHashes }, fingerprint });
  return fingerprint;
}
