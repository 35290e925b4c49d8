// The compile pool through the built binary: `converge validate` of enough files to start worker threads runs the
// compile worker on them and reports exactly what loading them in one thread reports (every resource, every diagnostic
// at its file:line:column), and exits.
import { readdir, readFile, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { POOL_MIN_FILES } from '../../src/observe/compile-threads.js';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { dockerDeploymentYaml, runConverge, tempDir, writeFiles } from './helpers.js';

const dirs: string[] = [];

afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('validate on worker threads', () => {
  it('gives the same resources and diagnostics as the in-thread load, for good files and every bad one of the corpus', async () => {
    const dir = await tempDir('pool');
    dirs.push(dir);
    const files: Record<string, string | Buffer> = {};
    for (let i = 0; i < POOL_MIN_FILES; i++)
      files[`apps/app-${String(i).padStart(5, '0')}.yaml`] = dockerDeploymentYaml(`app-${i}`, {
        maxScale: 1 + (i % 5),
      });
    // The bad corpus (YAML errors, encodings, aliases, schema problems, duplicates) spread among them.
    const bad = join(import.meta.dirname, '..', 'fixtures', 'bad');
    for (const name of await readdir(bad)) files[`apps/app-0${name}`] = await readFile(join(bad, name));
    await writeFiles(dir, files);

    // This test runs from the TypeScript source, where there is no worker script: this load is the in-thread one.
    const here = await loadManifestDir(dir, { allowLiteralSecrets: false });
    // A CPU profile per thread of the process (`--cpu-prof` is not allowed in NODE_OPTIONS): the built CLI, a bundle,
    // finds its worker script and compiles on threads.
    const profiles = join(dir, 'profiles');
    const run = await runConverge(['validate', dir, '--output', 'json'], {}, 120_000, [
      '--cpu-prof',
      '--cpu-prof-dir',
      profiles,
    ]);
    expect(run.signal).toBeNull();
    if (availableParallelism() > 1) {
      const scripts = await Promise.all(
        (await readdir(profiles)).map(async (name) => {
          const profile = JSON.parse(await readFile(join(profiles, name), 'utf8')) as {
            nodes: Array<{ callFrame: { url: string } }>;
          };
          return profile.nodes.some((node) => node.callFrame.url.endsWith('/compile-worker.js'));
        }),
      );
      expect(scripts.filter(Boolean).length, 'threads that ran the compile worker').toBe(availableParallelism() - 1);
    }
    expect(run.code).toBe(1);
    const out = JSON.parse(run.stdout) as {
      resources: unknown[];
      blocked: unknown[];
      diagnostics: unknown[];
      summary: { resources: number; errors: number };
    };
    expect(out.summary.resources).toBe(here.resources.length);
    expect(out.summary.resources).toBeGreaterThanOrEqual(POOL_MIN_FILES);
    expect(out.diagnostics).toEqual(JSON.parse(JSON.stringify(here.diagnostics)));
    expect(out.diagnostics.some((d) => (d as { code: string }).code === 'E_COMPILE')).toBe(false);
    expect(out.blocked.length).toBe(here.blocked.length);
  });
});
