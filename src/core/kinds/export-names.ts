// What an exported manifest document is, and the environment variable names its secret references get.
import type { ResourceKind } from '../model.js';

/** One exported resource: its manifest `spec` (secrets as env references only) and the variables they name. */
export interface ExportedDocument {
  kind: ResourceKind;
  name: string;
  spec: Record<string, unknown>;
  /** The environment variables the secret references name, in order. */
  env: string[];
}

/**
 * The environment variable a secret of `resource` is read from: RESOURCE_SECRET in upper case, every other character
 * an underscore (two deployments with a secret of the same name get two variables, as their values may differ).
 */
export function secretEnvName(resource: string, secret: string): string {
  const name = `${resource}_${secret}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
  return /^[A-Z_]/.test(name) ? name : `_${name}`;
}
