// Test-run setup of the e2e tier: builds src/ once for the child processes of the run, and removes the build afterwards.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Compiles src/ into node_modules/.cache/converge-test/<run>/dist (inside the project so node finds the
 * dependencies) with config/ beside it, so child processes run the code under test as `node <dist>/cli/main.js`.
 * The path is the real one: the CLI runs only when argv[1] is its own module's path, and node_modules may be a symlink.
 */
async function buildForChildProcesses(run: string): Promise<string> {
  const base = join(realpathSync(join(ROOT, 'node_modules')), '.cache', 'converge-test', run);
  const dist = join(base, 'dist');
  await mkdir(base, { recursive: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const output = await new Promise<string>((done) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', dist], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('close', () => done(text));
  });
  if (!existsSync(join(dist, 'cli', 'main.js'))) throw new Error(`build for child processes failed:\n${output.slice(0, 2000)}`);
  await writeFile(join(base, 'package.json'), '{ "type": "module" }\n');
  await symlink(join(ROOT, 'config'), join(base, 'config'));
  return dist;
}

export async function setup(): Promise<() => Promise<void>> {
  const dist = await buildForChildProcesses(randomBytes(4).toString('hex'));
  process.env.CONVERGE_TEST_DIST = dist;
  return async () => {
    await rm(resolve(dist, '..'), { recursive: true, force: true });
  };
}
