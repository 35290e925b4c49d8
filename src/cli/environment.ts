// The environment a command reads the manifests in: the vars and overlays settings as paths (labelled as given).
import { resolve } from 'node:path';
import type { Environment } from '../observe/environment.js';

/** The variables files and overlay directories of the settings, resolved against `cwd`; undefined when there are none. */
export function environmentOf(settings: { vars: string[]; overlays: string[] }, cwd: string): Environment | undefined {
  if (settings.vars.length === 0 && settings.overlays.length === 0) return undefined;
  const input = (given: string) => ({ path: resolve(cwd, given), label: given.replace(/\\/g, '/').replace(/\/+$/, '') });
  return { vars: settings.vars.map(input), overlays: settings.overlays.map(input) };
}
