// The version of the manifests a desired state came from: a git commit, or a hash of the files' contents when not in git.
import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * Which manifests a job's desired state was read from. `git`: the commit checked out in the directory (HEAD), with
 * `uncommitted: true` when the files read differ from it (edited, staged, new or deleted and not committed:
 * src/observe/manifest-version.ts asks git). `content`: the directory is not in git; a short sha256 over the manifest files' sorted
 * relative paths and bytes. `readAt`: when converge read it (ISO time). Holds no secret (a literal secret's bytes only
 * feed a hash).
 */
export const ManifestVersion = z.strictObject({
  kind: z.enum(['git', 'content']),
  id: z.string().regex(/^[0-9a-f]{7,64}$/),
  uncommitted: z.literal(true).optional(),
  readAt: z.string(),
});
export type ManifestVersion = z.infer<typeof ManifestVersion>;

/** Hex digits of a content version's id (48 bits: a collision between two versions of one directory is not a concern). */
export const CONTENT_ID_LENGTH = 12;

/** What of a version its label shows: its kind and id, and whether edits not committed were read on top of the commit. */
type Labelled = Pick<ManifestVersion, 'kind' | 'id'> & { uncommitted?: boolean | undefined };

/**
 * How a version is shown wherever one is (logs, status, the page, history, notifications, saved plans): "3f2a9c1" (a
 * commit's short form), "uncommitted changes on top of 3f2a9c1", or "content 1a2b3c4d5e6f" (not in git).
 */
export function versionLabel(version: Labelled): string {
  if (version.kind !== 'git') return `content ${version.id}`;
  const commit = version.id.slice(0, 7);
  return version.uncommitted === true ? `uncommitted changes on top of ${commit}` : commit;
}

/**
 * Whether two versions name the same manifests (a re-read of the same commit or content at another time). Edits not
 * committed keep their commit's identity here (the flap guard and notifications compare commits, as before the
 * `uncommitted` mark); only the label tells them apart.
 */
export function sameVersion(a: Labelled | undefined, b: Labelled | undefined): boolean {
  return a?.kind === b?.kind && a?.id === b?.id;
}

/** What ContentHasher feeds before a file's bytes: its relative path and its length, each ended by a NUL. */
export function fileHeader(path: string, length: number): Buffer {
  return Buffer.from(`${path}\0${length}\0`);
}

/** Folds manifest files (relative path and bytes) into a content id; feed them in sorted order. */
export class ContentHasher {
  private readonly hash = createHash('sha256').update('converge-manifests/v1\0');
  private files = 0;

  add(path: string, bytes: Uint8Array): void {
    this.files += 1;
    this.hash.update(fileHeader(path, bytes.length)).update(bytes);
  }

  /** `files` files fed at once: `pieces` hold each one's fileHeader and bytes in turn, as `add` feeds them. */
  addStream(pieces: readonly Uint8Array[], files: number): void {
    this.files += files;
    for (const piece of pieces) this.hash.update(piece);
  }

  /** The short id; a directory without files has one too (the hash of nothing). */
  id(): string {
    return this.hash.copy().update(`\0${this.files}`).digest('hex').slice(0, CONTENT_ID_LENGTH);
  }
}
