// Secret diff of one deployment: compares hashes only (live plain echo, else applied record), never values.
import type { AppliedRecord, FieldChange, SecretRef } from '../../model.js';
import { SENSITIVE } from '../../model.js';
import { secretHash } from '../../hash.js';
import type { LiveSecret } from '../../wire/schema.js';
import { compareStrings } from '../../values.js';

/** What the service shows instead of a value when it masks secrets (design.md §1). */
export const MASKED_SECRET = '********';

export interface SecretDiff {
  /** One FieldChange per secret to write, ordered by name; before/after are never values. */
  fields: FieldChange[];
  /** Names of the secrets whose value must be sent. */
  names: string[];
  /** Changed only because no hash could be compared (values hidden, no applied record): written once. */
  writtenOnce: string[];
  /** Declared secrets that have no desired hash: their value could not be resolved. */
  unresolved: string[];
}

/** Unique declared secret names, sorted. */
export function declaredSecretNames(secrets: readonly SecretRef[] | undefined): string[] {
  if (!secrets) return [];
  return [...new Set(secrets.map((secret) => secret.name))].sort(compareStrings);
}

/**
 * Which declared secrets must be written. `live` undefined means the deployment does not exist yet
 * (every declared secret is sent). Live secrets the manifest does not declare are kept by the service
 * (it merges by name), so they are not drift.
 */
export function diffSecrets(
  key: string,
  declared: readonly SecretRef[] | undefined,
  live: readonly LiveSecret[] | undefined,
  hashes: Readonly<Record<string, string>>,
  applied: AppliedRecord | undefined,
): SecretDiff {
  const result: SecretDiff = { fields: [], names: [], writtenOnce: [], unresolved: [] };
  const liveByName = new Map<string, LiveSecret>();
  for (const secret of live ?? []) liveByName.set(secret.name, secret);
  for (const name of declaredSecretNames(declared)) {
    const desired = hashes[name];
    if (desired === undefined) {
      result.unresolved.push(name);
      continue;
    }
    const verdict = live ? compareOne(key, name, desired, liveByName.get(name), applied) : 'absent';
    if (verdict === 'same') continue;
    if (verdict === 'unknown') result.writtenOnce.push(name);
    result.names.push(name);
    const field: FieldChange = {
      path: `secrets.${name}`,
      before: verdict === 'absent' ? null : SENSITIVE,
      after: SENSITIVE,
      sensitive: true,
    };
    if (verdict === 'unknown') field.uncompared = true;
    result.fields.push(field);
  }
  return result;
}

type Verdict = 'same' | 'changed' | 'absent' | 'unknown';

function compareOne(
  key: string,
  name: string,
  desired: string,
  live: LiveSecret | undefined,
  applied: AppliedRecord | undefined,
): Verdict {
  if (!live) return 'absent';
  const value = live.value;
  if (typeof value === 'string' && value !== MASKED_SECRET) {
    return secretHash(key, name, value) === desired ? 'same' : 'changed';
  }
  const last = applied?.secrets[name];
  if (last === undefined) return 'unknown';
  return last === desired ? 'same' : 'changed';
}

/** The note a plan carries when secrets are written only because their live values cannot be compared. */
export function writtenOnceNote(names: readonly string[]): string {
  return `secret values are hidden by the service and no applied state is known: ${names.join(', ')} will be written once`;
}
