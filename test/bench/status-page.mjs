// The status page (docs/status-page.md) at N resources: navigation to its first full render in Chromium, and an unchanged poll.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { deleteKeys } from '../../dist/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../dist/store/redis.js';
import { benchMain, benchPrefix, CLI, figure, freePort, median, ms, REDIS_URL, removeDir, stopChild, tempDir } from './lib/common.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';
import { benchEnv, writeManifests } from './lib/fixtures.mjs';

const CHROMIUM = process.env.CONVERGE_CHROMIUM ?? '/usr/bin/chromium';

/** `converge run DIR` as a child process; resolves once /status has `n` rows. */
async function startDaemon(dir, apiUrl, prefix, n) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [CLI, 'run', dir, '--api-url', apiUrl, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--http-host', '127.0.0.1', '--http-port', String(port), '--resync', '1h', '--log-level', 'warn'];
  const child = spawn(process.execPath, args, { env: { ...benchEnv(), NO_COLOR: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`daemon exited: ${err.slice(-800)}`);
    if (Date.now() > deadline) throw new Error(`/status did not reach ${n} rows in 120 s`);
    const doc = await fetch(`${url}/status`).then((r) => r.json(), () => undefined);
    if (doc?.resources?.length === n && doc.lastReconcile?.ok) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    url,
    stop: () => stopChild(child, exited),
  };
}

/** Milliseconds of each of `count` unchanged GETs of /status (If-None-Match: 304), measured by the client, in sequence. */
/** Bytes of the whole /status, and of a delta since the current token while nothing changed (docs/contracts.md §5). */
async function deltaBytes(url) {
  const whole = Buffer.byteLength(await fetch(`${url}/status`).then((r) => r.text()));
  const first = await fetch(`${url}/status?since=`).then((r) => r.json());
  const delta = Buffer.byteLength(await fetch(`${url}/status?since=${encodeURIComponent(first.view.sequence)}`).then((r) => r.text()));
  return { whole, delta };
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
  const profile = await mkdtemp(join(tmpdir(), 'converge-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const samples = [];
    const loaded = [];
    const filters = [];
    let rows = 0;
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
      rows = await page.evaluate("document.querySelectorAll('#rows tr.row').length");
      // One keystroke in the filter: the input event's handler and the layout it forces, then the box cleared.
      for (const word of ['app-1', '']) {
        filters.push(await page.evaluate(`(() => { const f = document.getElementById('filter'); const t = performance.now(); f.value = ${JSON.stringify(word)}; f.dispatchEvent(new Event('input')); void document.body.offsetHeight; return performance.now() - t; })()`));
      }
      await page.close();
    }
    return { samples, loaded, rows, filters };
  } finally {
    await context.close();
    await removeDir(profile);
  }
}

export async function run(options) {
  // CONVERGE_BENCH_STATUS_N=10000 measures the page at issue 41's size (several minutes on 2 cores).
  const n = Number(process.env.CONVERGE_BENCH_STATUS_N) || (options.quick ? 20 : 1000);
  const loads = options.quick ? 2 : 5;
  if (!existsSync(CHROMIUM)) {
    return { name: 'status-page', tables: [], figures: [figure('7', `status page N=${n}: first render`, 'skipped', '', '< 1000 ms', null, `no Chromium at ${CHROMIUM}`)] };
  }
  const dir = await tempDir('status-page');
  const prefix = benchPrefix('status-page');
  const emulator = await startEmulatorChild({ n, latencyMs: options.latencyMs, secrets: 'masked' });
  let daemon;
  try {
    await writeManifests(dir, n);
    daemon = await startDaemon(dir, emulator.url, prefix, n);
    const polls = await unchangedPolls(daemon.url, options.quick ? 5 : 50);
    const page = await pageLoads(daemon.url, loads);
    const bytes = await deltaBytes(daemon.url);
    const keystroke = ms(median(page.filters));
    const render = ms(median(page.samples));
    const poll = ms(median(polls.samples));
    return {
      name: 'status-page',
      tables: [
        {
          title: `Status page at ${n} resources (converge run over the emulator, Chromium headless)`,
          columns: ['rows rendered', '/status bytes', 'delta bytes (no change)', '/status read ms (median)', 'first render ms (median)', 'first render ms (max)', 'filter keystroke ms (median)', 'unchanged poll ms (median)', '304 answers'],
          rows: [[page.rows, polls.bytes, bytes.delta, ms(median(page.loaded)), render, ms(Math.max(...page.samples)), keystroke, poll, `${polls.notModified}/${polls.samples.length}`]],
        },
      ],
      figures: [
        figure('7', `status page N=${n}: navigation -> first full render, median of ${loads}`, render, 'ms', '< 1000 ms', render < 1000),
        figure('7', `status page N=${n}: unchanged /status poll (304), median`, poll, 'ms', 'info', null),
        figure('41.2', `status page N=${n}: one filter keystroke (handler + layout), median of ${page.filters.length}`, keystroke, 'ms', '< 100 ms', keystroke < 100),
        figure('41.2', `status page N=${n}: /status?since=TOKEN with no change, bytes (whole body ${bytes.whole})`, bytes.delta, 'B', '< 5% of the whole body', n >= 1000 ? bytes.delta < bytes.whole / 20 : null),
      ],
      notes: [
        '/status read: from navigation start to the first /status fetched and parsed by the page. First render: from navigation start to the performance mark the page sets after its first /status is drawn (header, problems, every row, orphans).',
        `Load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(', ')} (on ${(await import('node:os')).cpus().length} cores): wall times grow with it.`,
        'An unchanged poll: GET /status with the If-None-Match of the last answer; the daemon serialises the document and hashes it, and answers 304 with no body.',
      ],
    };
  } finally {
    await daemon?.stop();
    await emulator.stop();
    await removeDir(dir);
    const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    await deleteKeys(redis, prefix);
    await closeRedis(redis);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
