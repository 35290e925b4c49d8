// The status page's windowed table (docs/status-page.md "How rows are drawn") in Debian's Chromium, over the real status
// server on loopback serving 3,000 rows of statusRow's shape and a plan (a change per resource, some warnings): only
// the rows near the viewport are in the DOM, the filter finds a row far down the list, scrolling draws later rows with
// no gap, and a delta updates a drawn row, the plan by run (plan=delta) and the lists of keys by key (keys=delta): what
// the page holds after it is exactly the document of /status.
import { runInNewContext } from 'node:vm';
import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import type { ResourceState } from '../../src/core/resource-state-model.js';
import { SCRIPT_PLAN } from '../../src/daemon/server/status-page/script-plan.js';
import { startStatusServer, type StatusServer } from '../../src/daemon/server/status-server.js';
import { statusRow } from '../../src/daemon/status/status-row.js';
import { chromiumMissing, openChromium } from './chromium.js';
import { asPageHolds, decodedBody, isFirstWindow } from './status-format.js';
import { until } from './helpers.js';

const N = 3000;
const FAR = 2_871;
const ORPHANS = ['Deployment/stray-c', 'Deployment/stray-a', 'Deployment/stray-b'];

/** A resource's state; every seventh has drifted fields (a taller row), one far down the list has its own name. */
function state(
  i: number,
  health: ResourceState['health'] = {
    status: 'healthy',
    reason: 'RevisionDeployed',
    message: 'deployed',
    revisionId: `rev-${i}-0000000000`,
    revisionStatus: 'DEPLOYED',
  },
): ResourceState {
  const name = i === FAR ? 'needle-far' : `app-${String(i).padStart(5, '0')}`;
  return {
    key: `Deployment/${name}`,
    kind: 'Deployment',
    name,
    file: `apps/${name}.yaml`,
    action: 'noop',
    sync: { status: 'synced', reason: 'Synced', message: 'live matches the manifest' },
    health,
    reason: null,
    error: null,
    heldAtLastGood: false,
    job: null,
    drift:
      i % 7 === 3
        ? { policy: 'report', fields: ['spec.max_scale', 'spec.source_config.image', 'spec.env.LOG_LEVEL'] }
        : null,
  };
}

/** The plan: a change per resource (an update of max_scale for those in `edited`), a warning in every 25th file but those in `clean`. */
function planOf(states: ResourceState[], edited: Set<string>, clean: Set<string>): Record<string, unknown> {
  const changes = states.map((s) => ({
    kind: s.kind,
    name: s.name,
    action: edited.has(s.name) ? 'update' : 'noop',
    new_revision: edited.has(s.name),
    fields: edited.has(s.name) ? [{ path: 'spec.max_scale', before: 1, after: 2, sensitive: false }] : [],
    reason: null,
  }));
  const diagnostics = states
    .filter((s, i) => i % 25 === 5 && !clean.has(s.name))
    .map((s) => ({
      severity: 'warning',
      file: s.file,
      line: 4,
      column: 3,
      message: 'metadata.labels.team is not a known field; it is ignored',
    }));
  const summary = {
    create: 0,
    update: edited.size,
    adopt: 0,
    delete: 0,
    noop: states.length - edited.size,
    orphan: 0,
    blocked: 0,
    suspended: 0,
  };
  return { format_version: '1', summary, changes, notes: [], diagnostics };
}

/** The top-level lists of keys: every resource's secrets unknown (as under the real service), and a few orphans. */
interface KeyLists {
  secretsUnknown: string[];
  orphans: string[];
}

function document(
  states: ResourceState[],
  plan: Record<string, unknown> = planOf(states, new Set(), new Set()),
  lists: KeyLists = { secretsUnknown: states.map((s) => s.key), orphans: ORPHANS },
): Record<string, unknown> {
  const rows = states.map(statusRow);
  const count = (pick: (r: ResourceState) => string): Record<string, number> =>
    states.reduce<Record<string, number>>((out, s) => ({ ...out, [pick(s)]: (out[pick(s)] ?? 0) + 1 }), {});
  return {
    format_version: '1',
    daemon: {
      version: '0.0.0-test',
      dir: '/manifests',
      pid: 1,
      hostname: 'test',
      startedAt: '2026-01-01T00:00:00.000Z',
      stopping: false,
      service: 'http://127.0.0.1:1',
      embedded: false,
      reconcileEndpoint: false,
      driftPolicy: 'report',
      resyncMs: 60_000,
      prune: { enabled: false },
    },
    lease: null,
    secretsUnknown: lists.secretsUnknown,
    held: [],
    health: count((s) => s.health.status),
    sync: count((s) => s.sync.status),
    conflicts: [],
    deletesPending: [],
    lastReconcile: null,
    resources: rows,
    failedBuildLogs: {},
    orphans: lists.orphans,
    plan,
  };
}

