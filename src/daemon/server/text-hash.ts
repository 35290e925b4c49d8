// The short hash that stands for a text of /status where only its sameness matters: the change sequences and the ETags.
import { createHash } from 'node:crypto';

/** 22 characters of base64url SHA-256 (132 bits): two different texts never meet in practice. */
export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}
