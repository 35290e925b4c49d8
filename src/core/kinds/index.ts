// The table of resource kinds' pure steps: plan, queue and runner reach every kind-specific step through it, never by testing `kind`.
//
// A kind (see KindModule in kind.ts) provides:
//   - listed          whether the service lists live resources of the kind (pairing, orphans, drift);
//   - diff            the plan's change for one resource against its live state (pure);
//   - fingerprint     a hash of what the manifest asks for, secret values as hashes (the daemon's drift memory);
//   - secretSources   the secret references it declares, by name;
//   - jobSchema, operations, operation, jobPayload, fromJobPayload
//                     its job: the payload (secret values replaced by pointers), its schema and operation names;
// Its I/O steps (sync, remove) are in src/sync/kinds.ts, a table keyed by kind like this one: core does no I/O.
// Adding a kind: a folder here with a module that satisfies KindModule, one line in `kinds` below, and its I/O steps
// in src/sync/kinds.ts. Its manifest
// schema (src/core/manifest/schema.ts) and its resource type in DesiredResource (src/core/model.ts) come with it.
import { z } from 'zod';
import type { LiveDeployment, ResourceKind } from '../model.js';
import { deploymentKind } from './deployment/index.js';
import type { KindModule } from './kind.js';
import { oauthProviderKind } from './oauth-provider/index.js';

export const kinds = {
  Deployment: deploymentKind,
  OAuthProvider: oauthProviderKind,
} satisfies { [K in ResourceKind]: KindModule & { kind: K } };

/** The module of one kind (typed for any resource: the caller passes a resource of that kind). */
export function kindOf(kind: ResourceKind): KindModule {
  return kinds[kind];
}

/**
 * The live resource of a kind whose live side is listed (paired by name with the listing), else undefined: the one
 * place that says which kinds' live state the deployment listing holds.
 */
export function liveOf(kind: ResourceKind, name: string, liveByName: ReadonlyMap<string, LiveDeployment>): LiveDeployment | undefined {
  return kinds[kind].listed ? liveByName.get(name) : undefined;
}

/** Whether the deployment listing holds the live resources of `kind` (pairing by name, orphans, name_prefix, drift). */
export function inListing(kind: ResourceKind): boolean {
  return kinds[kind].listed;
}

/** The kind whose live resources the deployment listing holds (the live side of orphans and deletes). */
export function listedKind(): ResourceKind {
  return (Object.values(kinds) as KindModule[]).find((module) => module.listed)!.kind;
}

/**
 * Resources counted per kind, in the kinds table's order, each count with its kind's noun: "4 owned deployments and
 * 1 OAuth provider" (`adjective` "owned", said once, first); a kind with none is left out, and no resource at all reads
 * "0 <adjective> <first kind's plural>".
 */
export function countedByKind(resources: ReadonlyArray<{ kind: ResourceKind }>, adjective = ''): string {
  const before = adjective ? `${adjective} ` : '';
  const parts: string[] = [];
  for (const module of Object.values(kinds) as KindModule[]) {
    const n = resources.filter((r) => r.kind === module.kind).length;
    if (n > 0) parts.push(`${n} ${parts.length === 0 ? before : ''}${n === 1 ? module.noun.one : module.noun.many}`);
  }
  if (parts.length === 0) return `0 ${before}${(Object.values(kinds)[0] as KindModule).noun.many}`;
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

type AnyKind = (typeof kinds)[ResourceKind];

/** Every kind's job payload schema, for the discriminated union of job resources. */
const JOB_SCHEMAS = Object.values(kinds).map((module) => module.jobSchema) as [AnyKind['jobSchema'], ...Array<AnyKind['jobSchema']>];

/** A desired resource as a job carries it: checked by its kind's schema, which has no place for a secret value. */
export const JobResource = z.discriminatedUnion('kind', JOB_SCHEMAS);
export type JobResource = z.infer<typeof JobResource>;

export type JobOperation = AnyKind['operations'][number];

/** Every operation a job may be named after. */
export const JOB_OPERATIONS = Object.values(kinds).flatMap((module): readonly JobOperation[] => module.operations) as [JobOperation, ...JobOperation[]];

export { declaredProviderIds, declaresProviders, listedProvider, liveStampOf, mcpProviders, ownsAnyProvider, repositoryResources, resolvedAtEdge } from './select.js';
export { type KindModule, type PlanContext, type RevisionReading } from './kind.js';
export { JobSecretSource } from './job.js';
export {
  Deletion,
  JobWrite,
  PendingWrite,
  SyncResult,
  type AppliedStatePort,
  type DesiredSecrets,
  type ProviderReads,
  type ServicePort,
  type SyncPorts,
  type WrittenState,
} from './ports.js';
