// What the manifest schemas of every kind share: how their cross-field rules run, and where a secret's value is read.
import { z } from 'zod';

/** Cross-field rules run even when a sibling field is invalid, so one pass reports every problem; they check types themselves. */
export const ALWAYS = { when: () => true };

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Environment variable names accepted in valueFrom.env. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Where a secret's value is read at plan/apply time: exactly one of env or file. */
export const SecretValueFrom = z
  .strictObject({
    env: z
      .string()
      .regex(ENV_NAME_PATTERN, {
        error: 'is not an environment variable name (letters, digits and underscores, not starting with a digit)',
      })
      .optional()
      .meta({ description: 'Name of the environment variable holding the value.' }),
    file: z.string().min(1, { error: 'must not be empty' }).optional().meta({
      description:
        'Path of a file holding the value (one trailing newline is trimmed); relative paths are relative to the working directory.',
    }),
  })
  .superRefine((from, ctx) => {
    if (!isRecord(from)) return;
    if (from.env !== undefined && from.file !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['file'],
        message: 'give either env or file, not both',
        params: { at: 'key' },
      });
    } else if (from.env === undefined && from.file === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'needs env (an environment variable name) or file (a path)',
        params: { consequential: true },
      });
    }
  }, ALWAYS)
  .meta({ description: 'Exactly one of env or file.', oneOf: [{ required: ['env'] }, { required: ['file'] }] });
export type SecretValueFrom = z.infer<typeof SecretValueFrom>;
