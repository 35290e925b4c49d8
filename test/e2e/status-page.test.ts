// The status page (docs/status-page.md) in Debian's Chromium, driven by playwright-core, against the built daemon over the
// emulator: a failed build (its log lines, a secret masked), a suspended resource, a broken file and an orphan; its rows
// against /status, the filter, the keyboard, light and dark, a live edit without a reload, every request to the daemon,
// no console error, no secret in anything it loaded. It writes test-output/status-page.png.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { runInNewContext } from 'node:vm';
import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { SCRIPT_PLAN } from '../../src/daemon/server/status-page/script-plan.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { chromiumMissing, openChromium } from './chromium.js';
import { asPageHolds, decodedBody, isFirstWindow } from './status-format.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  ROOT,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';

const OUTPUT = join(ROOT, 'test-output');
const API_KEY = 'status-page-api-key-4Hq9';
const WEB_SECRET = 'status-page-web-secret-Zt61';
const BUILD_SECRET = 'status-page-build-secret-Km38';
const BROKEN_YAML = [
  'apiVersion: converge/v1',
  'kind: Deployment',
  'metadata:',
  '  name: bad',
  'spec:',
  '  source: external_docker',
  '  source_config: [1, 2',
  '',
].join('\n');

/** What the page shows of one resource row, read from its cells. */
interface ShownRow {
  key: string;
  kind: string;
  name: string;
  file: string;
  sync: string;
  health: string;
  revision: string;
}

async function shownRows(page: Page): Promise<ShownRow[]> {
  return page.$$eval('#rows tr.row', (trs) =>
    trs.map((tr) => {
      const cells = [...tr.querySelectorAll(':scope > td')];
      const text = (i: number): string => (cells[i]?.textContent ?? '').trim();
      const words = (i: number): string =>
        [...(cells[i]?.querySelectorAll('.badge, .reason') ?? [])].map((n) => n.textContent).join(' ');
      return {
        key: tr.getAttribute('data-key') ?? '',
        kind: text(0),
        name: text(1),
        file: text(2),
        sync: words(3),
        health: words(4),
        revision: cells[5]?.querySelector('code')?.title ?? '',
      };
    }),
  );
}

async function visibleKeys(page: Page, selector: string): Promise<string[]> {
  return page.$$eval(selector, (trs) =>
    trs.filter((tr) => !tr.hasAttribute('hidden')).map((tr) => tr.getAttribute('data-key') ?? ''),
  );
}

