// `converge plan DIR` of enough files to start the compile threads, through the built binary: the tree listed while the
// command loads and compiled before the service client loads (src/cli/commands/plan-run.ts) gives the plan the in-thread
// run of the same command gives, byte for byte, in JSON and text; and every way out (no such directory, a refused
// api_url, an embedded emulator whose state file does not parse) is the same one line and exit 1, and the process ends.
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { POOL_MIN_FILES } from '../../src/observe/compile-threads.js';
import { runCapture } from '../helpers/cli.js';
import { dockerDeploymentYaml, runConverge, tempDir, writeFiles } from './helpers.js';

const LIVE = 40;
let dir = '';
let emulator: RunningEmulator;

beforeAll(async () => {
  dir = await tempDir('plan-pool');
  const files: Record<string, string | Buffer> = {};
  for (let i = 0; i < POOL_MIN_FILES; i++)
    files[`apps/app-${String(i).padStart(5, '0')}.yaml`] = dockerDeploymentYaml(`app-${i}`, { maxScale: 1 + (i % 5) });
  // The bad corpus (YAML errors, encodings, aliases, schema problems, duplicates) spread among them.
  const bad = join(import.meta.dirname, '..', 'fixtures', 'bad');
  for (const name of await readdir(bad)) files[`apps/app-0${name}`] = await readFile(join(bad, name));
  await writeFiles(dir, files);
  // Some of them live (half of them at another max_scale: updates); the rest are creates.
  emulator = await startEmulator({
    buildMs: 0,
    seed: {
      deployments: Array.from({ length: LIVE }, (_, i) => ({
        name: `app-${i}`,
        source: 'external_docker',
        source_config: { resource_spec: { max_scale: i % 2 === 0 ? 1 + (i % 5) : 9 } },
        source_revision_config: { image_uri: 'docker.io/library/nginx:1.27' },
      })),
    },
  });
}, 120_000);

afterAll(async () => {
  await emulator?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The plan of `dir` by the built binary (threads) and in this process from source (no worker script: in-thread). */
async function bothWays(args: string[]): Promise<Array<{ code: number | null; stdout: string; stderr: string }>> {
  const argv = ['plan', ...args];
  const built = await runConverge(argv, {}, 120_000);
  expect(built.signal).toBeNull();
  const here = await runCapture(argv, {});
  return [built, here];
}

describe('plan of a tree big enough for the compile threads', () => {
  it('prints the plan the in-thread run prints, in JSON and in text, with the same exit code', async () => {
    for (const output of ['json', 'text']) {
      const [built, here] = await bothWays([
        dir,
        '--api-url',
        emulator.url,
        '--no-applied-state',
        '--output',
        output,
        '--detailed-exitcode',
      ]);
      expect(built!.code, built!.stderr).toBe(here!.code);
      expect(built!.stdout).toBe(here!.stdout);
      expect(built!.stderr).toBe(here!.stderr);
    }
    const [built] = await bothWays([dir, '--api-url', emulator.url, '--no-applied-state', '--output', 'json']);
    const plan = JSON.parse(built!.stdout) as { summary: Record<string, number>; diagnostics: Array<{ code: string }> };
    // The bad files block nothing they do not declare; the good ones are planned, none failed to compile.
    expect(plan.summary.create! + plan.summary.update! + plan.summary.noop!).toBeGreaterThanOrEqual(POOL_MIN_FILES);
    expect(plan.summary.update! + plan.summary.noop!).toBe(LIVE);
    expect(plan.summary.update).toBeGreaterThanOrEqual(LIVE / 2);
    expect(plan.diagnostics.some((d) => d.code === 'E_COMPILE')).toBe(false);
    expect(built!.code).toBe(1);
  }, 300_000);

  it('a directory that does not exist, a refused api_url, an embedded state that does not parse: one line, exit 1, and the process ends', async () => {
    const seed = join(dir, '..', `${join(dir).split('/').pop()}-seed.json`);
    await writeFile(seed, 'not: yaml: [');
    try {
      const cases = [
        [join(dir, 'missing'), '--api-url', emulator.url, '--no-applied-state'],
        [join(dir, 'missing'), '--api-url', emulator.url, '--no-applied-state', '--output', 'json'],
        [dir, '--api-url', 'ftp://example.com', '--no-applied-state'],
        [dir, '--api-url', 'ftp://example.com', '--no-applied-state', '--output', 'json'],
        [dir, '--api-url', 'embedded', '--emulator-state', seed],
      ];
      for (const args of cases) {
        const [built, here] = await bothWays(args);
        expect(built!.code, built!.stderr).toBe(1);
        expect(here!.code).toBe(1);
        expect(built!.stdout).toBe(here!.stdout);
        expect(built!.stderr).toBe(here!.stderr);
        expect(built!.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      }
    } finally {
      await rm(seed, { force: true });
    }
  }, 300_000);
});
