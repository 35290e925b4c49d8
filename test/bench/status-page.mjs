// The status page (docs/status-page.md) at 1,000 and 10,000 resources: /status and its deltas in bytes, navigation to the
// rows drawn in Chromium, one filter keystroke, and an unchanged poll.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { dropBenchPrefix } from './lib/redis-prefix.mjs';
import {
  benchMain,
  benchPrefix,
  CLI,
  figure,
  freePort,
  median,
  ms,
  REDIS_URL,
  removeDir,
  stopChild,
  tempDir,
} from './lib/common.mjs';
import { chromiumThere, CHROMIUM, openChromium } from './lib/chromium.mjs';
import { daemonCommand } from './lib/daemon-child.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';
import { benchEnv, deploymentName, manifestPath, manifestText, writeManifests } from './lib/fixtures.mjs';

/** `converge run DIR` as a child process; resolves once /status has `n` rows. */
async function startDaemon(dir, apiUrl, prefix, n) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [
    CLI,
    'run',
    dir,
    '--api-url',
    apiUrl,
    '--redis-url',
    REDIS_URL,
    '--redis-prefix',
    prefix,
    '--http-host',
    '127.0.0.1',
    '--http-port',
    String(port),
    '--resync',
    '1h',
    '--log-level',
    'warn',
  ];
  const [command, argv] = daemonCommand(args);
  const child = spawn(command, argv, {
    env: { ...benchEnv(), NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`daemon exited: ${err.slice(-800)}`);
    if (Date.now() > deadline) throw new Error(`/status did not reach ${n} rows in 120 s`);
    const doc = await fetch(`${url}/status`).then(
      (r) => r.json(),
      () => undefined,
    );
    if (doc?.resources?.length === n && doc.lastReconcile?.ok) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    url,
    stop: () => stopChild(child, exited),
  };
}

/** Bytes of an answer of /status at `path`, and the answer. */
async function answer(url, path) {
  const text = await fetch(`${url}${path}`).then((r) => r.text());
  return { bytes: Buffer.byteLength(text), doc: JSON.parse(text) };
}

/**
 * Bytes of the whole /status; of a delta since the current token while nothing changed; and of the first delta since
 * that token that carries the row of one edited manifest (docs/contracts.md §5), with the top-level fields it carried.
 */
