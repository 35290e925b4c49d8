// Drift: telling "the manifest changed" from "the live deployment changed behind converge's back", per resource.
import { kindOf } from '../core/kinds/index.js';
import type { DesiredResource } from '../core/model.js';

/**
 * A hash of what a manifest asks for (its kind's fingerprint, src/core/kinds): the resource without its location,
 * secret sources replaced by the hashes of the desired values. Holds no secret value.
 */
export function desiredFingerprint(resource: DesiredResource, secretHashes: Readonly<Record<string, string>>): string {
  return kindOf(resource.kind).fingerprint(resource, secretHashes);
}

/** Per resource, the fingerprint of the desired state last seen in sync (src/enqueue/desired-memory.ts keeps it in Redis). */
export interface DesiredMemory {
  getAll(): Promise<Map<string, string>>;
  set(entries: ReadonlyMap<string, string>): Promise<void>;
  /** Forgets resources no manifest declares any more. */
  retain(keys: ReadonlySet<string>): Promise<number>;
}
