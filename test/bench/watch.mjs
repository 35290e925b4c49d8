// Figure 5 of issue 7: a manifest renamed into the watched directory -> its PATCH at the emulator, through `converge run`.
import { spawn } from 'node:child_process';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServiceClient } from '../../dist/service/client.js';
import { deleteKeys } from '../../dist/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../dist/store/redis.js';
import { benchMain, benchPrefix, CLI, figure, freePort, median, percentile, REDIS_URL, removeDir, stopChild, tempDir } from './lib/common.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';
import { benchEnv, deploymentName, manifestPath, manifestText, writeManifests } from './lib/fixtures.mjs';

/** `converge run DIR` as a child process; resolves once its startup reconcile has been logged. */
async function startDaemon(dir, url, prefix, env) {
  const port = await freePort();
  const args = [CLI, 'run', dir, '--api-url', url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--http-host', '127.0.0.1', '--http-port', String(port), '--resync', '1h', '--log-level', 'info'];
  const child = spawn(process.execPath, args, { env: { ...env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  let partial = '';
  let err = '';
  const waiters = new Set();
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    partial += chunk;
    let nl;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const text = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let line;
      try {
        line = JSON.parse(text);
      } catch {
        line = { msg: text };
      }
      lines.push(line);
      for (const w of [...waiters]) {
        if (!w.match(line)) continue;
        waiters.delete(w);
        w.resolve(line);
      }
    }
  });
  child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const waitFor = (match, timeoutMs) =>
    new Promise((resolve, reject) => {
      const found = lines.find(match);
      if (found) return resolve(found);
      const w = { match, resolve };
      waiters.add(w);
      const timer = setTimeout(() => (waiters.delete(w), reject(new Error(`daemon: no matching log line in ${timeoutMs} ms; stderr: ${err.slice(-800)}`))), timeoutMs);
      exited.then(() => (waiters.delete(w), clearTimeout(timer), reject(new Error(`daemon exited: ${err.slice(-800)}`))));
    });
  await waitFor((l) => l.msg === 'reconciled' && l.trigger === 'startup', 60_000);
  return {
    lines,
    waitFor,
    stop: () => stopChild(child, exited),
  };
}

export async function run(options) {
  const latencyMs = options.latencyMs;
  const n = options.quick ? (options.watchN ?? 50) : 1000;
  const edits = options.quick ? 5 : 50;
  const env = benchEnv();
  const dir = await tempDir('watch');
  const prefix = benchPrefix('watch');
  const emulator = await startEmulatorChild({ n, latencyMs });
  const client = new ServiceClient({ baseUrl: emulator.url });
  let daemon;
  try {
    await writeManifests(dir, n);
    const ids = new Map((await client.listDeployments()).map((d) => [d.name, d.id]));
    daemon = await startDaemon(dir, emulator.url, prefix, env);
    const patches = [];
    let notify;
    const unsubscribe = await emulator.onRequest((r) => {
      patches.push(r);
      notify?.();
    }, 'PATCH');
    const samples = [];
    for (let e = 0; e < edits; e++) {
      const i = Math.floor((e * n) / edits);
      const id = ids.get(deploymentName(i));
      const target = join(dir, manifestPath(i));
      // An editor's atomic save: write a hidden temporary file beside the manifest, then rename it over the manifest.
      const temp = join(dir, manifestPath(i).replace(/[^/]+$/, `.${deploymentName(i)}.tmp`));
      await writeFile(temp, manifestText(i, 10 + e));
      const renamedAt = Date.now();
      await rename(temp, target);
      const deadline = renamedAt + 10_000;
      let patch;
      while (!(patch = patches.find((p) => p.id === id && p.at >= renamedAt))) {
        if (Date.now() > deadline) throw new Error(`no PATCH of ${deploymentName(i)} within 10 s of its rename`);
        await new Promise((resolve) => {
          notify = resolve;
          setTimeout(resolve, 50);
        });
      }
      samples.push(patch.at - renamedAt);
      // Let the burst's job finish before the next edit, so each edit is its own burst.
      await new Promise((resolve) => setTimeout(resolve, 150 + latencyMs));
    }
    await unsubscribe();
    const reconciles = daemon.lines.filter((l) => l.msg === 'reconciled' && l.trigger === 'watch');
    const p50 = median(samples);
    const p95 = percentile(samples, 95);
    return {
      name: 'watch',
      tables: [
        {
          title: `Watch latency (figure 5): ${edits} edits, each renamed into a directory of ${n} manifests -> PATCH at the emulator; converge run, debounce 300ms (default), latency ${latencyMs} ms`,
          columns: ['edits', 'min ms', 'median ms', 'p95 ms', 'max ms', 'reconcile ms (median)'],
          rows: [[edits, Math.min(...samples), p50, p95, Math.max(...samples), median(reconciles.map((l) => l.ms ?? 0))]],
        },
      ],
      figures: [
        figure('5', `watch N=${n}: rename -> PATCH, median of ${edits} edits`, p50, 'ms', '< 1000 ms', p50 < 1000),
        figure('5', `watch N=${n}: rename -> PATCH, p95 of ${edits} edits`, p95, 'ms', '< 1000 ms', p95 < 1000),
      ],
      notes: [
        'The daemon is its own process (node dist/cli/main.js run); the PATCH time is when the emulator (another process) received it; both read the same system clock.',
        'Each edit is a write to a hidden temporary file and a rename over the manifest (an atomic save); the next edit starts after the PATCH.',
        'reconcile ms: the whole-directory reconcile the daemon logs for each watch burst (load and validate every manifest, list, plan, enqueue).',
      ],
      samples,
    };
  } finally {
    await daemon?.stop();
    await client.close();
    await emulator.stop();
    const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    await deleteKeys(redis, prefix);
    await closeRedis(redis);
    await removeDir(dir);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
