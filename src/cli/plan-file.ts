// The saved plan's file: written whole or not at all (a temporary file renamed over it, mode 0600), read with a bound on its size.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ConvergeError, UsageError } from '../core/errors.js';
import { PLAN_KEY_ENV, planKeyProblem, SKIP_SIGNATURE_FLAG, signatureProblem } from '../core/saved-plan/signature.js';
import { readSavedPlan, type SavedPlan } from '../core/saved-plan/schema.js';

/** A saved plan larger than this is refused unread (10,000 resources with their fields take a few MiB). */
export const MAX_PLAN_FILE_BYTES = 64 * 1024 * 1024;

/** Writes `text` to `path` atomically: a temporary file beside it (mode 0600, synced), renamed over it. */
export function writePlanFile(path: string, text: string): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(temp, 'wx', 0o600);
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, path);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConvergeError(
      'E_PLAN_FILE',
      `cannot write the plan to ${path} (${code}); check that its folder exists and is writable`,
    );
  }
}

/**
 * The key that signs and checks saved plans (CONVERGE_PLAN_KEY), or undefined when it is not set; one set but empty
 * (or only whitespace) or too short is refused (the message names the variable, never the value).
 */
export function planKeyOf(env: NodeJS.ProcessEnv): string | undefined {
  const key = env[PLAN_KEY_ENV];
  const problem = planKeyProblem(key);
  if (problem) throw new UsageError(problem);
  return key;
}

/** How a command checks a saved plan's signature: the key (planKeyOf), and whether --skip-signature-check was given. */
export interface PlanCheck {
  key: string | undefined;
  skipSignatureCheck: boolean;
}

/** The flag itself, as each command that reads a saved plan declares it. */
export const SKIP_SIGNATURE_OPTION = {
  [SKIP_SIGNATURE_FLAG]: {
    type: 'boolean',
    description: `read a signed plan although ${PLAN_KEY_ENV} is not set, its signature unchecked (without it such a plan is refused); a key that is set is always checked`,
  },
} as const;

/** The signature check of a command's arguments and environment (the key read, and refused when empty, first). */
export function planCheckOf(values: Record<string, unknown>, env: NodeJS.ProcessEnv): PlanCheck {
  return { key: planKeyOf(env), skipSignatureCheck: values[SKIP_SIGNATURE_FLAG] === true };
}

/**
 * Reads a saved plan; anything else (missing, too large, not a plan, another version, edited, truncated; with a key:
 * unsigned or signed otherwise; without one: signed, unless --skip-signature-check) is one line.
 */
export function readPlanFile(path: string, check: PlanCheck): SavedPlan {
  let size: number;
  try {
    const info = statSync(path);
    if (!info.isFile()) throw new ConvergeError('E_PLAN_FILE', `plan file ${path} is not a regular file`);
    size = info.size;
  } catch (error) {
    if (error instanceof ConvergeError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConvergeError(
      'E_PLAN_FILE',
      `plan file ${path} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? 'error'})`}`,
    );
  }
  if (size > MAX_PLAN_FILE_BYTES)
    throw new ConvergeError(
      'E_PLAN_FILE',
      `plan file ${path} is larger than ${MAX_PLAN_FILE_BYTES / 1024 / 1024} MiB: not a converge plan`,
    );
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConvergeError(
      'E_PLAN_FILE',
      `plan file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const read = readSavedPlan(text);
  if (!read.ok) throw new ConvergeError('E_PLAN_FILE', `${path}: ${read.problem}`);
  const unsigned = signatureProblem(read.plan, check.key, check.skipSignatureCheck);
  if (unsigned) throw new ConvergeError('E_PLAN_SIGNATURE', `${path}: ${unsigned}`);
  return read.plan;
}
