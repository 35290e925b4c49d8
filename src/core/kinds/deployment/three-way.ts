// The last-applied three-way comparison of a deployment's declared fields: desired, live, and what converge last sent and the service answered.
import type { FieldHashes } from '../../model.js';
import { objectHash } from '../../hash.js';
import { deepEqual, isAbsent, stripNulls } from '../../values.js';

/**
 * sha256 of a field value's canonical JSON, nulls dropped at every depth (absent and null hash alike, as deepEqual
 * sees them). Not salted: these are the values a plan shows; secrets keep their salted secretHash().
 */
export function fieldHash(value: unknown): string {
  return objectHash(isAbsent(value) ? null : stripNulls(value));
}

/**
 * same: desired equals live. normalised: they differ, but desired is what converge sent at its last write of the
 * field and live is still what the service answered then (the service keeps the value in its own form, or does not
 * show it): in sync, never sent again. changed: drift, or no record of the field to tell.
 */
export type FieldVerdict = 'same' | 'normalised' | 'changed';

export function compareField(
  desired: unknown,
  live: unknown,
  last: FieldHashes | undefined,
  equal: (a: unknown, b: unknown) => boolean = deepEqual,
): FieldVerdict {
  if (equal(desired, live)) return 'same';
  if (last && fieldHash(desired) === last.sent && fieldHash(live) === last.answered) return 'normalised';
  return 'changed';
}

/** The value at a dotted path of declared fields (source_config.resource_spec.max_scale), or undefined. */
export function valueAt(value: unknown, path: string): unknown {
  let at: unknown = value;
  for (const key of path.split('.')) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** path -> fieldHash() of the value `body` sends there, for each of `paths` that the body carries. */
export function sentFieldHashes(paths: readonly string[], body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const path of paths) {
    const sent = valueAt(body, path);
    if (!isAbsent(sent)) out[path] = fieldHash(sent);
  }
  return out;
}

/** What to record of a write: for each path it sent, the hash sent and the hash of the service's answer there. */
export function answeredFieldHashes(
  sent: Readonly<Record<string, string>>,
  answer: unknown,
): Record<string, FieldHashes> {
  const out: Record<string, FieldHashes> = {};
  for (const [path, hash] of Object.entries(sent))
    out[path] = { sent: hash, answered: fieldHash(valueAt(answer, path)) };
  return out;
}

/** A field the service reports in its own form since converge wrote it. */
export interface NormalisedField {
  path: string;
  live: unknown;
}

/** The plan's note for fields in sync by the three-way rule (field values are not secret: the plan shows them anyway). */
export function normalisedNote(fields: readonly NormalisedField[]): string {
  const shown = fields.map((field) => `${field.path} as ${JSON.stringify(isAbsent(field.live) ? null : field.live)}`);
  return `the service reports ${shown.join(', ')}, not as declared, since converge last wrote ${fields.length === 1 ? 'it' : 'them'}: in sync, not sent again`;
}
