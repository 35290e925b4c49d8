// Warnings of a valid manifest: what it leaves to the service's defaults that cannot be changed afterwards (each kind says, src/core/kinds).
import { kindOf } from '../kinds/index.js';
import type { Problem } from './issues.js';
import type { DeploymentManifest, OAuthProviderManifest } from './schema.js';

/** Problems (reported as warnings) of one valid document; paths are from the document root. */
export function manifestWarnings(manifest: DeploymentManifest | OAuthProviderManifest): Problem[] {
  return kindOf(manifest.kind).manifest.warnings(manifest);
}

/** Warnings (validate only: it sees no live state) of what a create of this valid document needs that it leaves out. */
export function createWarnings(manifest: DeploymentManifest | OAuthProviderManifest): Problem[] {
  return kindOf(manifest.kind).manifest.createWarnings(manifest);
}
