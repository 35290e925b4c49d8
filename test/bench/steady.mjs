// Figure 4 of issue 7: resync cycles over N unchanged deployments, through the daemon's reconcile path: zero writes.
import { ServiceClient } from '../../dist/service/client.js';
import { reconcileDirectory } from '../../dist/daemon/cycle/cycle.js';
import { ResourceTracker } from '../../dist/daemon/status/resource-tracker.js';
import { LastGoodManifests } from '../../dist/daemon/cycle/last-good.js';
import { openJobs } from '../../dist/jobs/open-jobs.js';
import { ManifestCache } from '../../dist/observe/manifests.js';
import { dropBenchPrefix } from './lib/redis-prefix.mjs';
import { benchMain, benchPrefix, figure, median, ms, REDIS_URL, removeDir, tempDir } from './lib/common.mjs';
import { startEmulatorChild } from './lib/emulator-child.mjs';
import { benchEnv, writeManifests } from './lib/fixtures.mjs';

export async function run(options) {
  const latencyMs = options.latencyMs;
  const n = options.quick ? (options.steadyN ?? 100) : 1000;
  const cycles = options.quick ? 3 : 10;
  const env = benchEnv();
  const dir = await tempDir('steady');
  const prefix = benchPrefix('steady');
  // Secrets masked, as the service's default: the first sync writes each secret once (no applied state yet);
  // from then on the applied-state hashes show them unchanged.
  const emulator = await startEmulatorChild({ n, latencyMs, secrets: 'masked' });
  const client = new ServiceClient({ baseUrl: emulator.url });
  const jobs = await openJobs({
    redisUrl: REDIS_URL,
    redisPrefix: prefix,
    concurrency: 20,
    globalRate: 0,
    attempts: 3,
    backoff: 1000,
  });
  let worker;
  try {
    await writeManifests(dir, n);
    worker = await jobs.startRunner({ client, env });
    let completed = 0;
    let expected = Infinity;
    let wake;
    worker.onJob((event) => {
      if (event.type !== 'completed') return;
      completed++;
      if (completed >= expected) wake?.();
    });
    const tracker = new ResourceTracker();
    const context = {
      dir,
      env,
      client,
      enqueuer: jobs.enqueuer,
      applied: jobs.applied,
      memory: jobs.desired,
      lastGood: new LastGoodManifests(),
      // As the daemon keeps one: a cycle over unchanged files parses none of them again.
      manifestCache: new ManifestCache(),
      settings: { allowLocalDiscovery: false, driftPolicy: 'heal' },
      // As the daemon keeps one: a revision read once is not read again at the next cycle (its poller follows it).
      rollouts: tracker,
    };

    // First sync: every secret is written once; wait for those jobs.
    await emulator.reset();
    let started = performance.now();
    const first = await reconcileDirectory(context);
    tracker.update(first);
    expected = first.enqueued;
    if (completed < expected) await new Promise((resolve) => (wake = resolve));
    const firstMs = performance.now() - started;
    const firstStats = await emulator.stats();

    const rows = [];
    for (let cycle = 1; cycle <= cycles; cycle++) {
      await emulator.reset();
      started = performance.now();
      const outcome = await reconcileDirectory(context);
      const wallMs = performance.now() - started;
      tracker.update(outcome);
      const stats = await emulator.stats();
      rows.push({
        cycle,
        wallMs,
        requests: stats.total,
        list: stats.list,
        writes: stats.writes,
        enqueued: outcome.enqueued,
        noop: outcome.plan.summary.noop,
      });
    }
    const totalWrites = rows.reduce((a, r) => a + r.writes, 0);
    const totalEnqueued = rows.reduce((a, r) => a + r.enqueued, 0);
    const perCycle = rows.reduce((a, r) => a + r.requests, 0) / rows.length;
    const floor = Math.ceil(n / 100) + 1;
    return {
      name: 'steady',
      tables: [
        {
          title: `Steady state (figure 4): ${cycles} resync cycles over ${n} unchanged deployments (daemon reconcileDirectory), latency ${latencyMs} ms`,
          columns: ['cycle', 'wall ms', 'requests', 'list GETs', 'writes', 'jobs enqueued', 'noop'],
          rows: [
            [
              'first sync',
              ms(firstMs),
              firstStats.total,
              firstStats.list,
              firstStats.writes,
              first.enqueued,
              first.plan.summary.noop,
            ],
            ...rows.map((r) => [String(r.cycle), ms(r.wallMs), r.requests, r.list, r.writes, r.enqueued, r.noop]),
          ],
        },
      ],
      figures: [
        figure(
          '4',
          `steady N=${n}: writes over ${cycles} resync cycles`,
          totalWrites,
          'writes',
          '0',
          totalWrites === 0 && totalEnqueued === 0,
          `${totalEnqueued} jobs enqueued`,
        ),
        figure(
          '4',
          `steady N=${n}: requests per resync cycle`,
          ms(perCycle),
          'req',
          `reported (floor ${floor} + <= 3 read ahead)`,
          null,
        ),
        figure(
          '4',
          `steady N=${n}: wall time per resync cycle (median)`,
          ms(median(rows.map((r) => r.wallMs))),
          'ms',
          'reported',
          null,
        ),
      ],
      notes: [
        'Secrets are masked by the emulator (its default): the first sync writes each declared secret once and records its hash; every later cycle compares hashes only.',
        "A cycle is the daemon's inner reconcile (src/daemon/cycle/cycle.ts) with the daemon's manifest cache: read the manifests (unchanged bytes are not parsed again), list live state, read applied state, plan, enqueue changes.",
      ],
    };
  } finally {
    await worker?.close();
    await jobs.close();
    await dropBenchPrefix(prefix);
    await client.close();
    await emulator.stop();
    await removeDir(dir);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchMain(run);