async function deltaBytes(url, dir) {
  const whole = (await answer(url, '/status')).bytes;
  // As the page asks: in format 2, with plan=delta and keys=delta, a changed plan and a changed list of keys come by
  // run (docs/contracts.md §5); its first window of rows, then the whole document.
  const firstWindow = (await answer(url, '/status?format=2&first=200')).bytes;
  const page = await answer(url, '/status?format=2&plan=delta&keys=delta&since=');
  const token = page.doc.view.sequence;
  const none = (await answer(url, `/status?format=2&plan=delta&keys=delta&since=${encodeURIComponent(token)}`)).bytes;
  await writeFile(join(dir, manifestPath(0)), manifestText(0, 4));
  const key = `Deployment/${deploymentName(0)}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`no delta carried ${key} within 120 s of its edit`);
    const delta = await answer(url, `/status?format=2&plan=delta&keys=delta&since=${encodeURIComponent(token)}`);
    if (delta.doc.resources.some((r) => r.key === key)) {
      const fields = Object.keys(delta.doc).filter((f) => f !== 'resources' && f !== 'view' && f !== 'strings');
      return {
        whole,
        pageWhole: page.bytes,
        firstWindow,
        none,
        change: delta.bytes,
        changeRows: delta.doc.resources.length,
        changeFields: fields,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function unchangedPolls(url, count) {
  const first = await fetch(`${url}/status`);
  const etag = first.headers.get('etag');
  const bytes = (await first.arrayBuffer()).byteLength;
  const samples = [];
  let notModified = 0;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await fetch(`${url}/status`, { headers: { 'if-none-match': etag } });
    await res.arrayBuffer();
    samples.push(performance.now() - started);
    if (res.status === 304) notModified += 1;
  }
  return { bytes, samples, notModified };
}

/** Navigation start to the page's first full render (its `status-page-rendered` mark), `loads` times in a fresh page. */
async function pageLoads(url, loads) {
  const browser = await openChromium();
  const { context } = browser;
  try {
    const samples = [];
    const loaded = [];
    const wholes = [];
    const filters = [];
    let rows = 0;
    let held = 0;
    for (let i = 0; i < loads; i++) {
      const page = await context.newPage();
      await page.goto(`${url}/`);
      // Polled with evaluate (the page's CSP forbids the eval that waitForFunction needs); the mark times the render.
      const deadline = Date.now() + 30_000;
      while ((await page.evaluate('document.body.dataset.renders')) === undefined) {
        if (Date.now() > deadline) throw new Error('the page did not render /status within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      samples.push(await page.evaluate("performance.getEntriesByName('status-page-rendered')[0].startTime"));
      loaded.push(await page.evaluate("performance.getEntriesByName('status-page-loaded')[0].startTime"));
      // The first draw is of a first window of rows; the filter is timed over every row, once the whole document is in.
      while ((await page.evaluate('document.body.dataset.whole')) !== 'true') {
        if (Date.now() > deadline) throw new Error('the page did not take the whole /status within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      wholes.push(await page.evaluate("performance.getEntriesByName('status-page-whole')[0].startTime"));
      rows = await page.evaluate("document.querySelectorAll('#rows tr.row').length");
      held = Number(await page.evaluate("document.getElementById('resources').getAttribute('aria-rowcount')")) - 1;
      // Keystrokes in the filter as typed, then the box cleared: each the input event's handler and the layout it forces.
      for (const word of ['b', 'be', 'bench-0', 'bench-00', 'bench-009', '']) {
        filters.push(
          await page.evaluate(
            `(() => { const f = document.getElementById('filter'); const t = performance.now(); f.value = ${JSON.stringify(word)}; f.dispatchEvent(new Event('input')); void document.body.offsetHeight; return performance.now() - t; })()`,
          ),
        );
      }
      await page.close();
    }
    return { samples, loaded, wholes, rows, held, filters };
  } finally {
    await browser.close();
  }
}

/** The figures at `n` resources: a daemon over the emulator, its /status, and the page in Chromium. */
async function measure(n, options) {
  const loads = options.quick ? 2 : 5;
  const dir = await tempDir('status-page');
  const prefix = benchPrefix('status-page');
  const emulator = await startEmulatorChild({ n, latencyMs: options.latencyMs, secrets: 'masked' });
  let daemon;
  try {
    await writeManifests(dir, n);
    daemon = await startDaemon(dir, emulator.url, prefix, n);
    const polls = await unchangedPolls(daemon.url, options.quick ? 5 : 30);
    const page = await pageLoads(daemon.url, loads);
    // Last: the edit it makes changes the daemon's state.
    const bytes = await deltaBytes(daemon.url, dir);
    return { n, loads, polls, page, bytes };
  } finally {
    await daemon?.stop();
    await emulator.stop();
    await removeDir(dir);
    await dropBenchPrefix(prefix);
  }
}

/** The figures of one size, each beside its target (issue 41, item 2). */
function figuresOf(m) {
  const { n, loads, page, bytes, polls } = m;
  const drawn = ms(median(page.samples));
  const keystroke = ms(median(page.filters));
  const big = n >= 1000;
  return [
    figure(
      '41.2',
      `status page N=${n}: whole /status body (format 1, pretty), bytes`,
      bytes.whole,
      'B',
      'info (what a client asks without a query)',
      null,
    ),
    figure(
      '50.4',
      `status page N=${n}: whole /status the page and converge status read (format 2), bytes`,
      bytes.pageWhole,
      'B',
      '<= 8 MB at 10,000',
      n >= 10000 ? bytes.pageWhole <= 8_000_000 : null,
      '',
      { key: 'status-whole', n },
    ),
    figure(
      '50.4',
      `status page N=${n}: the page's first window (format=2&first=200), bytes`,
      bytes.firstWindow,
      'B',
      'info',
      null,
    ),
    figure(
      '41.2',
      `status page N=${n}: /status?plan=delta&keys=delta&since=TOKEN with no change, bytes`,
      bytes.none,
      'B',
      '< 1 KB',
      bytes.none < 1024,
    ),
    figure(
      '41.2',
      `status page N=${n}: the first delta carrying one edited resource, bytes (${bytes.changeRows} rows; fields ${bytes.changeFields.join(', ')})`,
      bytes.change,
      'B',
      '< 5% of the whole body',
      big ? bytes.change < bytes.whole / 20 : null,
      '',
      { key: 'status-body', n },
    ),
    figure(
      '41.2',
      `status page N=${n}: navigation -> rows drawn, median of ${loads}`,
      drawn,
      'ms',
      '< 1500 ms',
      drawn < 1500,
      '',
      { key: 'page-rows', n },
    ),
    figure(
      '41.2',
      `status page N=${n}: one filter keystroke (handler + layout), median of ${page.filters.length}`,
      keystroke,
      'ms',
      '< 100 ms',
      keystroke < 100,
      '',
      { key: 'page-keystroke', n },
    ),
    figure(
      '50.4',
      `status page N=${n}: unchanged /status poll (304), median`,
      ms(median(polls.samples)),
      'ms',
      '<= 20 ms at 10,000',
      n >= 10000 ? median(polls.samples) <= 20 : null,
      '',
      { key: 'status-poll', n },
    ),
    figure(
      '50.4',
      `status page N=${n}: navigation -> the whole document drawn, median of ${loads}`,
      ms(median(page.wholes)),
      'ms',
      'info',
      null,
    ),
  ];
}

