// The source tarballs the emulator handed out (POST .../upload-url): object paths per deployment, one-PUT tokens.
import { randomBytes, randomUUID } from 'node:crypto';
import type { UploadLookup } from './merge.js';
import type { StateUpload } from './schema.js';

/** What POST /v2/deployments/{id}/upload-url hands out: the signed URL's token (one PUT) and the object path. */
export interface IssuedUpload {
  token: string;
  object_path: string;
}

/** Object paths handed out (kept in the state file) and the tokens of their signed URLs (memory only: such URLs expire). */
export class UploadRegistry implements UploadLookup {
  private readonly byPath = new Map<string, { deploymentId: string; uploaded: boolean }>();
  private readonly tokens = new Map<string, string>();

  constructor(seeded: readonly StateUpload[]) {
    for (const u of seeded)
      this.byPath.set(u.object_path, { deploymentId: u.deployment_id.toLowerCase(), uploaded: u.uploaded });
  }

  /** A new object path for the deployment, and the token of its one PUT. */
  issue(deploymentId: string): IssuedUpload {
    const token = randomBytes(24).toString('base64url');
    const objectPath = `uploads/${deploymentId}/${randomUUID()}.tar.gz`;
    this.byPath.set(objectPath, { deploymentId, uploaded: false });
    this.tokens.set(token, objectPath);
    return { token, object_path: objectPath };
  }

  /** The PUT to a signed URL: spends its token and marks the object uploaded; undefined for an unknown or spent token. */
  receive(token: string): string | undefined {
    const objectPath = this.tokens.get(token);
    if (objectPath === undefined) return undefined;
    this.tokens.delete(token);
    const entry = this.byPath.get(objectPath);
    if (entry) this.byPath.set(objectPath, { ...entry, uploaded: true });
    return objectPath;
  }

  ownerOf(objectPath: string): string | undefined {
    return this.byPath.get(objectPath)?.deploymentId;
  }

  uploaded(objectPath: string): boolean {
    return this.byPath.get(objectPath)?.uploaded ?? false;
  }

  /** Every object path handed out, for the state file. */
  all(): StateUpload[] {
    return [...this.byPath].map(([object_path, u]) => ({
      object_path,
      deployment_id: u.deploymentId,
      uploaded: u.uploaded,
    }));
  }
}
