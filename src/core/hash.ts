// Stable hashes: of secret values and provider definitions, so drift is found without storing a value anywhere, and of texts kept only to be compared.
import { createHash } from 'node:crypto';

/**
 * Hash of one secret value, salted with the resource and secret name so that equal values in
 * different places do not share a hash. Only this hash is ever stored (Redis applied-state).
 */
export function secretHash(resourceKey: string, secretName: string, value: string): string {
  return createHash('sha256').update(`converge/v1\0${resourceKey}\0${secretName}\0`).update(value).digest('hex');
}

/** Canonical JSON: object keys sorted at every depth, undefined dropped. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** sha256 of canonical JSON; used for provider definitions (with secret values already replaced by their hashes). */
export function objectHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/**
 * 22 characters of base64url SHA-256 (132 bits) of a text, kept in its place where only its sameness matters (the
 * change sequences and ETags of /status, the findings already logged): two different texts never meet in practice.
 */
export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}
