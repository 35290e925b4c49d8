// Resync knows what is in flight: a daemon started over N changed deployments, with resync cycles running while the
// jobs of the first reconcile still wait or run, runs N jobs (one write each), not 2N.
// N is 300 here (about 15 s on a shared CI core); CONVERGE_RESYNC_TEST_N=1000 runs the figure.
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  liveMaxScale,
  REDIS_URL,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';

const N = Number(process.env.CONVERGE_RESYNC_TEST_N ?? 300);
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

function jobsRun(metrics: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of parsePrometheusText(metrics)) if (s.name === 'converge_jobs_total') out[s.labels.outcome!] = s.value;
  return out;
}

describe('resync and jobs in flight', () => {
  it(`a start over ${N} changed deployments, with resync cycles during the jobs, runs ${N} jobs and sends ${N} PATCHes`, async () => {
    const names = Array.from({ length: N }, (_, i) => `inflight-${String(i).padStart(4, '0')}`);
    const e: RunningEmulator = await startEmulator({
      buildMs: 0,
      latencyMs: 5,
      seed: {
        deployments: names.map((name) => ({
          name,
          source: 'external_docker' as const,
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
        })),
      },
    });
    cleanups.push(() => e.close());
    const dir = await tempDir('inflight');
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFiles(
      dir,
      Object.fromEntries(names.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale: 2 })])),
    );
    const prefix = testPrefix('inflight');
    cleanups.push(() => dropPrefix(prefix));

    const started = Date.now();
    const daemon = await startDaemon(dir, [
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--concurrency',
      '4',
      '--resync',
      '1s',
      '--log-level',
      'info',
    ]);
    await until(
      'every deployment at max_scale 2',
      () => e.store.allDeployments().every((d) => liveMaxScale(d) === 2),
      120_000,
      200,
    );
    // The seeded deployments are not converge's: each first write takes one over (adopted).
    await until(
      'every job to be counted',
      async () => (jobsRun(await daemon.metrics()).adopted ?? 0) >= N,
      30_000,
      200,
    );
    // Resync cycles went on while the jobs ran, and go on after: none of them adds work.
    await until('two more resync cycles', async () => (await daemon.status()).reconciles!.total >= 4, 20_000, 200);
    const resyncs = daemon.lines.filter((l) => l.msg === 'reconciled' && l.trigger === 'resync');
    const ran = jobsRun(await daemon.metrics());
    const patches = e.requestLog.filter((r) => r.method === 'PATCH').length;
    console.log(
      `resync in flight: ${N} changed deployments, ${Date.now() - started} ms, jobs ${JSON.stringify(ran)}, PATCHes ${patches}, resync reconciles ${resyncs.length} (enqueued ${resyncs.map((l) => l.enqueued).join(',')})`,
    );
    expect(resyncs.length).toBeGreaterThanOrEqual(1);
    expect(ran).toEqual({ created: 0, updated: 0, unchanged: 0, adopted: N, retried: 0, failed: 0 });
    expect(patches).toBe(N);
  }, 240_000);
});
