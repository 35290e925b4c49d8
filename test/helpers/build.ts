// Builds src/ to a private directory for child processes (node runs JavaScript; tsx is not installed).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { BUILT } from '../global-build.js';

export const ROOT = resolve(import.meta.dirname, '../..');

/**
 * tsc to node_modules/.cache/converge-queue-test/<random> (inside the project so node finds the dependencies;
 * a package.json there marks the output as ESM). tsc emits even when other in-progress files have type errors.
 */
export async function buildForChildren(): Promise<{ dir: string; remove(): Promise<void> }> {
  // In the e2e tier the global setup (test/global-build.ts) has built src/ once for every child process of the run: reuse it.
  // It is usable once its marker is written (the build runs in the background; test/e2e/build-ready.ts waits for it).
  const shared = process.env.CONVERGE_TEST_DIST;
  if (shared && existsSync(join(dirname(shared), BUILT))) return { dir: shared, remove: async () => {} };
  const cache = join(ROOT, 'node_modules', '.cache', 'converge-queue-test');
  await mkdir(cache, { recursive: true });
  const dir = await mkdtemp(join(cache, 'build-'));
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const output = await new Promise<string>((done) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', dir], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('close', () => done(text));
  });
  if (!existsSync(join(dir, 'jobs', 'runner', 'worker-process.js')))
    throw new Error(`build for child processes failed:\n${output.slice(0, 2000)}`);
  await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n');
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
