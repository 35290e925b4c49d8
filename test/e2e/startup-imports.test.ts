// What a light command loads: `converge --help` and `--version` load no command module and no npm package,
// `validate` of a few files loads no queue, Redis, HTTP server, logger or watcher (nor a cron parser), and
// `completion bash` and `converge plan --help` load only the commands' specs, none of what a command runs
// (docs/performance.md, "Start-up").
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DIST, modulesBehind } from './bundle-chunks.js';
import { ROOT, runConverge, tempDir, writeFiles } from './helpers.js';
import { internalDockerYaml } from '../helpers/manifests.js';

const PRELOAD = join(ROOT, 'test', 'helpers', 'import-log.mjs');
/** What only a command that talks to Redis, the queue, the network or a browser needs. */
const HEAVY = [
  'bullmq',
  'ioredis',
  'undici',
  'prom-client',
  'pino',
  'chokidar',
  '@opentelemetry',
  '@modelcontextprotocol',
];

/** The modules a converge command loaded (test/e2e/bundle-chunks.ts: a file of the bundle stands for its modules). */
async function modulesOf(args: string[]): Promise<{ code: number | null; urls: string[] }> {
  const dir = await tempDir('imports');
  const log = join(dir, 'imports.log');
  const run = await runConverge(args, { NODE_OPTIONS: `--import ${PRELOAD}`, IMPORT_LOG: log });
  const resolved = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
  await rm(dir, { recursive: true, force: true });
  return { code: run.code, urls: modulesBehind(resolved) };
}

const packagesIn = (urls: string[]): string[] => [
  ...new Set(
    urls
      .filter((url) => !url.startsWith(DIST))
      .flatMap((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? []),
  ),
];
const commandModulesIn = (urls: string[]): string[] =>
  urls.filter((url) => url.startsWith(`${DIST}/cli/commands/`) && !/\/(index|summaries)\.js$/.test(url));
/** What a command runs (src/cli/commands/NAME-run.ts), loaded only to run it. */
const runModulesIn = (urls: string[]): string[] =>
  urls.filter((url) => url.startsWith(`${DIST}/cli/commands/`) && url.endsWith('-run.js'));
const heavyIn = (urls: string[]): string[] => [
  ...packagesIn(urls).filter((p) => HEAVY.some((h) => p.startsWith(h))),
  ...urls.filter((url) => url === 'node:http' || url === 'node:net'),
];

describe('what a light command loads', () => {
  it.concurrent.each([['--help'], ['--version']])('converge %s: no command module, no npm package', async (flag) => {
    const { code, urls } = await modulesOf([flag]);
    expect(code).toBe(0);
    expect(urls.length).toBeGreaterThan(0);
    expect(commandModulesIn(urls)).toEqual([]);
    expect(packagesIn(urls)).toEqual([]);
  });

  it.concurrent(
    'converge validate of three files: no queue, Redis, HTTP client, logger, watcher or tracing, and no cron parser when no change window is set',
    async () => {
      const dir = await tempDir('imports-validate');
      await writeFiles(dir, {
        'a.yaml': internalDockerYaml('a', 1),
        'b.yaml': internalDockerYaml('b', 1),
        'c.yaml': internalDockerYaml('c', 1),
      });
      const { code, urls } = await modulesOf([
        'validate',
        join(dir, 'a.yaml'),
        join(dir, 'b.yaml'),
        join(dir, 'c.yaml'),
      ]);
      await rm(dir, { recursive: true, force: true });
      expect(code).toBe(0);
      expect(packagesIn(urls)).toEqual(expect.arrayContaining(['yaml', 'zod']));
      expect(packagesIn(urls).filter((p) => HEAVY.some((h) => p.startsWith(h)))).toEqual([]);
      expect(urls.filter((url) => url === 'node:http' || url === 'node:net')).toEqual([]);
      // The shipped defaults set `windows: []`: the windows' checker and cron-parser (with luxon) load only for a
      // window.
      expect(packagesIn(urls).filter((p) => p === 'cron-parser' || p === 'luxon')).toEqual([]);
    },
  );

  it.concurrent.each([[['completion', 'bash']], [['plan', '--help']]])(
    'converge %j: the specs only, nothing a command runs',
    async (args) => {
      const { code, urls } = await modulesOf(args);
      expect(code).toBe(0);
      // Every command's spec for completion, plan's for its --help: read, but none of what runs them.
      expect(commandModulesIn(urls)).toEqual(expect.arrayContaining([`${DIST}/cli/commands/plan.js`]));
      if (args[0] === 'completion')
        expect(commandModulesIn(urls)).toEqual(expect.arrayContaining([`${DIST}/cli/commands/run.js`]));
      expect(runModulesIn(urls)).toEqual([]);
      expect(heavyIn(urls)).toEqual([]);
    },
  );
});
