// Figure 5 of issue 7 and the first figure of issue 41: a manifest renamed into the watched directory -> its PATCH at the emulator, through `converge run`, at 1,000 and 10,000 deployments.
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServiceClient } from '../../dist/service/client.js';
import { dropBenchPrefix } from './lib/redis-prefix.mjs';
import { benchMain, benchPrefix, figure, median, percentile, removeDir, tempDir } from './lib/common.mjs';
import { startDaemonChild } from './lib/daemon-child.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';
import { benchEnv, deploymentName, manifestPath, manifestText, writeManifests } from './lib/fixtures.mjs';

/** `converge run DIR` as a child process (test/bench/lib/daemon-child.mjs); resolves once its startup reconcile has been logged. */
async function startDaemon(dir, apiUrl, prefix, env, startupMs) {
  const daemon = await startDaemonChild({ dir, apiUrl, prefix, env, args: ['--resync', '60s'] });
  try {
    await daemon.waitFor((l) => l.msg === 'reconciled' && l.trigger === 'startup', startupMs);
  } catch (error) {
    await daemon.stop();
    throw error;
  }
  return daemon;
}

/** One directory of `n` manifests under `converge run`: `edits` atomic saves, each timed from its rename to its PATCH. */
async function measure(n, edits, latencyMs) {
  const env = benchEnv();
  const dir = await tempDir('watch');
  const prefix = benchPrefix('watch');
  const emulator = await startEmulatorChild({ n, latencyMs });
  const client = new ServiceClient({ baseUrl: emulator.url });
  let daemon;
  try {
    await writeManifests(dir, n);
    const ids = new Map((await client.listDeployments()).map((d) => [d.name, d.id]));
    daemon = await startDaemon(dir, emulator.url, prefix, env, 60_000 + n * 30);
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
      const deadline = renamedAt + 20_000;
      let patch;
      while (!(patch = patches.find((p) => p.id === id && p.at >= renamedAt))) {
        if (Date.now() > deadline)
          throw new Error(
            `no PATCH of ${deploymentName(i)} within 20 s of its rename; the daemon's last lines: ${JSON.stringify(daemon.lines.slice(-6))}`,
          );
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
    return { n, samples, reconciles };
  } finally {
    await daemon?.stop();
    await client.close();
    await emulator.stop();
    await dropBenchPrefix(prefix);
    await removeDir(dir);
  }
}

export async function run(options) {
  const latencyMs = options.latencyMs;
  const sizes = options.quick ? [options.watchN ?? 50] : [1000, 10_000];
  const edits = 5;
  const runs = [];
  for (const n of sizes) runs.push(await measure(n, edits, latencyMs));
  return {
    name: 'watch',
    tables: [
      {
        title: `Watch latency (figure 5 of issue 7, figure 1 of issue 41): ${edits} edits, each renamed into a directory of N manifests -> PATCH at the emulator; converge run --resync 60s, debounce default, latency ${latencyMs} ms`,
        columns: [
          'N',
          'edits',
          'min ms',
          'median ms',
          'p95 ms',
          'max ms',
          'watch reconciles',
          'of them targeted',
          'reconcile ms (median)',
        ],
        rows: runs.map((r) => [
          r.n,
          edits,
          Math.min(...r.samples),
          median(r.samples),
          percentile(r.samples, 95),
          Math.max(...r.samples),
          r.reconciles.length,
          r.reconciles.filter((l) => l.targeted !== undefined).length,
          median(r.reconciles.map((l) => l.ms ?? 0)),
        ]),
      },
    ],
    figures: runs.map((r) =>
      figure(
        '41.1',
        `watch N=${r.n}: edit of one file -> its PATCH, median of ${edits} edits`,
        median(r.samples),
        'ms',
        '< 500 ms',
        median(r.samples) < 500,
        `${r.reconciles.filter((l) => l.targeted !== undefined).length} of ${r.reconciles.length} watch reconciles targeted`,
        { key: 'edit-patch', n: r.n },
      ),
    ),
    notes: [
      'The daemon is its own process (node dist/cli/main.js run); the PATCH time is when the emulator (another process) received it; both read the same system clock.',
      'Each edit is a write to a hidden temporary file and a rename over the manifest (an atomic save); the next edit starts after the PATCH.',
      "reconcile ms: the reconcile the daemon logs for each watch burst; a targeted one (docs/daemon.md) reads and decides the changed file's resources only.",
    ],
    samples: runs.flatMap((r) => r.samples),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
