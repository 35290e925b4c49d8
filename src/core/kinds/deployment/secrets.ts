// Secret diff of one deployment: compares hashes only (live plain echo, else applied record), never values.
import type { AppliedRecord, FieldChange, SecretRef, SecretSource, SecretSourceName } from '../../model.js';
import { SENSITIVE } from '../../model.js';
import { secretHash } from '../../hash.js';
import type { LiveSecret } from '../../wire/schema.js';
import { compareStrings } from '../../values.js';

/** What the service shows instead of a value when it masks secrets (docs/against-the-real-service.md §5). */
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

/** Where a declared secret's value comes from, by name only: a literal is named as one, its value never. */
export function secretSourceName(from: SecretSource): SecretSourceName {
  if ('env' in from) return { env: from.env };
  if ('file' in from) return { file: from.file };
  return { literal: true };
}

/** The sources (names only) of the declared secrets among `names`, as the applied record keeps them with a write. */
export function declaredSources(
  declared: readonly SecretRef[] | undefined,
  names: readonly string[],
): Record<string, SecretSourceName> {
  const wanted = new Set(names);
  const out: Record<string, SecretSourceName> = {};
  for (const secret of declared ?? [])
    if (wanted.has(secret.name) && !(secret.name in out)) out[secret.name] = secretSourceName(secret.from);
  return out;
}

/** The source change of a secret the plan writes over a recorded value: when its record names another source. */
function sourceChange(
  recorded: SecretSourceName | undefined,
  declared: SecretSourceName | undefined,
): FieldChange['source'] {
  if (!recorded || !declared || JSON.stringify(recorded) === JSON.stringify(declared)) return undefined;
  return { before: recorded, after: declared };
}

/**
 * Which declared secrets changed. `live` undefined means the deployment does not exist yet (every declared secret
 * is new). Live secrets the manifest does not declare are not managed by converge, so they are not drift (see
 * undeclaredSecretNames); a write that carries secrets carries every declared one (secretsToSend).
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
  const names = declaredSecretNames(declared);
  const sources = declaredSources(declared, names);
  for (const name of names) {
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
    const source = verdict === 'changed' ? sourceChange(applied?.secretSources?.[name], sources[name]) : undefined;
    if (source) field.source = source;
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

/**
 * The secrets a write sends: none when no declared secret changed, else every declared one, since a revision carries
 * the deployment's complete environment and the service may replace the stored set with the list it is sent
 * (docs/against-the-real-service.md §3). Unresolved secrets block the write before it gets here.
 */
export function secretsToSend(
  diff: SecretDiff,
  declared: readonly SecretRef[] | undefined,
  hashes: Readonly<Record<string, string>>,
): string[] {
  if (diff.names.length === 0) return [];
  return declaredSecretNames(declared).filter((name) => hashes[name] !== undefined);
}

/** Live secrets that no manifest declares (names only), sorted. */
export function undeclaredSecretNames(
  declared: readonly SecretRef[] | undefined,
  live: readonly LiveSecret[] | undefined,
): string[] {
  const known = new Set(declaredSecretNames(declared));
  return [...new Set((live ?? []).map((secret) => secret.name))]
    .filter((name) => !known.has(name))
    .sort(compareStrings);
}

/** The note for live secrets no manifest declares; `written`: this change writes the deployment's secrets. */
export function undeclaredNote(names: readonly string[], written: boolean): string {
  const which = `secret${names.length === 1 ? '' : 's'} ${names.join(', ')}`;
  const verb = names.length === 1 ? 'is' : 'are';
  const base = `${which} ${verb} set on the service but declared in no manifest: not managed by converge`;
  if (!written) return base;
  return `${base}; this write sends the complete set of declared secrets, and the service may drop ${names.length === 1 ? 'it' : 'them'}: declare ${names.length === 1 ? 'it' : 'them'} in the manifest to keep ${names.length === 1 ? 'it' : 'them'}`;
}

/** The note for declared secrets that did not change but are sent with the changed ones. */
export function resentNote(count: number): string {
  return `${count} unchanged secret${count === 1 ? ' is' : 's are'} re-sent with it (a write carries every declared secret)`;
}

/** The note a plan carries when secrets are written only because their live values cannot be compared. */
export function writtenOnceNote(names: readonly string[]): string {
  return `secret values are hidden by the service and no applied state is known: ${names.join(', ')} will be written once`;
}
