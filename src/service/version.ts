// converge's version, read once from its package.json: the client sends it as User-Agent, the CLI and daemon report it.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConvergeError } from '../core/errors.js';

/** The version field of the package.json at `path` if that file is converge's, else undefined. */
function convergeVersionAt(path: string): string | undefined {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null) return undefined;
  if (!('name' in data) || data.name !== 'converge') return undefined;
  return 'version' in data && typeof data.version === 'string' ? data.version : undefined;
}

/**
 * The version in the nearest package.json named "converge" at or above `dir`. Nearest by name, not the
 * first package.json: a build may sit under a stub package.json (the test build does), and src/ and dist/
 * are at different depths.
 */
export function packageVersion(dir: string): string {
  for (let current = dir; ; current = dirname(current)) {
    const version = convergeVersionAt(join(current, 'package.json'));
    if (version !== undefined) return version;
    if (dirname(current) === current)
      throw new ConvergeError('E_VERSION', `no package.json of converge with a version at or above ${dir}`);
  }
}

/** converge's version, as package.json writes it. */
export const VERSION = packageVersion(dirname(fileURLToPath(import.meta.url)));
