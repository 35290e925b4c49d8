// The saved plan's file: written whole or not at all (a temporary file renamed over it, mode 0600), read with a bound on its size.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ConvergeError, UsageError } from '../core/errors.js';
import { MIN_PLAN_KEY_LENGTH, PLAN_KEY_ENV, signatureProblem } from '../core/saved-plan/signature.js';
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
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, path);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConvergeError('E_PLAN_FILE', `cannot write the plan to ${path} (${code}); check that its folder exists and is writable`);
  }
}

/**
 * The key that signs and checks saved plans (CONVERGE_PLAN_KEY), or undefined when it is not set; one that is too
 * short is refused (the message names the variable, never the value).
 */
export function planKeyOf(env: NodeJS.ProcessEnv): string | undefined {
  const key = env[PLAN_KEY_ENV];
  if (key === undefined || key === '') return undefined;
  if (key.length < MIN_PLAN_KEY_LENGTH) throw new UsageError(`${PLAN_KEY_ENV} is shorter than ${MIN_PLAN_KEY_LENGTH} characters: give it a random key (e.g. the output of "openssl rand -hex 32"), the same in the plan and the apply jobs`);
  return key;
}

/**
 * Reads a saved plan; anything else (missing, too large, not a plan, another version, edited, truncated, and with a
 * key: unsigned or signed otherwise) is one line.
 */
export function readPlanFile(path: string, key?: string): SavedPlan {
  let size: number;
  try {
    const info = statSync(path);
    if (!info.isFile()) throw new ConvergeError('E_PLAN_FILE', `plan file ${path} is not a regular file`);
    size = info.size;
  } catch (error) {
    if (error instanceof ConvergeError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConvergeError('E_PLAN_FILE', `plan file ${path} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? 'error'})`}`);
  }
  if (size > MAX_PLAN_FILE_BYTES) throw new ConvergeError('E_PLAN_FILE', `plan file ${path} is larger than ${MAX_PLAN_FILE_BYTES / 1024 / 1024} MiB: not a converge plan`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConvergeError('E_PLAN_FILE', `plan file ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const read = readSavedPlan(text);
  if (!read.ok) throw new ConvergeError('E_PLAN_FILE', `${path}: ${read.problem}`);
  const unsigned = signatureProblem(read.plan, key);
  if (unsigned) throw new ConvergeError('E_PLAN_SIGNATURE', `${path}: ${unsigned}`);
  return read.plan;
}
