// Test-run setup of the e2e tier: builds src/ once for the child processes of the run, in the background (the run's
// other files go on meanwhile; each e2e file waits for it in test/e2e/build-ready.ts), and removes the build afterwards.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { cp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

/** Beside the build's dist/: written once the build is usable (BUILT) or failed, with tsc's output (FAILED). */
export const BUILT = 'built';
export const FAILED = 'build-failed';

/** Runs a node script of the project; its exit code and what it printed. */
function run(args: string[]): Promise<{ code: number | null; text: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr.on('data', (c: Buffer) => (text += c.toString()));
    child.on('close', (code) => done({ code, text }));
  });
}

/**
 * Compiles and bundles src/ into `base`/dist (`base` is under node_modules/.cache/converge-test, inside the project so
 * node finds the dependencies), or copies dist/ when it is the build of the sources now, with config/ beside it, so
 * child processes run the code under test as `node <dist>/cli/main.js`; writes BUILT or FAILED beside it when done.
 */
async function buildForChildProcesses(base: string): Promise<void> {
  const dist = join(base, 'dist');
  let output = '';
  // `npm run build` stamps dist/ with the sources it was made from (scripts/build-stamp.mjs): when they are the sources
  // now (CI builds just before `npm test`), a copy of it is this build, and tsc's half a minute of CPU is spared.
  if ((await run([join(ROOT, 'scripts', 'build-stamp.mjs'), '--check', join(ROOT, 'dist')])).code === 0) {
    await cp(join(ROOT, 'dist'), dist, { recursive: true });
  } else {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    output = (await run([tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', dist])).text;
    // The CLI as `npm run build` makes it: one bundle of the compiled modules (scripts/bundle.mjs).
    const bundled = await run([join(ROOT, 'scripts', 'bundle.mjs'), dist]);
    if (bundled.code !== 0) output += bundled.text;
  }
  // Without the bundle's chunks.json, cli/main.js is tsc's module, not the bundle's entry: a failed bundle fails the build.
  if (!existsSync(join(dist, 'bin', 'chunks.json')) || !existsSync(join(dist, 'cli', 'main.js'))) {
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
