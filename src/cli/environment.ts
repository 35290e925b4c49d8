// The environment a command reads the manifests in: the vars and overlays settings as paths, named relative to the manifest directory.
import { isAbsolute, relative, resolve } from 'node:path';
import type { Environment } from '../observe/environment.js';

/**
 * The variables files and overlay directories of the settings, resolved against `cwd`; undefined when there are none.
 * Diagnostics name them relative to the manifest directory `dir`, as they name manifests (docs/commands.md, "Paths in
 * messages"); one given as an absolute path outside `dir` keeps that path. Errors about the argument itself name it as given.
 */
export function environmentOf(
  settings: { vars: string[]; overlays: string[] },
  cwd: string,
  dir: string,
): Environment | undefined {
  if (settings.vars.length === 0 && settings.overlays.length === 0) return undefined;
  const input = (given: string) => {
    const path = resolve(cwd, given);
    const fromDir = relative(dir, path);
    const label = isAbsolute(given) && fromDir.split(/[\\/]/)[0] === '..' ? path : fromDir || '.';
    return { path, label: posix(label), given: posix(given) };
  };
  return { vars: settings.vars.map(input), overlays: settings.overlays.map(input) };
}

function posix(path: string): string {
  return path.replace(/\\/g, '/').replace(/(.)\/+$/, '$1');
}
