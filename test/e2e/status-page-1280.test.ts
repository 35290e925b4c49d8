// The status page at 1280 px in Debian's Chromium (docs/status-page.md), against the built daemon over the emulator under
// prune_mode confirm: paths and names wrap at their separators, commands at spaces only, job ids whole, one wording per
// state, pending deletes counted and said with "Confirm with", a confirmed delete shown as deleting, an emptied file's row
// said as such. It writes test-output/status-page-1280.png and -1920.png (CONVERGE_UPDATE_SCREENSHOT=1: docs/status-page.png).
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { chromiumMissing, openChromium } from './chromium.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  ROOT,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';

const OUTPUT = join(ROOT, 'test-output');
const HOOK = 'status-page-1280-hook';
const LONG_FILE = 'teams/customer-support/support-agent-eu-west.yaml';
const LONG_NAME = 'customer-support-agent-production-eu-west';

/**
 * In-page (a string: the test program has no DOM types): for each element of `selector`, its text and each line break
 * in it as the text before and after the break, read from where each character is drawn.
 */
function lineBreaks(selector: string): string {
  return `[...document.querySelectorAll(${JSON.stringify(selector)})].map((node) => {
    const chars = [];
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      for (let i = 0; i < t.data.length; i++) {
        const range = document.createRange();
        range.setStart(t, i);
        range.setEnd(t, i + 1);
        const rect = range.getClientRects()[0];
        chars.push({ c: t.data[i], top: rect && rect.width > 0 ? rect.top : null });
      }
    }
    const text = chars.map((x) => x.c).join('');
    const breaks = [];
    let last = null;
    chars.forEach((x, i) => {
      if (x.top === null) return;
      if (last !== null && x.top > chars[last].top + 2) breaks.push([text.slice(0, i), text.slice(i)]);
      last = i;
    });
    return { text, breaks };
  })`;
}

interface Broken {
  text: string;
  breaks: Array<[before: string, after: string]>;
}

async function breaksOf(page: Page, selector: string): Promise<Broken[]> {
  return page.evaluate<Broken[]>(lineBreaks(selector));
}

