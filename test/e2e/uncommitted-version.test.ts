// Edits not committed are named as such (issue 42, item 5): a daemon over a real git checkout with a commit and then
// an uncommitted edit shows "uncommitted changes on top of COMMIT" in /status, on the status page (Chromium),
// in `converge status` and in `converge history`, and writes its log line with it. Skipped when git is not installed.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { hasGit } from '../helpers/flap.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';

const CHROMIUM = process.env.CONVERGE_CHROMIUM ?? '/usr/bin/chromium';
const API_KEY = 'uncommitted-version-api-key-7Rw2';

interface Version {
  kind: string;
  id: string;
  uncommitted?: boolean;
  label?: string;
}

describe.skipIf(!hasGit())('a version with edits not committed', () => {
  let emulator: RunningEmulator | undefined;
  let context: BrowserContext | undefined;
  const cleanups: Array<() => Promise<unknown>> = [];

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    await killAllConverge();
    await emulator?.close();
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('is "uncommitted changes on top of COMMIT" in /status, on the page, in converge status and history', async () => {
    expect(
      existsSync(CHROMIUM),
      `no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does it), or set CONVERGE_CHROMIUM`,
    ).toBe(true);
    emulator = await startEmulator({ apiKey: API_KEY, buildMs: 200 });
    const dir = await tempDir('uncommitted-version');
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, { 'web.yaml': dockerDeploymentYaml('web', { maxScale: 1 }) });
    const git = (...args: string[]): string =>
      execFileSync(
        'git',
        ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args],
        { cwd: dir, encoding: 'utf8' },
      ).trim();
    git('init', '-q');
    git('add', '.');
    git('commit', '-q', '-m', 'web');
    const short = git('rev-parse', '--short=7', 'HEAD');
    const prefix = testPrefix('uncommitted');
    cleanups.push(() => dropPrefix(prefix));
    const daemon = await startDaemon(
      dir,
      [
        '--api-url',
        emulator.url,
        '--redis-prefix',
        prefix,
        '--resync',
        '5m',
        '--debounce',
        '100ms',
        '--log-level',
        'info',
      ],
      { CONVERGE_API_KEY: API_KEY },
    );
    const web = (doc: { resources: Array<{ key: string; appliedFrom?: Version }> }) =>
      doc.resources.find((r) => r.key === 'Deployment/web');
    await until(
      'web written from the commit',
      async () => {
        const doc = (await daemon.status()) as never as {
          manifestVersion: Version | null;
          resources: Array<{ key: string; appliedFrom?: Version }>;
        };
        return web(doc)?.appliedFrom?.label === short;
      },
      60_000,
      100,
    );

    await writeFile(join(dir, 'web.yaml'), dockerDeploymentYaml('web', { maxScale: 3 }));
    const label = `uncommitted changes on top of ${short}`;
    const doc = await until(
      'web written from the uncommitted edit',
      async () => {
        const d = (await daemon.status()) as never as {
          manifestVersion: Version | null;
          resources: Array<{ key: string; appliedFrom?: Version }>;
        };
        return web(d)?.appliedFrom?.label === label ? d : undefined;
      },
      60_000,
      100,
    );
    expect(doc.manifestVersion).toMatchObject({ kind: 'git', id: git('rev-parse', 'HEAD'), uncommitted: true, label });
    expect(web(doc)?.appliedFrom).toMatchObject({ kind: 'git', uncommitted: true, label });
    expect(
      daemon.lines.some(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('wrote') && l.msg.endsWith(`(applied from ${label})`),
      ),
    ).toBe(true);

    const status = await runConverge(['status', '--url', daemon.url]);
    expect(status.stdout).toContain(`Manifests: ${label}, read at `);
    expect(status.stdout).toMatch(new RegExp(`Deployment\\s+web\\s.*\\(?applied from ${label}\\)?`));
    const history = await runConverge(['history', 'web', '--redis-prefix', prefix]);
    expect(history.code).toBe(0);
    expect(history.stdout).toContain(`manifests ${label}`);
    expect(history.stdout).toContain(`manifests ${short},`);

    const profile = await mkdtemp(join(tmpdir(), 'converge-chromium-'));
    cleanups.push(() => rm(profile, { recursive: true, force: true }));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 900 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${daemon.url}/`);
    await until(
      'the page to show the manifests label',
      async () => (await page.textContent('#facts'))?.includes(`Manifests${label}, read `) === true,
      15_000,
      100,
    ).catch(async (error: unknown) => {
      expect(await page.textContent('#facts')).toContain(label);
      throw error;
    });
    expect(await page.textContent('#facts')).not.toContain(`commit ${label}`);
  }, 180_000);
});
