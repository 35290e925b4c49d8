// The job form of a resource, shared by the kinds: secret references as they are, a literal value as a pointer only.
import { z } from 'zod';
import type { DesiredResource, SecretSource, SourceLocation } from '../model.js';

/**
 * Where a secret's value comes from, as a job carries it. `env` and `file` are references the worker resolves
 * in its own environment. A literal manifest value (--allow-literal-secrets) never enters Redis: it travels as
 * `manifest`, a pointer to where the manifest holds it, and only the process that read that manifest can send it.
 */
export const JobSecretSource = z.union([
  z.strictObject({ env: z.string().min(1) }),
  z.strictObject({ file: z.string().min(1) }),
  z.strictObject({ manifest: z.strictObject({ file: z.string(), line: z.number().int(), column: z.number().int() }) }),
]);
export type JobSecretSource = z.infer<typeof JobSecretSource>;

/**
 * A secret's source by name only (SecretSourceName, src/core/model.ts), as the applied record keeps it and a saved
 * plan carries it: a variable's name, a file's path, or "a literal in the manifest"; never a value.
 */
export const SecretSourceNameSchema = z.union([
  z.strictObject({ env: z.string().min(1).max(1024) }),
  z.strictObject({ file: z.string().min(1).max(4096) }),
  z.strictObject({ literal: z.literal(true) }),
]);

/** A secret's source change in a plan's field (FieldChange.source): names only. */
export const SecretSourceChange = z.strictObject({ before: SecretSourceNameSchema, after: SecretSourceNameSchema });

export const JobSecretRef = z.strictObject({ name: z.string().min(1), from: JobSecretSource });
export type JobSecretRef = z.infer<typeof JobSecretRef>;

const Location = z.strictObject({ file: z.string(), line: z.number().int(), column: z.number().int() });

/** The fields every kind's job payload has besides `kind` and `spec`. */
export const JobResourceBase = {
  name: z.string().min(1),
  location: Location,
  suspend: z.boolean(),
  driftPolicy: z.enum(['heal', 'report']).optional(),
  secretLocations: z.record(z.string(), Location).optional(),
};

/** The job form of one secret source of `resource`: a literal becomes a pointer to where the manifest writes it. */
export function jobSecretSource(source: SecretSource, resource: DesiredResource, name: string): JobSecretSource {
  if ('env' in source) return { env: source.env };
  if ('file' in source) return { file: source.file };
  const at: SourceLocation = resource.secretLocations?.[name] ?? resource.location;
  return { manifest: { file: at.file, line: at.line, column: at.column } };
}

/** Turns a job's secret source (of the secret `name`) back into a desired one; throws when it cannot. */
export type SecretSourceFromJob = (source: JobSecretSource, name: string) => SecretSource;
