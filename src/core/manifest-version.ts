// The version of the manifests a desired state came from: a git commit, or a hash of the files' contents when not in git.
import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * Which manifests a job's desired state was read from. `git`: the commit checked out in the directory (HEAD; edits
 * not committed are not seen). `content`: the directory is not in git; a short sha256 over the manifest files' sorted
 * relative paths and bytes. `readAt`: when converge read it (ISO time). Holds no secret (a literal secret's bytes only
 * feed a hash).
 */
export const ManifestVersion = z.strictObject({
  kind: z.enum(['git', 'content']),
  id: z.string().regex(/^[0-9a-f]{7,64}$/),
  readAt: z.string(),
});
export type ManifestVersion = z.infer<typeof ManifestVersion>;

/** Hex digits of a content version's id (48 bits: a collision between two versions of one directory is not a concern). */
export const CONTENT_ID_LENGTH = 12;

/** How a version is shown in logs and status: "3f2a9c1" (a commit's short form) or "content 1a2b3c4d5e6f". */
export function versionLabel(version: Pick<ManifestVersion, 'kind' | 'id'>): string {
  return version.kind === 'git' ? version.id.slice(0, 7) : `content ${version.id}`;
}

/** Whether two versions name the same manifests (a re-read of the same commit or content at another time). */
export function sameVersion(a: Pick<ManifestVersion, 'kind' | 'id'> | undefined, b: Pick<ManifestVersion, 'kind' | 'id'> | undefined): boolean {
  return a?.kind === b?.kind && a?.id === b?.id;
}

/** Folds manifest files (relative path and bytes) into a content id; feed them in sorted order. */
export class ContentHasher {
  private readonly hash = createHash('sha256').update('converge-manifests/v1\0');
  private files = 0;

  add(path: string, bytes: Uint8Array): void {
    this.files += 1;
    this.hash.update(`${path}\0${bytes.length}\0`).update(bytes);
  }

  /** The short id; a directory without files has one too (the hash of nothing). */
  id(): string {
    return this.hash.copy().update(`\0${this.files}`).digest('hex').slice(0, CONTENT_ID_LENGTH);
  }
}
