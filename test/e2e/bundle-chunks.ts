// The built CLI is a bundle (scripts/bundle.mjs): which modules each of its files holds, from its chunks.json.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MAIN } from './helpers.js';

const DIST_DIR = dirname(dirname(MAIN));
/** The built dist the e2e tier runs, as a URL (it may itself sit under node_modules/.cache). */
export const DIST = pathToFileURL(DIST_DIR).href;
/** Each file of the bundle (its path under dist/) and the modules it holds: dist/'s by path, a package's by node_modules/. */
const CHUNKS = JSON.parse(readFileSync(join(DIST_DIR, 'bin', 'chunks.json'), 'utf8')) as Record<string, string[]>;

/**
 * The modules behind URLs a process resolved: a file of the bundle stands for the modules it holds (a module of dist/
 * as its URL there, a package's file as its path under node_modules/); anything else is itself.
 */
export function modulesBehind(urls: string[]): string[] {
  const modules = urls.flatMap((url) => {
    const held = url.startsWith(`${DIST}/`) ? CHUNKS[url.slice(DIST.length + 1)] : undefined;
    return held ? held.map((name) => (name.startsWith('node_modules/') ? name : `${DIST}/${name}`)) : [url];
  });
  return [...new Set(modules)];
}

/** The file of the bundle (its path under dist/) that holds `module` (a path under dist/, e.g. cli/commands/run-daemon.js). */
export function chunkOf(module: string): string {
  const found = Object.entries(CHUNKS).find(([, modules]) => modules.includes(module));
  if (!found) throw new Error(`no file of the bundle holds ${module} (${join(DIST_DIR, 'bin', 'chunks.json')})`);
  return found[0];
}
