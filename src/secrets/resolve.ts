// Secret values from the environment or files (the I/O side of SecretRef): resolved on demand, hashed, never logged.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import { inspect } from 'node:util';
import type { Diagnostic, Severity } from '../core/diagnostics.js';
import { SecretResolutionError } from '../core/errors.js';
import { secretHash } from '../core/hash.js';
import { MIN_MASKED_LENGTH } from '../core/mask.js';
import { resourceKey, type DesiredResource, type SecretSource } from '../core/model.js';
import { kindOf } from '../core/kinds/index.js';

/** Secret files larger than this are refused (a secret is a few bytes; this guards against /dev/zero and mistakes). */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

export interface SecretOptions {
  /** Base of relative valueFrom.file paths (default: the process working directory). */
  baseDir?: string;
}

function readSecretFile(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    const why =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'is not readable (permission denied)'
          : `cannot be read (${code})`;
    throw new SecretResolutionError(`secret file ${path} ${why}`);
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new SecretResolutionError(`secret file ${path} is not a regular file`);
    if (info.size > MAX_SECRET_FILE_BYTES)
      throw new SecretResolutionError(`secret file ${path} is larger than ${MAX_SECRET_FILE_BYTES / 1024} KiB`);
    const buffer = Buffer.alloc(MAX_SECRET_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, length);
      if (read === 0) break;
      length += read;
      if (length === buffer.length)
        throw new SecretResolutionError(`secret file ${path} is larger than ${MAX_SECRET_FILE_BYTES / 1024} KiB`);
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, length));
    } catch {
      throw new SecretResolutionError(`secret file ${path} is not UTF-8 text`);
    }
  } finally {
    closeSync(fd);
  }
}

function trimOneNewline(value: string): string {
  if (value.endsWith('\r\n')) return value.slice(0, -2);
  if (value.endsWith('\n')) return value.slice(0, -1);
  return value;
}

/**
 * The value of one secret source: an environment variable (must be set and not empty), or a file's contents
 * with one trailing newline trimmed, or a literal. Errors name the variable or file, never a value.
 */
export function resolveSecretValue(source: SecretSource, env: NodeJS.ProcessEnv, options: SecretOptions = {}): string {
  if ('env' in source) {
    const value = env[source.env];
    if (value === undefined) throw new SecretResolutionError(`environment variable ${source.env} is not set`);
    if (value === '') throw new SecretResolutionError(`environment variable ${source.env} is empty`);
    return value;
  }
  if ('file' in source) {
    const path = resolve(options.baseDir ?? process.cwd(), source.file);
    const value = trimOneNewline(readSecretFile(path));
    if (value === '') throw new SecretResolutionError(`secret file ${path} is empty`);
    return value;
  }
  return source.value;
}

/** Every secret a resource declares: deployment secrets by name, a manual provider's client secret as "client_secret". */
export function secretSources(resource: DesiredResource): Array<{ name: string; from: SecretSource }> {
  return kindOf(resource.kind).secretSources(resource);
}

export interface SecretError {
  name: string;
  /** Names the variable or file; never a value. */
  message: string;
  /** The environment variable the secret reads, when it is not set (the plan names every such variable once). */
  unsetEnv?: string;
}

/** A record of values that prints as "[redacted]" through JSON.stringify, util.inspect and loggers built on them. */
function redacted(values: Record<string, string>): Record<string, string> {
  Object.defineProperty(values, 'toJSON', { value: () => '[redacted]', enumerable: false });
  Object.defineProperty(values, inspect.custom, { value: () => '[redacted]', enumerable: false });
  return values;
}

/**
 * Resolved values of a resource's secrets, for the worker that writes them. The record's own properties are
 * the values, but it serializes and inspects as "[redacted]": never log it, never put it in a job or error.
 */
export function resolveDesiredSecrets(
  resource: DesiredResource,
  env: NodeJS.ProcessEnv,
  options: SecretOptions = {},
): { values: Record<string, string>; errors: SecretError[] } {
  const values: Record<string, string> = {};
  const errors: SecretError[] = [];
  for (const { name, from } of secretSources(resource)) {
    try {
      values[name] = resolveSecretValue(from, env, options);
    } catch (error) {
      if (!(error instanceof SecretResolutionError)) throw error;
      const unset = 'env' in from && env[from.env] === undefined ? { unsetEnv: from.env } : {};
      errors.push({ name, message: `secret ${name}: ${error.message}`, ...unset });
    }
  }
  return { values: redacted(values), errors };
}

/**
 * secretHash() of each declared secret's current value (what plan compares with the applied state), and the names of
 * those whose value is too short to be masked safely (src/core/mask.ts; the length only, never the value, leaves here).
 */
export function hashDesiredSecrets(
  resource: DesiredResource,
  env: NodeJS.ProcessEnv,
  options: SecretOptions = {},
): { hashes: Record<string, string>; errors: SecretError[]; tooShort: string[] } {
  const key = resourceKey(resource.kind, resource.name);
  const { values, errors } = resolveDesiredSecrets(resource, env, options);
  const hashes: Record<string, string> = {};
  const tooShort: string[] = [];
  for (const [name, value] of Object.entries(values)) {
    hashes[name] = secretHash(key, name, value);
    if ([...value].length < MIN_MASKED_LENGTH) tooShort.push(name);
  }
  return { hashes, errors, tooShort };
}

/**
 * The warning, at the line of its reference, for a secret whose value is too short to be masked safely: said once per
 * load (the daemon logs a diagnostic once while it lasts), never with the value.
 */
export function shortSecretDiagnostic(resource: DesiredResource, name: string): Diagnostic {
  const location = resource.secretLocations?.[name] ?? resource.location;
  const message =
    `${resourceKey(resource.kind, resource.name)}: secret ${name} has a value shorter than ${MIN_MASKED_LENGTH} characters, too short to be masked safely: ` +
    `converge masks it in the service's answers and in build logs only where it stands alone as a value, so it may show inside other words, and a value this short is easy to guess; use a longer secret`;
  return { severity: 'warning', ...location, code: 'W_SECRET_SHORT', message };
}

/** The diagnostic of one secret that cannot be resolved, at the line of its reference (else the resource's). */
export function secretErrorDiagnostic(
  resource: DesiredResource,
  error: SecretError,
  severity: Severity = 'error',
): Diagnostic {
  const location = resource.secretLocations?.[error.name] ?? resource.location;
  return {
    severity,
    ...location,
    code: 'E_SECRET',
    message: `${resourceKey(resource.kind, resource.name)}: ${error.message}`,
  };
}
/**
 * One diagnostic per secret that cannot be resolved, at the file:line:column of its env/file reference
 * (used by `validate --check-secrets`; plan blocks such resources itself).
 */
export function secretDiagnostics(
  resources: DesiredResource[],
  env: NodeJS.ProcessEnv,
  options: SecretOptions & { severity?: Severity } = {},
): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const resource of resources) {
    for (const error of resolveDesiredSecrets(resource, env, options).errors)
      out.push(secretErrorDiagnostic(resource, error, options.severity));
  }
  return out;
}
