// One resource, level-triggered: its desired state from the job, its I/O wired to the service and the applied state, its kind's sync.
import { JobInputError } from '../core/errors.js';
import {
  type AppliedStatePort,
  type Deletion,
  type DesiredSecrets,
  type JobWrite,
  type LostWritePort,
  type ServicePort,
  type SyncPorts,
  type SyncResult,
} from '../core/kinds/index.js';
import type { DeploymentResource, DesiredResource, ResourceKind } from '../core/model.js';
import { applyRepositoryResolution } from '../core/repositories.js';
import { resolveRepositories, type RepositorySource } from '../service/repositories.js';
import { hashDesiredSecrets, resolveSecretValue, secretSources } from '../secrets/resolve.js';
import { syncStepsOf } from './kinds.js';
import type { LostWriteSettle } from './deployment/settle.js';

/** What a sync talks to. */
export interface SyncContext {
  /** The service (ServiceClient satisfies it). */
  service: ServicePort & RepositorySource;
  /** Where converge records what it wrote and the write it is about to send (AppliedStateStore satisfies it). */
  appliedState: AppliedStatePort;
  /** The environment `env` secret references are resolved in. */
  secretEnv: NodeJS.ProcessEnv;
  now?: () => Date;
  /** The flap guard's check before the job's first write (SyncPorts.writeGate). */
  writeGate?: () => Promise<SyncResult | undefined>;
}

/** Hashes of every declared secret, and a resolver for values right before a write. */
export function desiredSecrets(resource: DesiredResource, env: NodeJS.ProcessEnv): DesiredSecrets {
  const hashed = hashDesiredSecrets(resource, env);
  return {
    hashes: hashed.hashes,
    errors: hashed.errors.map((e) => e.message),
    async values(names) {
      const out: Record<string, string> = {};
      const sources = secretSources(resource);
      for (const name of names) {
        const source = sources.find((s) => s.name === name)?.from;
        if (source) out[name] = resolveSecretValue(source, env);
      }
      return out;
    },
  };
}

async function resolveRepository(
  service: RepositorySource,
  resource: DeploymentResource,
): Promise<{ resource: DeploymentResource; error?: string }> {
  const resolution = await resolveRepositories(service, [resource]);
  const error = resolution.errors.get(resource.name);
  const resolved = applyRepositoryResolution(resource, resolution.resolved);
  return error ? { resource: resolved, error } : { resource: resolved };
}

/**
 * Sends the decided `write` of one resource through its kind's sync step (kinds.ts). `liveId`: the live resource's id
 * the decision paired. Live state that no longer fits the write is a result (notRun: live_changed), never a new
 * decision; a failure (ServiceError and the like, a service refusal no retry helps) is thrown.
 */
export async function syncResource(
  resource: DesiredResource,
  write: JobWrite,
  context: SyncContext,
  liveId?: string,
): Promise<SyncResult> {
  return syncStepsOf(resource.kind).sync(resource, write, portsOf(context), liveId);
}

/** Deletes a resource converge owns (--prune) through its kind; a kind that cannot delete is a JobInputError. */
export async function removeResource(deletion: Deletion, context: SyncContext): Promise<SyncResult> {
  const kind = syncStepsOf(deletion.kind);
  if (!kind.remove)
    throw new JobInputError(
      `${deletion.kind}/${deletion.name}: converge cannot delete resources of kind ${deletion.kind}`,
    );
  return kind.remove(deletion, portsOf(context));
}

/**
 * Settles, reading only, the write the job `jobId` marked pending on `resource` and never recorded (its process died
 * before the answer): through its kind's settleLost (src/sync/kinds.ts); undefined for a kind without one, or when
 * there was nothing of that job's to settle. Nothing is sent to the service but reads.
 */
export async function settleLostWrite(
  resource: { kind: ResourceKind; name: string; key: string },
  jobId: string,
  context: { service: ServicePort; appliedState: LostWritePort },
  liveId?: string,
): Promise<LostWriteSettle> {
  const steps = syncStepsOf(resource.kind);
  if (!steps.settleLost) return undefined;
  const ports = { service: context.service, appliedState: context.appliedState };
  return steps.settleLost(resource.key, resource.name, jobId, ports, liveId);
}

function portsOf(context: SyncContext): SyncPorts {
  const ports: SyncPorts = {
    service: context.service,
    appliedState: context.appliedState,
    desiredSecrets: async (desired) => desiredSecrets(desired, context.secretEnv),
    resolveRepository: (deployment) => resolveRepository(context.service, deployment),
    now: context.now ?? (() => new Date()),
  };
  if (context.writeGate) ports.writeGate = context.writeGate;
  return ports;
}
