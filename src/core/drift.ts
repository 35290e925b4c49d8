// Drift: telling "the manifest changed" from "the live deployment changed behind converge's back", per resource.
import { kindOf } from './kinds/index.js';
import type { AppliedRecord, DesiredResource } from './model.js';

/**
 * A hash of what a manifest asks for (its kind's fingerprint, src/core/kinds): the resource without its location,
 * secret sources replaced by the hashes of the desired values. Holds no secret value.
 */
export function desiredFingerprint(resource: DesiredResource, secretHashes: Readonly<Record<string, string>>): string {
  return kindOf(resource.kind).fingerprint(resource, secretHashes);
}

/** Per resource, the fingerprint of the desired state last seen in sync (src/store/desired-memory.ts keeps it in Redis). */
export interface DesiredMemory {
  getAll(): Promise<Map<string, string>>;
  /** The remembered fingerprints of `keys` only (a targeted reconcile's resources). */
  getSome(keys: Iterable<string>): Promise<Map<string, string>>;
  set(entries: ReadonlyMap<string, string>): Promise<void>;
  /** Forgets resources no manifest declares any more. */
  retain(keys: ReadonlySet<string>): Promise<number>;
}

/**
 * Why a live deployment left its unchanged manifest, in words that name who changed it: a write converge did not make
 * (the fields themselves are listed beside it). When the service shows the deployment written after converge's last
 * write, the reason says when; drifted secrets are named as a replaced secret set, what the official deploy tool does
 * with its .env (docs/official-tool.md).
 */
export function driftReason(
  fields: readonly string[],
  live: { updated_at?: string } | undefined,
  applied: AppliedRecord | undefined,
): string {
  const secrets = fields.filter((f) => f.startsWith('secrets.')).map((f) => f.slice('secrets.'.length));
  const liveAt = live?.updated_at ? Date.parse(live.updated_at) : Number.NaN;
  const ownAt = applied ? Date.parse(applied.appliedAt) : Number.NaN;
  const when =
    Number.isFinite(liveAt) && Number.isFinite(ownAt) && liveAt > ownAt
      ? ` at ${live!.updated_at}, after converge's last write at ${applied!.appliedAt}`
      : '';
  if (secrets.length === 0) return `changed outside converge${when}`;
  const which = `declared secret${secrets.length === 1 ? '' : 's'} ${secrets.join(', ')} missing or different`;
  return `changed outside converge${when}: its secret set was replaced (${which}), as a client that sends its own complete environment does (the official deploy tool sends its .env)`;
}
