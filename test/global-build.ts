// Test-run setup of the e2e tier: builds src/ once for the child processes of the run, in the background (the run's
// other files go on meanwhile; each e2e file waits for it in test/e2e/build-ready.ts), and removes the build afterwards.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

/** Beside the build's dist/: written once the build is usable (BUILT) or failed, with tsc's output (FAILED). */
export const BUILT = 'built';
export const FAILED = 'build-failed';

/**
 * Compiles src/ into `base`/dist (`base` is under node_modules/.cache/converge-test, inside the project so node finds
 * the dependencies) with config/ beside it, so child processes run the code under test as `node <dist>/cli/main.js`;
 * writes BUILT or FAILED beside it when done.
 */
async function buildForChildProcesses(base: string): Promise<void> {
  const dist = join(base, 'dist');
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const output = await new Promise<string>((done) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', dist], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('close', () => done(text));
  });
  if (!existsSync(join(dist, 'cli', 'main.js'))) {
    await writeFile(join(base, FAILED), `build for child processes failed:\n${output.slice(0, 2000)}`);
    return;
  }
  await writeFile(join(base, 'package.json'), '{ "type": "module" }\n');
  await symlink(join(ROOT, 'config'), join(base, 'config'));
  await writeFile(join(base, BUILT), '');
}

export async function setup(): Promise<() => Promise<void>> {
  // The real path: the CLI runs only when argv[1] is its own module's path, and node_modules may be a symlink.
  const base = join(
    realpathSync(join(ROOT, 'node_modules')),
    '.cache',
    'converge-test',
    randomBytes(4).toString('hex'),
  );
  await mkdir(base, { recursive: true });
  process.env.CONVERGE_TEST_DIST = join(base, 'dist');
  const building = buildForChildProcesses(base).catch((error: unknown) =>
    writeFile(join(base, FAILED), `build for child processes failed: ${String(error)}`),
  );
  return async () => {
    await building;
    await rm(base, { recursive: true, force: true });
  };
}