/** The breaks of each element that do not follow one of `separators` (or a space): a word split in the middle. */
function midWord(found: Broken[], separators: RegExp): string[] {
  return found.flatMap((f) =>
    f.breaks
      .filter(([before]) => !separators.test(before.slice(-1)) && !/\s$/.test(before))
      .map(([b, a]) => `${b} | ${a}`),
  );
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('the status page at 1280 px', () => {
  it('wraps paths at separators and commands at spaces, shows job ids whole, words each state once, and a confirmed delete as deleting', async () => {
    expect(chromiumMissing()).toBeUndefined();
    const emulator = await startEmulator({ buildMs: 300, buildFail: /^broken-/ });
    cleanups.push(() => emulator.close());
    const stray = await fetch(`${emulator.url}/v2/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'stray',
        source: 'internal_template',
        source_config: {},
        source_revision_config: {},
        secrets: [],
      }),
    });
    expect(stray.status).toBe(201);
    const dir = await tempDir('status-page-1280');
    const prefix = testPrefix('status-page-1280');
    cleanups.push(
      () => dropPrefix(prefix),
      () => rm(dir, { recursive: true, force: true }),
    );
    await writeFiles(dir, {
      'web.yaml': dockerDeploymentYaml('web', { maxScale: 1 }),
      'old-worker.yaml': dockerDeploymentYaml('old-worker', { maxScale: 1 }),
      [LONG_FILE]: dockerDeploymentYaml(LONG_NAME, { maxScale: 1 }),
      'paused.yaml': dockerDeploymentYaml('paused', { maxScale: 1, annotations: { 'converge/suspend': 'true' } }),
    });
    const common = ['--api-url', emulator.url, '--redis-prefix', prefix];
    // converge apply writes first (so converge owns them); the daemon then meets a failed build of its own.
    const applied = await runConverge(['apply', dir, ...common]);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    await writeFiles(dir, { 'broken-api.yaml': dockerDeploymentYaml('broken-api', { maxScale: 1 }) });
    const daemon = await startDaemon(
      dir,
      [
        ...common,
        '--prune',
        '--prune-mode',
        'confirm',
        '--resync',
        '1h',
        '--health-poll',
        '200ms',
        '--debounce',
        '50ms',
      ],
      { CONVERGE_WEBHOOK_TOKEN: HOOK },
    );
    const row = (doc: any, name: string): any => doc.resources.find((r: any) => r.name === name);
    await until(
      'broken-api degraded, the others in sync',
      async () => {
        const doc: any = await daemon.status();
        return (
          row(doc, 'broken-api')?.health.status === 'degraded' &&
          row(doc, 'web')?.sync.status === 'synced' &&
          doc.orphans.includes('Deployment/stray')
        );
      },
      30_000,
      100,
    );
    await rm(join(dir, 'old-worker.yaml'));
    await until(
      'old-worker DeletePending',
      async () => row(await daemon.status(), 'old-worker')?.sync.reason === 'DeletePending',
      30_000,
      100,
    );

    const browser = await openChromium();
    cleanups.push(() => browser.close());
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await page.goto(`${daemon.url}/`);
    const rowSelector = (name: string): string => `#rows tr.row[data-key="Deployment/${name}"]`;
    await page.waitForSelector(`${rowSelector('old-worker')} .cmd`);
    await page.waitForSelector(`${rowSelector('broken-api')} .cmd`);

    // The Last job column is filled from the record: the job converge apply ran before the daemon led, as its history lists it.
    const history = await runConverge(['history', LONG_NAME, '--redis-prefix', prefix, '--output', 'json']);
    const applyJob = JSON.parse(history.stdout).events.find((e: any) => e.type === 'write_done').job;
    expect(applyJob).toMatchObject({ id: expect.stringContaining(LONG_NAME), operation: 'create-deployment' });
    expect(row(await daemon.status(), LONG_NAME).job).toMatchObject({
      id: applyJob.id,
      state: 'completed',
      outcome: 'created',
    });
    expect(await page.textContent(`${rowSelector(LONG_NAME)} td:nth-child(7)`)).toMatch(/^createdcreate-deployment \S/);
    expect(await page.textContent(`${rowSelector('web')} td:nth-child(7)`)).toMatch(/^createdcreate-deployment \S/);
    // No cell's content overflows it (at 1280 and, below, 1920 px).
    const overflowing = `[...document.querySelectorAll('#resources td')].filter((td) => td.scrollWidth > td.clientWidth + 1).map((td) => (td.closest('tr').dataset.key || '') + ': ' + td.textContent)`;
    expect(await page.evaluate(overflowing)).toEqual([]);

    // Paths and names wrap only after a separator; the whole value is on hover.
    const files = await breaksOf(page, '#rows td.file code');
    expect(files.some((f) => f.text === LONG_FILE)).toBe(true);
    expect(midWord(files, /[/.\-_@:]/)).toEqual([]);
    expect(midWord(await breaksOf(page, '#rows button.expand'), /[/.\-_@:]/)).toEqual([]);
    // Commands wrap at their spaces only: never inside --url or the URL.
    const commands = await breaksOf(page, '#rows .cmd');
    expect(commands.map((c) => c.text).sort()).toEqual([
      `converge reconcile --confirm-delete old-worker --url ${daemon.url}`,
      `converge reconcile --retry-failed broken-api --url ${daemon.url}`,
    ]);
    expect(
      commands.flatMap((c) =>
        c.breaks.filter(([before, after]) => !/\s$/.test(before) && !/^\s/.test(after)).map(([b, a]) => `${b} | ${a}`),
      ),
    ).toEqual([]);
    expect(await page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(
      true,
    );
    expect(await page.getAttribute(`${rowSelector(LONG_NAME)} td.file code`, 'title')).toBe(LONG_FILE);

    // The pending delete: counted in the summary, said as "Delete pending" and "Confirm with" (no "Hold", no "Release").
    expect(await page.textContent('#delete-counts')).toBe('DeletePending1');
    const status = await runConverge(['status', '--url', daemon.url]);
    expect(status.stdout).toContain('; 1 delete pending');
    await page.locator(`${rowSelector('old-worker')} button.expand`).click();
    const pendingDetail = (await page.textContent('#rows tr.detail[data-key="Deployment/old-worker"]')) ?? '';
    expect(pendingDetail).toContain(`Confirm with: converge reconcile --confirm-delete old-worker --url ${daemon.url}`);
    expect(pendingDetail).toContain('Delete pending: owned by converge, no longer declared since');
    expect(pendingDetail).not.toMatch(/Hold:|Release with:/);

    // The history's Job column shows each job id whole (ids open with the resource's key).
    await page.locator(`${rowSelector('broken-api')} button.expand`).click();
    const jobCells = `[...document.querySelectorAll('#rows tr.detail[data-key="Deployment/broken-api"] .history-events tbody tr[data-job]')].map((tr) => [tr.dataset.job, tr.children[4].textContent, tr.children[4].querySelector('code').title])`;
    const jobs = await until(
      'the history of broken-api with its jobs',
      async () => {
        const shown = await page.evaluate<string[][]>(jobCells);
        return shown.length > 0 ? shown : undefined;
      },
      15_000,
      100,
    );
    for (const [id, text, title] of jobs) expect([text, title]).toEqual([id, id]);
    expect(midWord(await breaksOf(page, '#rows .history-events tbody td:nth-child(5) code'), /[/.\-_@:]/)).toEqual([]);

    await mkdir(OUTPUT, { recursive: true });
    // The screenshot with the pending delete's detail open (broken-api's closed, so every row is in the drawn window).
    await page.locator(`${rowSelector('broken-api')} button.expand`).click();
    await page.screenshot({ path: join(OUTPUT, 'status-page-1280.png'), fullPage: true });
    if (process.env.CONVERGE_UPDATE_SCREENSHOT === '1')
      await copyFile(join(OUTPUT, 'status-page-1280.png'), join(ROOT, 'docs', 'status-page.png'));
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: join(OUTPUT, 'status-page-1920.png'), fullPage: true });
    expect(midWord(await breaksOf(page, '#rows td.file code'), /[/.\-_@:]/)).toEqual([]);
    expect(await page.evaluate(overflowing)).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });

    // A confirmed delete: from the confirm on, its row reads deleting (then deleted), never its last sync (synced).
    const syncCell = `document.querySelector('${rowSelector('old-worker')} td:nth-child(4)')?.textContent ?? ''`;
    const confirmed = await runConverge(['reconcile', '--confirm-delete', 'old-worker', '--url', daemon.url], {
      CONVERGE_WEBHOOK_TOKEN: HOOK,
    });
    expect(confirmed.code, confirmed.stdout + confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toMatch(/done: 1 job enqueued\./);
    const seen: string[] = [];
    await until(
      'the confirmed delete shown as deleted',
      async () => {
        const shown = await page.evaluate<string>(syncCell);
        seen.push(shown);
        return shown.startsWith('deleted');
      },
      15_000,
      20,
    ).catch(async (error: unknown) => {
      expect([seen.at(-1), row(await daemon.status(), 'old-worker')]).toEqual([]);
      throw error;
    });
    expect(seen.filter((s) => !/^(out_of_syncDeletePending|deleting|deleted)/.test(s))).toEqual([]);
    expect(await page.textContent('#delete-counts')).not.toContain('DeletePending');

    // An emptied file: its resource's file is unknown because the file is empty (nothing failed to load), and the
    // refused prune is said once.
    await writeFile(join(dir, 'web.yaml'), '');
    const webFile = `document.querySelector('${rowSelector('web')} td.file')?.textContent ?? ''`;
    await until(
      "web's file shown as emptied",
      async () => (await page.evaluate<string>(webFile)) === 'unknown (a file that declared it is empty)',
      20_000,
      100,
    );
    const warnings = await until(
      'the refused prune on the page',
      async () => {
        const text = (await page.textContent('#warnings')) ?? '';
        return text.includes('refused') ? text : undefined;
      },
      15_000,
      100,
    );
    expect(warnings).toMatch(/^Prune refused, nothing is deleted: web\.yaml:1:1 declares nothing/);
    expect(warnings.match(/prune refused/gi)).toHaveLength(1);
    const statusAfter = await runConverge(['status', '--url', daemon.url]);
    expect(statusAfter.stdout).toContain('Prune refused, nothing is deleted: web.yaml:1:1 declares nothing');
    expect(statusAfter.stdout).not.toMatch(/prune refused.*prune refused/i);
    expect(consoleErrors).toEqual([]);
    await writeFile(join(OUTPUT, 'status-page-1280.json'), JSON.stringify(await daemon.status(), null, 2));
  }, 120_000);
});