/** The keys of the resource rows in the DOM, in order. */
function drawnKeys(page: Page): Promise<string[]> {
  return page.$$eval('#rows tr.row', (trs) =>
    trs.filter((tr) => !tr.hasAttribute('hidden')).map((tr) => tr.getAttribute('data-key') ?? ''),
  );
}

/** Whether `drawn` is a run of `order` without a gap. */
function contiguous(drawn: string[], order: string[]): boolean {
  const start = order.indexOf(drawn[0] ?? '');
  return start >= 0 && drawn.every((key, i) => order[start + i] === key);
}

describe('the status page at 3,000 rows', () => {
  let server: StatusServer | undefined;
  let browser: Awaited<ReturnType<typeof openChromium>> | undefined;

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('draws a window of rows, filters over all of them, scrolls to later rows, and takes a delta into a drawn row', async () => {
    expect(chromiumMissing()).toBeUndefined();
    const states = Array.from({ length: N }, (_, i) => state(i));
    const order = states.map((s) => s.key);
    let doc = document(states);
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: { readiness: async () => [], metrics: async () => '', status: () => doc, history: async () => [] },
    });
    browser = await openChromium();
    const page = await browser.context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    // Every /status answer with a body, in order: the plan is merged from them below as the page merges it.
    const answers: Array<Promise<string>> = [];
    page.on('response', (r) => {
      if (new URL(r.url()).pathname !== '/status' || r.status() !== 200 || isFirstWindow(r.url())) return;
      const text = r.text();
      // A poll answered while the browser closes at the end is read by nobody: its body's failure is not the test's.
      text.catch(() => undefined);
      answers.push(text);
    });
    await page.goto(`${server.url}/`);
    await until(
      'the page to count every row',
      async () => (await page.textContent('#shown')) === `(${N})`,
      30_000,
      100,
    );

    // A window: the first rows, in order, and far fewer than all of them.
    const first = await drawnKeys(page);
    expect(first[0]).toBe(order[0]);
    expect(contiguous(first, order)).toBe(true);
    expect(first.length).toBeGreaterThan(10);
    expect(first.length).toBeLessThan(200);
    expect(await page.evaluate("document.getElementById('resources').getAttribute('aria-rowcount')")).toBe(
      String(N + 1),
    );

    // The filter runs over every row, not the DOM: the row 2,871 places down is found.
    await page.fill('#filter', 'needle');
    expect(await drawnKeys(page)).toEqual(['Deployment/needle-far']);
    expect(await page.textContent('#shown')).toBe(`(1 of ${N})`);
    await page.fill('#filter', 'drift app-0004');
    expect(await drawnKeys(page)).toEqual(
      order.filter((key, i) => i % 7 === 3 && key.startsWith('Deployment/app-0004')),
    );
    await page.fill('#filter', '');
    expect((await drawnKeys(page))[0]).toBe(order[0]);

    // Scrolling draws later rows: at the middle and at the end, the row under the viewport's centre is a resource row.
    const rowAtCentre =
      "(() => { const tr = document.elementFromPoint(640, 450)?.closest('tr'); return tr && tr.classList.contains('row') ? tr.dataset.key : null; })()";
    await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight / 2)');
    const middle = await until(
      'a row at the centre after scrolling halfway',
      async () => await page.evaluate<string | null>(rowAtCentre),
      10_000,
      50,
    );
    expect(order.indexOf(middle)).toBeGreaterThan(N / 4);
    expect(contiguous(await drawnKeys(page), order)).toBe(true);
    // To the end, as a reader does: again while drawing rows of measured height moves the end.
    await until(
      'the last row drawn and on screen after scrolling to the end',
      async () => {
        await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
        if ((await drawnKeys(page)).at(-1) !== order.at(-1)) return false;
        return page.evaluate(
          "(() => { const b = [...document.querySelectorAll('#rows tr.row')].at(-1).getBoundingClientRect().bottom; return b > 0 && b <= window.innerHeight; })()",
        );
      },
      10_000,
      100,
    );
    const atEnd = await drawnKeys(page);
    expect(atEnd).not.toContain(order[0]);
    expect(contiguous(atEnd, order)).toBe(true);
    // The last row is on screen, and the spacer below it has no height left (the estimates settled into measured heights).
    const endState =
      "(() => { const last = [...document.querySelectorAll('#rows tr.row')].at(-1).getBoundingClientRect(); const spacer = document.querySelector('#rows tr.spacer[data-end=\"bottom\"]'); return { bottom: Math.round(last.bottom), viewport: window.innerHeight, spacer: spacer.hidden ? 0 : spacer.getBoundingClientRect().height, scrollY: Math.round(window.scrollY), height: document.documentElement.scrollHeight }; })()";
    const end = await page.evaluate<{ bottom: number; viewport: number; spacer: number }>(endState);
    expect(end, JSON.stringify(end)).toMatchObject({ spacer: 0 });
    expect(end.bottom > 0 && end.bottom <= end.viewport, JSON.stringify(end)).toBe(true);
    expect(await page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(
      true,
    );

    // A delta updates a drawn row, the plan and the lists of keys: only that row, the fields that changed, the plan's
    // changed runs (the edited change, and the file whose warning went away) and the keys that left a list (the edited
    // resource's secrets now known, an orphan gone) come over the wire.
    await page.evaluate('window.scrollTo(0, 0)');
    await until('the first rows drawn again', async () => (await drawnKeys(page))[0] === order[0], 10_000, 50);
    await page.locator(`#rows tr.row[data-key="${order[1]}"] button.expand`).click();
    await page.locator(`#rows tr.row[data-key="${order[2]}"] button.expand`).click();
    const before = (await Promise.all(answers)).length;
    states[2] = state(2, {
      status: 'degraded',
      reason: 'RevisionBuildFailed',
      message: 'build failed',
      revisionId: 'rev-2-failed-000000',
      revisionStatus: 'BUILD_FAILED',
    });
    const lists = {
      secretsUnknown: order.filter((key) => key !== order[2]),
      orphans: ORPHANS.filter((key) => key !== 'Deployment/stray-a'),
    };
    doc = document(states, planOf(states, new Set([states[2].name]), new Set([states[5]!.name])), lists);
    const healthOf = `document.querySelector('#rows tr.row[data-key="${order[2]}"] td:nth-child(5)')?.textContent`;
    await until(
      'the open page to show the row degraded',
      async () => (await page.evaluate<string | undefined>(healthOf))?.startsWith('degraded'),
      15_000,
      100,
    );
    expect(await page.evaluate('document.body.dataset.delta')).toBe('true');
    expect(await page.evaluate('document.body.dataset.received')).toBe('1');
    expect((await page.evaluate<string>('document.body.dataset.receivedFields')).split(' ')).toEqual([
      'format_version',
      'health',
      'planDelta',
      'keysDelta',
    ]);
    expect(await page.textContent('#health-counts')).toContain('degraded1');
    // The edited change shows in the row's open detail; the file whose warning went away left the problems list.
    const detail = (await page.textContent(`#rows tr.detail[data-key="${order[2]}"]`)) ?? '';
    expect(detail).toContain('update (starts a new revision)');
    expect(detail).toContain('spec.max_scale');
    const problems = await page.$$eval('#problem-list > li > strong', (nodes) => nodes.map((n) => n.textContent));
    expect(problems).toEqual(states.filter((_, i) => i % 25 === 5 && i !== 5).map((s) => s.file));

    // The page's merge of every answer it took equals the plan of the whole document; the delta is a few KB.
    const bodies = await Promise.all(answers);
    const merge = runInNewContext(`${SCRIPT_PLAN}\n({ holdPlan, mergedPlan })`) as {
      holdPlan(p: unknown): void;
      mergedPlan(d: unknown): unknown;
    };
    let held: unknown;
    for (const body of bodies) {
      const answer = decodedBody(body);
      if ('plan' in answer) merge.holdPlan((held = answer.plan));
      if (answer.planDelta) held = merge.mergedPlan(answer.planDelta);
    }
    expect(held).toEqual(doc.plan);
    // What the page holds is the whole document of /status (less the view beside it); the orphans shown are in its order.
    const shown = JSON.parse(await page.evaluate<string>('JSON.stringify(window.statusDocument)')) as Record<
      string,
      unknown
    >;
    expect(shown.view).toMatchObject({ delta: true });
    delete shown.view;
    expect(shown).toEqual(asPageHolds(JSON.parse(JSON.stringify(doc)) as Record<string, unknown>));
    expect(await page.$$eval('#orphan-rows tr', (trs) => trs.map((tr) => tr.getAttribute('data-key')))).toEqual(
      lists.orphans,
    );
    const whole = Buffer.byteLength(bodies[0]!);
    const deltas = bodies.slice(before).map((body) => Buffer.byteLength(body));
    expect(deltas.length).toBeGreaterThan(0);
    expect(whole).toBeGreaterThan(1_000_000);
    for (const bytes of deltas)
      expect(bytes, `a delta of ${bytes} B against a whole answer of ${whole} B`).toBeLessThan(whole / 200);
    // The open detail of the row beside it stayed open; the row count did not move.
    expect(await page.isVisible(`#rows tr.detail[data-key="${order[1]}"]`)).toBe(true);
    expect(await page.textContent('#shown')).toBe(`(${N})`);
    expect(errors).toEqual([]);
  }, 120_000);
});