describe('the status page', () => {
  let emulator: RunningEmulator | undefined;
  let browser: Awaited<ReturnType<typeof openChromium>> | undefined;
  const cleanups: Array<() => Promise<unknown>> = [];

  afterAll(async () => {
    await browser?.close();
    await killAllConverge();
    await emulator?.close();
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('shows /status: rows, the failed build, the broken file, the filter, and follows an edit without a reload', async () => {
    expect(chromiumMissing()).toBeUndefined();
    emulator = await startEmulator({ apiKey: API_KEY, buildMs: 600, buildFail: /^broken-/, buildLogSecrets: true });
    const stray = await fetch(`${emulator.url}/v2/deployments`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'stray',
        source: 'internal_template',
        source_config: {},
        source_revision_config: {},
        secrets: [],
      }),
    });
    expect(stray.status).toBe(201);
    const dir = await tempDir('status-page');
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, {
      'web.yaml': dockerDeploymentYaml('web', { maxScale: 2, secrets: [['WEB_TOKEN', 'PAGE_WEB_TOKEN']] }),
      'broken-api.yaml': dockerDeploymentYaml('broken-api', {
        maxScale: 1,
        secrets: [['API_TOKEN', 'PAGE_BUILD_TOKEN']],
      }),
      'paused.yaml': dockerDeploymentYaml('paused', { maxScale: 1, annotations: { 'converge/suspend': 'true' } }),
      'bad.yaml': BROKEN_YAML,
    });
    const prefix = testPrefix('status-page');
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
        '--health-poll',
        '200ms',
        '--log-level',
        'info',
      ],
      {
        CONVERGE_API_KEY: API_KEY,
        PAGE_WEB_TOKEN: WEB_SECRET,
        PAGE_BUILD_TOKEN: BUILD_SECRET,
      },
    );
    const row = (doc: any, key: string): any => doc.resources.find((r: any) => r.key === key);
    await until(
      'the failed build, the healthy web, the suspended and the broken resource in /status',
      async () => {
        const doc = (await daemon.status()) as any;
        return (
          row(doc, 'Deployment/broken-api')?.health.status === 'degraded' &&
          doc.failedBuildLogs['Deployment/broken-api']?.lines.length > 0 &&
          row(doc, 'Deployment/web')?.health.status === 'healthy' &&
          row(doc, 'Deployment/paused')?.sync.status === 'suspended' &&
          row(doc, 'Deployment/bad')?.sync.status === 'blocked' &&
          doc.orphans.includes('Deployment/stray')
        );
      },
      30_000,
      100,
    );

    browser = await openChromium();
    const context = browser.context;
    const page = context.pages()[0] ?? (await context.newPage());
    const requests: string[] = [];
    const consoleErrors: string[] = [];
    const loaded: Array<Promise<string>> = [];
    const statusAnswers: number[] = [];
    const statusUrls: string[] = [];
    const statusBodies: Array<Promise<string>> = [];
    context.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    page.on('response', (r) => {
      if (new URL(r.url()).pathname === '/status') {
        statusAnswers.push(r.status());
        statusUrls.push(r.url());
        if (r.status() === 200) statusBodies.push(r.text());
      }
      if (r.status() !== 304) loaded.push(r.text().catch(() => ''));
    });

    await page.goto(`${daemon.url}/`);
    // Rows match /status (read until both show the same state: the page follows it within a poll).
    let expected: ShownRow[] = [];
    await until(
      'the page to show the rows of /status',
      async () => {
        const doc = (await daemon.status()) as any;
        const fileOf = (r: any): string =>
          r.file ??
          doc.plan.diagnostics.find((d: any) => r.error?.includes(`${d.file}:${d.line}:${d.column}`))?.file ??
          '—';
        expected = doc.resources.map((r: any) => ({
          key: r.key,
          kind: r.kind,
          name: r.name,
          file: fileOf(r),
          sync: `${r.sync.status} ${r.sync.reason}`,
          health: `${r.health.status} ${r.health.reason}`,
          revision: r.health.revisionId ?? '',
        }));
        return JSON.stringify(await shownRows(page)) === JSON.stringify(expected);
      },
      15_000,
      200,
    ).catch(async (error: unknown) => {
      expect(await shownRows(page)).toEqual(expected);
      throw error;
    });
    expect(expected.map((r) => r.key).sort()).toEqual([
      'Deployment/bad',
      'Deployment/broken-api',
      'Deployment/paused',
      'Deployment/web',
    ]);
    expect(await page.$$eval('#orphan-rows tr', (trs) => trs.map((tr) => tr.textContent))).toEqual([
      expect.stringContaining('stray'),
    ]);
    // The header follows /status within a poll (a resync may end a reconcile between two reads).
    let header = '';
    let doc: any;
    await until(
      'the header to show the last reconcile of /status',
      async () => {
        doc = await daemon.status();
        header = (await page.textContent('#facts')) ?? '';
        return header.includes(`#${doc.lastReconcile.id} ${doc.lastReconcile.trigger}`);
      },
      15_000,
      200,
    );
    expect(header).toContain(dir);
    expect(header).toContain(doc.manifestVersion.id);
    expect(header).toContain(doc.lease.leader.holder);
    expect(header).toContain(String(doc.lease.leader.token));
    expect(header).toContain(`#${doc.lastReconcile.id} ${doc.lastReconcile.trigger}`);
    expect(await page.textContent('#sync-counts')).toContain('suspended1');
    expect(await page.textContent('#health-counts')).toContain('degraded1');

    // The failed build: its revision on the row, the hold's exact command, and in the detail its log lines (masked).
    const failedRevision: string = row(doc, 'Deployment/broken-api').health.revisionId;
    const brokenRow = page.locator('#rows tr.row[data-key="Deployment/broken-api"]');
    expect(await brokenRow.locator('td').nth(5).textContent()).toContain(failedRevision.slice(0, 8));
    expect(await brokenRow.locator('td').nth(7).textContent()).toContain(
      `RevisionFailedconverge reconcile --retry-failed broken-api --url ${daemon.url}`,
    );
    // The daemon runs without CONVERGE_WEBHOOK_TOKEN: /status says POST /reconcile is off, and the command says so and how to turn it on.
    expect(doc.daemon.reconcileEndpoint).toBe(false);
    expect(await brokenRow.locator('td').nth(7).textContent()).toContain(
      'POST /reconcile is off on this daemon, so this command is refused: restart the daemon with CONVERGE_WEBHOOK_TOKEN set',
    );
    // At 1280 px: no horizontal scrollbar (page or table), and the hold's command on at most 3 lines.
    expect(await page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(
      true,
    );
    expect(
      await page.evaluate(
        "(() => { const w = document.querySelector('.table-wrap'); return w.scrollWidth <= w.clientWidth; })()",
      ),
    ).toBe(true);
    const commandLines = await page.evaluate(
      `(() => { const c = document.querySelector('#rows tr.row[data-key="Deployment/broken-api"] .cmd'); const style = getComputedStyle(c); const lh = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.2; return Math.round(c.getBoundingClientRect().height / lh); })()`,
    );
    expect(commandLines).toBeLessThanOrEqual(3);
    // One time format on the page; the drift policy in Settings (and in /status).
    const times = (await page.$$eval('time', (nodes) => nodes.map((n) => n.textContent ?? ''))).concat([
      (await page.textContent('#live')) ?? '',
    ]);
    expect(times.join(' ')).not.toMatch(/\b(AM|PM)\b/);
    expect(header).toContain(`drift ${doc.daemon.driftPolicy}`);
    await brokenRow.locator('button.expand').click();
    const brokenDetail = page.locator('#rows tr.detail[data-key="Deployment/broken-api"]');
    await brokenDetail.waitFor({ state: 'visible' });
    const detailText = (await brokenDetail.textContent()) ?? '';
    expect(detailText).toContain(`Build log of failed revision ${failedRevision}`);
    for (const line of doc.failedBuildLogs['Deployment/broken-api'].lines as string[])
      expect(detailText).toContain(line);
    expect(detailText).toContain('Build failed: "pip install -e ." exited with status 1');
    expect(detailText).toContain('API_TOKEN=********');
    // Its history in the detail: the entries of GET /history/Deployment/broken-api (what `converge history` prints), newest first.
    const shownHistory = `[...document.querySelectorAll('#rows tr.detail[data-key="Deployment/broken-api"] .history-events tbody tr')].map((tr) => tr.dataset.type + ' ' + (tr.dataset.job || '') + ' ' + tr.children[2].textContent).join('|')`;
    let recorded: any;
    await until(
      'the detail to show the history the daemon serves',
      async () => {
        const answer = await fetch(`${daemon.url}/history/Deployment/broken-api`);
        recorded = await answer.json();
        // Reopened when the history moved on since the detail was built (the detail reads it when it is built).
        const want = recorded.events.map((e: any) => `${e.type} ${e.job?.id ?? ''} ${e.reason}`).join('|');
        if ((await page.evaluate(shownHistory)) === want) return true;
        await brokenRow.locator('button.expand').click();
        await brokenRow.locator('button.expand').click();
        return undefined;
      },
      20_000,
      300,
    );
    expect(recorded.resource).toBe('Deployment/broken-api');
    const types = recorded.events.map((e: any) => e.type);
    expect(types).toEqual(expect.arrayContaining(['decided', 'write_enqueued', 'write_done', 'revision', 'held']));
    // The job /status names is the one whose write the history shows; the failed revision is there with its status.
    expect(recorded.events.find((e: any) => e.type === 'write_done').job.id).toBe(
      row(doc, 'Deployment/broken-api').job.id,
    );
    expect(recorded.events.find((e: any) => e.type === 'held').revision).toMatchObject({
      id: failedRevision,
      status: expect.stringMatching(/FAIL/),
    });
    // The failed revision's entry shows the service's times of it on hover.
    const failure = recorded.events.find((e: any) => e.type === 'revision' && e.revision?.status === 'BUILD_FAILED');
    const hover = `[...document.querySelectorAll('#rows tr.detail[data-key="Deployment/broken-api"] .history-events tbody tr[data-type="revision"]')].map((tr) => tr.children[5].title)`;
    expect(await page.evaluate<string[]>(hover)).toContain(
      `created ${failure.revision.createdAt}, BUILD_FAILED since ${failure.revision.updatedAt}`,
    );
    expect(await brokenDetail.locator('.history-events thead th').allTextContents()).toEqual([
      'When',
      'Type',
      'Reason',
      'Message',
      'Job',
      'Revision',
      'Recorded by',
    ]);
    expect((await fetch(`${daemon.url}/history/Nope/x`)).status).toBe(404);

    // The broken file, at file:line:column, in its own section; and in its row's detail, reached by keyboard.
    const diagnostic = doc.plan.diagnostics.find((d: any) => d.file === 'bad.yaml');
    expect(diagnostic).toMatchObject({ severity: 'error', line: 7 });
    const where = `bad.yaml:${diagnostic.line}:${diagnostic.column}`;
    expect(await page.$$eval('#problems .diag', (lines) => lines.map((l) => l.textContent))).toEqual([
      `${where} error ${diagnostic.message}`,
    ]);
    expect(await page.$$eval('#resources > thead th[scope="col"]', (ths) => ths.map((th) => th.textContent))).toEqual([
      'Kind',
      'Name',
      'File',
      'Sync',
      'Health',
      'Revision',
      'Last job',
      'Hold or conflict',
      'Drifted fields',
    ]);
    await page.locator('h1').click();
    await page.keyboard.press('/');
    // In-page expressions are strings: the test program has no DOM types.
    expect(await page.evaluate('document.activeElement.id')).toBe('filter');
    await page.keyboard.press('Tab');
    expect(await page.evaluate("document.activeElement.closest('tr').dataset.key")).toBe(expected[0]!.key);
    await page.locator('#filter').focus();
    await page.keyboard.type('paused');
    expect(await visibleKeys(page, '#rows tr.row')).toEqual(['Deployment/paused']);
    await page.fill('#filter', 'degraded');
    expect(await visibleKeys(page, '#rows tr.row')).toEqual(['Deployment/broken-api']);
    expect(await visibleKeys(page, '#rows tr.detail')).toEqual(['Deployment/broken-api']);
    await page.fill('#filter', 'blocked');
    expect(await visibleKeys(page, '#rows tr.row')).toEqual(['Deployment/bad']);
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('bad');
    await page.keyboard.press('Enter');
    const badDetail = page.locator('#rows tr.detail[data-key="Deployment/bad"]');
    await badDetail.waitFor({ state: 'visible' });
    expect(await badDetail.textContent()).toContain(where);
    await page.fill('#filter', 'stray');
    expect(await visibleKeys(page, '#rows tr.row')).toEqual([]);
    expect(await visibleKeys(page, '#orphan-rows tr')).toEqual(['Deployment/stray']);
    await page.fill('#filter', '');
    expect((await visibleKeys(page, '#rows tr.row')).length).toBe(4);
    await page.locator('#rows tr.row[data-key="Deployment/bad"] button.expand').click();

    // Readable in light and dark: the background follows prefers-color-scheme.
    const background = (): Promise<unknown> => page.evaluate('getComputedStyle(document.body).backgroundColor');
    expect(await background()).toBe('rgb(255, 255, 255)');
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await background()).toBe('rgb(13, 17, 23)');
    await page.emulateMedia({ colorScheme: 'light' });

    await mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'status-page.png'), fullPage: true });
    // docs/status-page.png is status-page-1280.test.ts's screenshot (CONVERGE_UPDATE_SCREENSHOT=1 there).

    // An edit shows its new revision on the open page, without a reload; meanwhile unchanged polls answer 304.
    await page.evaluate('window.noReload = true');
    const before: string = row(await daemon.status(), 'Deployment/web').health.revisionId;
    await writeFiles(dir, {
      'web.yaml': dockerDeploymentYaml('web', { maxScale: 3, secrets: [['WEB_TOKEN', 'PAGE_WEB_TOKEN']] }),
    });
    const after = await until(
      'a new revision of web in /status',
      async () => {
        const id = row(await daemon.status(), 'Deployment/web')?.health.revisionId as string | undefined;
        return id && id !== before ? id : undefined;
      },
      20_000,
      100,
    );
    // Polled with evaluate: the page's CSP forbids the eval that waitForFunction needs.
    const shownRevision = `document.querySelector('#rows tr.row[data-key="Deployment/web"] td:nth-child(6) code')?.getAttribute('title')`;
    await until(
      'the open page to show the new revision',
      async () => (await page.evaluate(shownRevision)) === after,
      15_000,
      100,
    );
    expect(await page.evaluate('window.noReload')).toBe(true);
    // The change came as a delta: the last body held only the rows changed since the page's token, not all of them.
    expect(await page.evaluate('document.body.dataset.delta')).toBe('true');
    const received = Number(await page.evaluate('document.body.dataset.received'));
    expect(received).toBeLessThan((await shownRows(page)).length);
    // The page asked a first window of rows, then the whole document, then every answer since its token.
    expect(isFirstWindow(statusUrls[0]!)).toBe(true);
    const polls = statusUrls.slice(1);
    expect(polls.length).toBeGreaterThan(1);
    expect(polls.every((url) => url.includes('format=2') && !isFirstWindow(url))).toBe(true);
    expect(polls.slice(1).every((url) => /[?&]since=[^&]+\.\d+/.test(url))).toBe(true);
    // The plan came by run (plan=delta), and the page's merge of the answers it took is the plan of the whole document.
    expect(polls.every((url) => url.includes('plan=delta'))).toBe(true);
    let merged: unknown;
    await until(
      "the plan merged from the page's answers to equal the plan of /status",
      async () => {
        const merge = runInNewContext(`${SCRIPT_PLAN}\n({ holdPlan, mergedPlan })`) as {
          holdPlan(p: unknown): void;
          mergedPlan(d: unknown): unknown;
        };
        for (const body of await Promise.all(statusBodies)) {
          const answer = decodedBody(body);
          if ('plan' in answer) merge.holdPlan((merged = answer.plan));
          if (answer.planDelta) merged = merge.mergedPlan(answer.planDelta);
        }
        return JSON.stringify(merged) === JSON.stringify(((await daemon.status()) as any).plan);
      },
      15_000,
      300,
    ).catch(async (error: unknown) => {
      expect(merged).toEqual(((await daemon.status()) as any).plan);
      throw error;
    });
    // The lists of keys came by key (keys=delta): what the page holds is the document of /status (rows by key, less the view).
    expect(polls.every((url) => url.includes('keys=delta'))).toBe(true);
    const comparable = (d: any): unknown => ({
      ...d,
      view: undefined,
      resources: [...d.resources].sort((a: any, b: any) => (a.key < b.key ? -1 : 1)),
    });
    const holds = async (): Promise<unknown> => comparable(asPageHolds(await daemon.status()));
    let shownDoc: any;
    await until(
      "the page's document to equal /status",
      async () => {
        shownDoc = JSON.parse(await page.evaluate<string>('JSON.stringify(window.statusDocument)'));
        return isDeepStrictEqual(comparable(shownDoc), await holds());
      },
      15_000,
      300,
    ).catch(async (error: unknown) => {
      expect(comparable(shownDoc)).toEqual(await holds());
      throw error;
    });
    expect(shownDoc.orphans).toEqual(['Deployment/stray']);
    const carriedPlan = (await Promise.all(statusBodies))
      .map((body) => JSON.parse(body) as Record<string, unknown>)
      .filter((a) => (a.view as { delta: boolean }).delta && a.planDelta);
    expect(carriedPlan.length).toBeGreaterThan(0);
    // Once nothing changes, a poll answers 304 (under load every poll of the rollout may carry a change: wait for one).
    await until(
      'an unchanged poll answered 304',
      () => Promise.resolve(statusAnswers.includes(304) || undefined),
      20_000,
      100,
    );
    expect(statusAnswers.filter((s) => s !== 200 && s !== 304)).toEqual([]);

    // Every request stayed on the daemon; no console error; no secret in anything the page loaded or shows.
    expect(requests.length).toBeGreaterThan(4);
    expect(requests.filter((url) => !url.startsWith(`${daemon.url}/`))).toEqual([]);
    expect(consoleErrors).toEqual([]);
    const everything = [...(await Promise.all(loaded)), await page.content(), await page.innerText('body')].join('\n');
    expect(everything).toContain('API_TOKEN=********');
    for (const secret of [WEB_SECRET, BUILD_SECRET, API_KEY]) expect(everything).not.toContain(secret);

    // web.yaml moved out while bad.yaml fails to load: web's file is unknown, never bad.yaml's name.
    await rm(join(dir, 'web.yaml'));
    await until(
      'web without a file in /status',
      async () => {
        const r = row(await daemon.status(), 'Deployment/web');
        return r && r.file === null;
      },
      20_000,
      100,
    );
    const webFile = `document.querySelector('#rows tr.row[data-key="Deployment/web"] td:nth-child(3)')?.textContent`;
    await until(
      "the page to show web's file as unknown",
      async () => (await page.evaluate(webFile)) === 'unknown (a file fails to load)',
      15_000,
      100,
    ).catch(async (error: unknown) => {
      expect([await page.evaluate(webFile), JSON.stringify(row(await daemon.status(), 'Deployment/web'))]).toEqual([
        'unknown (a file fails to load)',
        '',
      ]);
      throw error;
    });
  }, 120_000);
});
