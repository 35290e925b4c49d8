// One OAuthProvider: the service can only create providers and cannot read them, so the applied record is the only knowledge.
import { BlockedError, ServiceError } from '../../errors.js';
import { resourceKey, type ProviderResource } from '../../model.js';
import type { CreateProviderRequest } from '../../wire/schema.js';
import type { SyncPorts, SyncResult } from '../ports.js';
import { CLIENT_SECRET, diffProvider, PROVIDER_CHANGED_REASON } from './diff.js';

/** Why a create answered 409 that no earlier attempt of converge explains blocks the provider. */
export function providerExistsReason(name: string): string {
  return (
    `the service already has an OAuth provider "${name}" that converge did not create, and it cannot read providers, ` +
    `so converge has never seen its definition; ${PROVIDER_CHANGED_REASON}`
  );
}

/**
 * Creates the provider (or has it discovered) unless the applied record shows this definition was created. A 409 is
 * converge's own write only when an earlier attempt sent the same definition and lost its answer: then it is
 * recorded as applied. Any other 409 is a provider converge has never seen: blocked, with the ways out.
 */
export async function syncProvider(resource: ProviderResource, ports: SyncPorts): Promise<SyncResult> {
  const key = resourceKey('OAuthProvider', resource.name);
  const secrets = await ports.desiredSecrets(resource);
  const { applied, pending: earlier } = await ports.appliedState.read(key);
  const diff = diffProvider(resource, { secretHashes: secrets.hashes, secretErrors: secrets.errors, ...(applied ? { applied } : {}) });
  if (diff.change.action === 'blocked') throw new BlockedError(diff.change.reason ?? 'the plan blocks it');
  if (!diff.request) return { outcome: 'unchanged', new_revision: false };

  const written: Record<string, string> = {};
  if (diff.request.op === 'create' && diff.request.sendClientSecret && secrets.hashes[CLIENT_SECRET] !== undefined) {
    written[CLIENT_SECRET] = secrets.hashes[CLIENT_SECRET];
  }
  const sameWrite = earlier !== undefined && earlier.definitionHash === diff.definitionHash;
  await ports.appliedState.setPending(key, {
    op: diff.request.op === 'create' ? 'create-provider' : 'discover-provider',
    secrets: written,
    definitionHash: diff.definitionHash,
    sentAt: sameWrite ? earlier.sentAt : ports.now().toISOString(),
  });
  try {
    if (diff.request.op === 'create') {
      const body: CreateProviderRequest = { ...diff.request.body };
      if (diff.request.sendClientSecret) body.client_secret = (await secrets.values([CLIENT_SECRET]))[CLIENT_SECRET]!;
      await ports.service.createProvider(body);
    } else {
      await ports.service.discoverProvider(diff.request.body);
    }
  } catch (error) {
    if (!(error instanceof ServiceError) || error.status !== 409) throw error;
    if (!sameWrite) {
      await ports.appliedState.clearPending(key);
      throw new BlockedError(providerExistsReason(resource.name));
    }
    await ports.appliedState.recordWrite(key, { secrets: written, definitionHash: diff.definitionHash }, ports.now());
    return { outcome: 'adopted', new_revision: false, message: 'an earlier attempt created the provider but its answer was lost; converge recorded it as applied' };
  }
  await ports.appliedState.recordWrite(key, { secrets: written, definitionHash: diff.definitionHash }, ports.now());
  return { outcome: 'created', new_revision: false, fields: diff.change.fields };
}
