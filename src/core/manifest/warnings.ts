// Warnings of a valid manifest: what it leaves to the service's defaults that cannot be changed afterwards.
import { DEFAULT_DEPLOYMENT_TYPE, DEPLOYMENT_TYPES } from '../wire/schema.js';
import type { Problem } from './issues.js';
import type { DeploymentManifest, OAuthProviderManifest } from './schema.js';

export const DEFAULT_TIER_CODE = 'W_DEFAULT_TIER';

/** Problems (reported as warnings) of one valid document; paths are from the document root. */
export function manifestWarnings(manifest: DeploymentManifest | OAuthProviderManifest): Problem[] {
  if (manifest.kind !== 'Deployment' || manifest.spec.source !== 'codehost') return [];
  const config = manifest.spec.source_config;
  if (config?.deployment_type != null) return [];
  return [
    {
      path: config ? ['spec', 'source_config'] : ['spec'],
      at: 'key',
      code: DEFAULT_TIER_CODE,
      message: `spec.source_config.deployment_type is not set: the service will create this codehost deployment as ${DEFAULT_DEPLOYMENT_TYPE} (its default), and the tier cannot be changed after creation; to choose another, set spec.source_config.deployment_type to one of ${DEPLOYMENT_TYPES.join(', ')}`,
    },
  ];
}
