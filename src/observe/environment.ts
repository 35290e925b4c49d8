// One environment's inputs (the I/O half): reads the bytes of the variables files given with --vars (src/core/manifest/environment.ts compiles them).
import type { Diagnostic } from '../core/diagnostics.js';
import { UsageError } from '../core/errors.js';
import type { VariablesInput } from '../core/manifest/environment.js';
import { MAX_MANIFEST_BYTES } from '../core/manifest/file-bytes.js';
import { readCapped, type CappedRead } from './read-capped.js';

/** A file or folder the user named: its path, how diagnostics name it (relative to the manifest directory), and as given. */
interface EnvironmentInput {
  path: string;
  label: string;
  /** the argument as the user gave it, for errors about the argument itself (missing); defaults to `label` */
  given?: string;
}

/** The variables files (later ones win) and overlay directories (applied in order) of one environment. */
export interface Environment {
  vars: EnvironmentInput[];
  overlays: EnvironmentInput[];
}

/** What a load read besides the manifest directory, for the content version: a name and the bytes. */
export interface HashedInput {
  name: string;
  bytes: Uint8Array;
}

function note(file: string, code: string, message: string): Diagnostic {
  return { severity: 'error', file, line: 1, column: 1, code, message };
}

/** A variables file larger than this is refused unread (the manifest cap: a variables file is a few lines). */
export const MAX_VARIABLES_BYTES = MAX_MANIFEST_BYTES;

/** Why a variables file was not read, as the message of its E_VARS_FILE diagnostic. */
function refusalMessage(read: Exclude<CappedRead, { bytes: Uint8Array }>): string {
  switch (read.refused) {
    case 'not-regular':
      return 'variables file is not a regular file (a pipe, a device or a folder); give a plain YAML file to --vars (or the setting vars)';
    case 'too-large':
      return `variables file is larger than ${MAX_VARIABLES_BYTES / 1024 / 1024} MiB; a variables file holds a few names and values (split the rest out, or check the path)`;
    default:
      return `variables file cannot be read (${read.code}); check its permissions`;
  }
}

/**
 * Reads every variables file, in order, through the capped reader (regular files only, size checked before reading).
 * A file that does not exist is a usage mistake (throws UsageError naming it, like a missing overlay directory): a
 * mistyped --vars must not read as every variable being unset. Any other problem is a diagnostic, never a crash.
 */
export function readVariableFiles(inputs: readonly EnvironmentInput[]): {
  files: VariablesInput[];
  diagnostics: Diagnostic[];
  hashed: HashedInput[];
} {
  const files: VariablesInput[] = [];
  const diagnostics: Diagnostic[] = [];
  const hashed: HashedInput[] = [];
  for (const input of inputs) {
    const outcome = readCapped(input.path, MAX_VARIABLES_BYTES);
    if (!('bytes' in outcome)) {
      if (outcome.refused === 'missing')
        throw new UsageError(
          `variables file ${input.given ?? input.label} does not exist (--vars, setting vars); check the path`,
        );
      diagnostics.push(note(input.label, 'E_VARS_FILE', refusalMessage(outcome)));
      files.push({ file: input.label, unread: true });
      continue;
    }
    hashed.push({ name: `vars:${input.label}`, bytes: outcome.bytes });
    files.push({ file: input.label, bytes: outcome.bytes });
  }
  return { files, diagnostics, hashed };
}
