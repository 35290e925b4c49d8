// A Deployment as a job carries it: secrets as references or pointers, never a value.
import { z } from 'zod';
import type { DeploymentResource } from '../../model.js';
import { JobResourceBase, JobSecretRef, jobSecretSource, type SecretSourceFromJob } from '../job.js';

/** Non-secret spec fields pass through as the loader produced them (already validated there); the secret sources are strict. */
export const DeploymentJobPayload = z.looseObject({
  kind: z.literal('Deployment'),
  ...JobResourceBase,
  spec: z.looseObject({ source: z.string(), secrets: z.array(JobSecretRef).optional() }),
});
export type DeploymentJobPayload = z.infer<typeof DeploymentJobPayload>;

export function deploymentJobPayload(resource: DeploymentResource): z.input<typeof DeploymentJobPayload> {
  const { secrets, ...spec } = resource.spec;
  const sources = secrets?.map((s) => ({ name: s.name, from: jobSecretSource(s.from, resource, s.name) }));
  return { ...resource, spec: { ...spec, ...(sources ? { secrets: sources } : {}) } };
}

export function deploymentFromJob(payload: DeploymentJobPayload, fromJob: SecretSourceFromJob): DeploymentResource {
  const { secrets, ...spec } = payload.spec;
  const converted = secrets?.map((s) => ({ name: s.name, from: fromJob(s.from, s.name) }));
  // The payload was made by deploymentJobPayload from a loaded resource: its other fields are the loader's.
  return {
    ...payload,
    spec: { ...spec, ...(converted ? { secrets: converted } : {}) },
  } as unknown as DeploymentResource;
}
