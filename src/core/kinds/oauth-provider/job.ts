// An OAuthProvider as a job carries it: the client secret as a reference or a pointer, never a value.
import { z } from 'zod';
import type { ProviderResource } from '../../model.js';
import { JobResourceBase, JobSecretSource, jobSecretSource, type SecretSourceFromJob } from '../job.js';
import { CLIENT_SECRET } from './diff.js';

/** Non-secret spec fields pass through as the loader produced them (already validated there); the secret source is strict. */
export const ProviderJobPayload = z.looseObject({
  kind: z.literal('OAuthProvider'),
  ...JobResourceBase,
  spec: z.looseObject({ mode: z.enum(['manual', 'mcp']), name: z.string(), client_secret: JobSecretSource.optional() }),
  /** mcp mode: the endpoints the plan's discovery found (no secret: endpoints and a flag). */
  discovered: z.strictObject({ auth_url: z.string(), token_url: z.string(), uses_pkce: z.boolean() }).optional(),
});
export type ProviderJobPayload = z.infer<typeof ProviderJobPayload>;

export function providerJobPayload(resource: ProviderResource): z.input<typeof ProviderJobPayload> {
  if (resource.spec.mode === 'mcp') return { ...resource, spec: { ...resource.spec } };
  const { client_secret, ...spec } = resource.spec;
  const source =
    client_secret !== undefined ? { client_secret: jobSecretSource(client_secret, resource, CLIENT_SECRET) } : {};
  return { ...resource, spec: { ...spec, ...source } };
}

export function providerFromJob(payload: ProviderJobPayload, fromJob: SecretSourceFromJob): ProviderResource {
  const { client_secret, ...spec } = payload.spec;
  const secret = client_secret ? { client_secret: fromJob(client_secret, CLIENT_SECRET) } : {};
  // The payload was made by providerJobPayload from a loaded resource: its other fields are the loader's.
  return { ...payload, spec: { ...spec, ...secret } } as unknown as ProviderResource;
}