export async function run(options) {
  // CONVERGE_BENCH_STATUS_N=N measures one size only.
  const sizes = Number(process.env.CONVERGE_BENCH_STATUS_N)
    ? [Number(process.env.CONVERGE_BENCH_STATUS_N)]
    : options.quick
      ? [20]
      : [1000, 10000];
  if (!chromiumThere()) {
    return {
      name: 'status-page',
      tables: [],
      figures: [
        figure('41.2', 'status page: rows drawn', 'skipped', '', '< 1500 ms', null, `no Chromium at ${CHROMIUM}`),
      ],
    };
  }
  const measured = [];
  for (const n of sizes) measured.push(await measure(n, options));
  return {
    name: 'status-page',
    tables: [
      {
        title: 'Status page (converge run over the emulator, Chromium headless at 1280x900)',
        columns: [
          'resources',
          'rows in the DOM (of those held)',
          '/status bytes',
          '/status?format=2 bytes',
          'first window bytes',
          'delta bytes (no change)',
          'delta bytes (one edit)',
          '/status read ms (median)',
          'rows drawn ms (median)',
          'rows drawn ms (max)',
          'filter keystroke ms (median)',
          'filter keystroke ms (max)',
          'unchanged poll ms (median)',
          '304 answers',
        ],
        rows: measured.map(({ n, page, bytes, polls }) => [
          n,
          `${page.rows} of ${page.held}`,
          bytes.whole,
          bytes.pageWhole,
          bytes.firstWindow,
          bytes.none,
          bytes.change,
          ms(median(page.loaded)),
          ms(median(page.samples)),
          ms(Math.max(...page.samples)),
          ms(median(page.filters)),
          ms(Math.max(...page.filters)),
          ms(median(polls.samples)),
          `${polls.notModified}/${polls.samples.length}`,
        ]),
      },
    ],
    figures: measured.flatMap(figuresOf),
    notes: [
      '/status read: from navigation start to the first /status fetched and parsed by the page. Rows drawn: from navigation start to the performance mark the page sets once its first /status is drawn (header, problems, the rows in and near the viewport, orphans); the page holds every row and draws a window of them (docs/status-page.md).',
      'A keystroke: the filter box given a value and its input event dispatched, then the layout that forces (offsetHeight), timed in the page; the values typed are b, be, bench-0, bench-00, bench-009 and the box cleared.',
      'A delta after one edit: one manifest rewritten with another max_scale; /status?plan=delta&keys=delta&since=TOKEN (TOKEN taken before the edit; plan=delta and keys=delta as the page asks) polled until it carries that row; it holds the rows and top-level fields changed since the token, and of a changed plan its fields and the runs of its changes, health notes and diagnostics changed since (planDelta), and of a changed list of keys (secretsUnknown, held, conflicts, deletesPending, orphans) the keys added, moved and removed since (keysDelta).',
      `Load average at the end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')} (on ${(await import('node:os')).cpus().length} cores): wall times grow with it.`,
      "An unchanged poll: GET /status with the If-None-Match of the last answer; the daemon builds the document from the rows it read when the projection's version last moved and tags it from the texts kept of its unchanged fields, and answers 304 with no body.",
      'Rows drawn: the page first asks for a first window of 200 rows in format 2 (no plan) and draws it; the whole document (format 2) follows at once, and "whole drawn" is its mark (status-page-whole).',
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
