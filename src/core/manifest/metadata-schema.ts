// The metadata of a manifest (docs/contracts.md §1): the resource's name and the annotations converge reads.
import { z } from 'zod';
import { DEPLOYMENT_NAME_MAX, DEPLOYMENT_NAME_PATTERN, validNameLike } from '../wire/schema.js';
import { ALWAYS, isRecord } from './schema-parts.js';

export const SUSPEND_ANNOTATION = 'converge/suspend';
export const DRIFT_ANNOTATION = 'converge/drift';
export const ADOPT_ANNOTATION = 'converge/adopt';
export const PRUNE_ANNOTATION = 'converge/prune';
export const WAVE_ANNOTATION = 'converge/wave';
/** Annotations converge reads; any other `converge/...` annotation is a typo and an error. */
export const CONVERGE_ANNOTATIONS = [
  SUSPEND_ANNOTATION,
  DRIFT_ANNOTATION,
  ADOPT_ANNOTATION,
  PRUNE_ANNOTATION,
  WAVE_ANNOTATION,
] as const;
/** converge/wave: an integer as a string, negative allowed ("-1", "0", "2"). */
export const WAVE_PATTERN = /^-?(0|[1-9][0-9]{0,5})$/;

const NAME_RULE = `lowercase letters, digits and dashes, starting with a letter, at most ${DEPLOYMENT_NAME_MAX} characters`;

/** The valid form of a name the rule refuses, as the end of its message ("web-app" for Web_App). */
function validNameHint(input: unknown): string {
  const like = typeof input === 'string' ? validNameLike(input) : undefined;
  return like ? `, e.g. "${like}"` : '';
}

/** metadata.name: the deployment name or the provider_id, under the service's naming rule. */
export const ResourceName = z
  .string({ error: `must be a string of ${NAME_RULE}` })
  .min(1, { error: `must not be empty; use ${NAME_RULE}` })
  .max(DEPLOYMENT_NAME_MAX, { error: `is longer than ${DEPLOYMENT_NAME_MAX} characters` })
  .regex(DEPLOYMENT_NAME_PATTERN, {
    error: (issue) => `is not a valid name: use ${NAME_RULE}${validNameHint(issue.input)}`,
  })
  .meta({ description: `The deployment name or provider_id: ${NAME_RULE}.` });
export type ResourceName = z.infer<typeof ResourceName>;

function annotationFlag(values: readonly [string, string], meaning: string) {
  return z
    .enum(values, {
      error: (issue) =>
        typeof issue.input === 'boolean'
          ? `annotation values are strings: quote it, e.g. "${String(issue.input)}"`
          : `must be "${values[0]}" or "${values[1]}"`,
    })
    .optional()
    .meta({ description: meaning });
}

export const Annotations = z
  .object({
    [SUSPEND_ANNOTATION]: annotationFlag(
      ['true', 'false'],
      '"true": the plan shows this resource but nothing is applied.',
    ),
    [DRIFT_ANNOTATION]: annotationFlag(
      ['heal', 'report'],
      'Drift policy of this resource: heal (revert drift) or report it only.',
    ),
    [ADOPT_ANNOTATION]: annotationFlag(
      ['true', 'false'],
      '"true": converge may take over a live resource of this name that it did not create (needed under adopt: explicit).',
    ),
    [PRUNE_ANNOTATION]: annotationFlag(
      ['true', 'false'],
      '"false": never deleted by --prune, even once its manifest is gone.',
    ),
    [WAVE_ANNOTATION]: z
      .string({
        error: (issue) =>
          typeof issue.input === 'number'
            ? `annotation values are strings: quote it, e.g. "${String(issue.input)}"`
            : 'must be a string holding an integer, e.g. "1"',
      })
      .regex(WAVE_PATTERN, {
        error:
          'must be an integer, e.g. "0", "1" or "-1" (the rollout wave: lower waves are written and healthy first; docs/rollouts.md)',
      })
      .optional()
      .meta({
        description:
          'The rollout wave, an integer as a string (default "0"): a change writes wave by wave, in ascending order, each after the one before is healthy (docs/rollouts.md).',
      }),
  })
  .catchall(z.string({ error: 'annotation values are strings: quote the value' }))
  .superRefine((annotations, ctx) => {
    if (!isRecord(annotations)) return;
    for (const key of Object.keys(annotations)) {
      if (!key.startsWith('converge/') || (CONVERGE_ANNOTATIONS as readonly string[]).includes(key)) continue;
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `unknown converge annotation "${key}"; converge reads ${CONVERGE_ANNOTATIONS.join(', ')}`,
        params: { at: 'key' },
      });
    }
  }, ALWAYS)
  .meta({
    description:
      'Free-form string annotations; converge reads converge/suspend, converge/drift, converge/adopt, converge/prune and converge/wave.',
    propertyNames: { anyOf: [{ not: { pattern: '^converge/' } }, { enum: [...CONVERGE_ANNOTATIONS] }] },
  });
export type Annotations = z.infer<typeof Annotations>;

export const Metadata = z.strictObject({
  name: ResourceName,
  annotations: Annotations.optional(),
});
export type Metadata = z.infer<typeof Metadata>;
