// The table of resource kinds' pure steps: plan, queue and runner reach every kind-specific step through it, never by testing `kind`.
//
// A kind (KindModule in kind.ts) provides its whole path; docs/architecture.md ("One table of resource kinds") lists
// each step and what adding a kind takes. Its I/O steps (sync, remove) are in src/sync/kinds.ts, a table keyed by kind
// like this one: core does no I/O.
import { z } from 'zod';
import type { ListedDeployment, LiveState, ResourceKind } from '../model.js';
import { deploymentKind } from './deployment/index.js';
import type { KindModule, LiveView, ManifestHooks } from './kind.js';
import { oauthProviderKind } from './oauth-provider/index.js';

export const kinds = {
  Deployment: deploymentKind,
  OAuthProvider: oauthProviderKind,
} satisfies { [K in ResourceKind]: KindModule & { kind: K } };

/** The module of one kind (typed for any resource: the caller passes a resource of that kind). */
export function kindOf(kind: ResourceKind): KindModule {
  return kinds[kind];
}

/** Every kind's module, in the table's order. */
export function allKinds(): KindModule[] {
  return Object.values(kinds);
}

/** Every kind's name, in the table's order. */
export const KIND_NAMES = Object.keys(kinds) as ResourceKind[];

/** Whether `word` names a kind of the table. */
export function isKind(word: unknown): word is ResourceKind {
  return typeof word === 'string' && Object.hasOwn(kinds, word);
}

/** The manifest-format hooks of the kind a document names (`kind:` as written), undefined when it names none. */
export function manifestHooksOf(kind: unknown): ManifestHooks | undefined {
  return isKind(kind) ? kinds[kind].manifest : undefined;
}

/**
 * The live side of one plan for the kinds' live hooks: the deployment listing by name and its entries no manifest
 * claims (`unclaimed`, pairing's leftovers), and the providers by provider_id when the service listed them.
 */
export function liveView(live: Readonly<LiveState>, unclaimed: readonly ListedDeployment[] = []): LiveView {
  const view: LiveView = { deployments: new Map(live.deployments.map((d) => [d.name, d])), unclaimed };
  if (live.providers?.readable) view.providers = new Map(live.providers.providers.map((p) => [p.provider_id, p]));
  return view;
}

/**
 * The live resource of a kind whose live side is listed (paired by name with the listing), else undefined: the one
 * place that says which kinds' live state the deployment listing holds.
 */
export function liveOf<T = ListedDeployment>(
  kind: ResourceKind,
  name: string,
  liveByName: ReadonlyMap<string, T>,
): T | undefined {
  return kinds[kind].listed ? liveByName.get(name) : undefined;
}

/** Whether the deployment listing holds the live resources of `kind` (pairing by name, orphans, name_prefix, drift). */
export function inListing(kind: ResourceKind): boolean {
  return kinds[kind].listed;
}

/** The kind whose live resources the deployment listing holds (the live side of orphans and deletes). */
export function listedKind(): ResourceKind {
  return allKinds().find((module) => module.listed)!.kind;
}

/**
 * Resources counted per kind, in the kinds table's order, each count with its kind's noun: "4 owned deployments and
 * 1 OAuth provider" (`adjective` "owned", said once, first); a kind with none is left out, and no resource at all reads
 * "0 <adjective> <first kind's plural>".
 */
export function countedByKind(resources: ReadonlyArray<{ kind: ResourceKind }>, adjective = ''): string {
  const before = adjective ? `${adjective} ` : '';
  const parts: string[] = [];
  for (const module of allKinds()) {
    const n = resources.filter((r) => r.kind === module.kind).length;
    if (n > 0) parts.push(`${n} ${parts.length === 0 ? before : ''}${n === 1 ? module.noun.one : module.noun.many}`);
  }
  if (parts.length === 0) return `0 ${before}${allKinds()[0]!.noun.many}`;
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

type AnyKind = (typeof kinds)[ResourceKind];

/** Every kind's job payload schema, for the discriminated union of job resources. */
const JOB_SCHEMAS = Object.values(kinds).map((module) => module.jobSchema) as [
  AnyKind['jobSchema'],
  ...Array<AnyKind['jobSchema']>,
];

/** A desired resource as a job carries it: checked by its kind's schema, which has no place for a secret value. */
export const JobResource = z.discriminatedUnion('kind', JOB_SCHEMAS);
export type JobResource = z.infer<typeof JobResource>;

export type JobOperation = AnyKind['operations'][number];

/** Every operation a job may be named after. */
export const JOB_OPERATIONS = Object.values(kinds).flatMap((module): readonly JobOperation[] => module.operations) as [
  JobOperation,
  ...JobOperation[],
];

export {
  declaredProviderIds,
  declaresProviders,
  mcpProviders,
  ownsAnyProvider,
  repositoryResources,
  resolvedAtEdge,
} from './select.js';
export {
  type KindModule,
  type LiteralSecret,
  type LiveOrphan,
  type LiveView,
  type PlanContext,
  type RevisionReading,
} from './kind.js';
export { JobSecretSource, SecretSourceChange, SecretSourceNameSchema } from './job.js';
export {
  Deletion,
  JobWrite,
  PendingWrite,
  SyncResult,
  type AppliedStatePort,
  type DesiredSecrets,
  type LostWritePort,
  type ProviderReads,
  type ServicePort,
  type SyncPorts,
  type WrittenState,
} from './ports.js';
