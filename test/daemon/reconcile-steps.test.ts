// converge_reconcile_step_seconds: a full and a targeted reconcile of the daemon's outer loop (reconciler.ts over cycle.ts and targeted.ts, real files, the emulator on loopback, fakes of the stores) observe each step once, and the steps add up to the reconcile's duration.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LastGoodManifests } from '../../src/daemon/cycle/last-good.js';
import { RECONCILE_STEPS, type CycleContext } from '../../src/daemon/cycle/cycle-context.js';
import { Reconciler } from '../../src/daemon/reconcile/reconciler.js';
import { createMetrics, type DaemonMetrics } from '../../src/daemon/telemetry/metrics.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { ManifestCache } from '../../src/observe/manifests.js';
import { ServiceClient } from '../../src/service/client.js';
import { manifestDir, seedWith } from '../helpers/apply.js';
import { FakeEnqueuer, fakePorts } from '../helpers/daemon-ports.js';
import { deploymentYaml, externalDockerSpec } from '../helpers/manifests.js';
import { parsePrometheusText } from '../helpers/prometheus.js';

const NAMES = Array.from({ length: 60 }, (_, i) => `app-${String(i).padStart(2, '0')}`);
const yaml = (name: string, scale: number): string =>
  deploymentYaml(name, externalDockerSpec(`docker.io/acme/${name}:1`, scale));

/** Each step's count and sum, and the reconcile duration's, from the exposition. */
async function figures(metrics: DaemonMetrics) {
  const samples = parsePrometheusText(await metrics.render());
  const steps = new Map<string, { count: number; sum: number }>();
  for (const s of samples) {
    if (!s.name.startsWith('converge_reconcile_step_seconds_') || s.labels.step === undefined) continue;
    const entry = steps.get(s.labels.step) ?? { count: 0, sum: 0 };
    if (s.name.endsWith('_count')) entry.count = s.value;
    if (s.name.endsWith('_sum')) entry.sum = s.value;
    steps.set(s.labels.step, entry);
  }
  const reconcile = samples
    .filter((s) => s.name === 'converge_reconcile_duration_seconds_sum')
    .reduce((sum, s) => sum + s.value, 0);
  return { steps, stepSum: [...steps.values()].reduce((sum, e) => sum + e.sum, 0), reconcile };
}

describe('converge_reconcile_step_seconds', () => {
  let emulator: RunningEmulator;
  let client: ServiceClient;
  let tree: { dir: string; remove(): Promise<void> };

  beforeAll(async () => {
    // Live at max_scale 1; every manifest asks for 2, so the full reconcile decides 60 writes and enqueues them.
    emulator = await startEmulator({
      seed: seedWith(
        NAMES.map((name) => ({
          name,
          source: 'external_docker' as const,
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
        })),
      ),
      buildMs: 50,
    });
    client = new ServiceClient({ baseUrl: emulator.url });
    tree = await manifestDir(Object.fromEntries(NAMES.map((name) => [`${name}.yaml`, yaml(name, 2)])));
  });
  afterAll(async () => {
    await tree.remove();
    await client.close();
    await emulator.close();
  });

  it('a full, then a targeted reconcile: each step observed once per reconcile, their sum within 10% of the reconcile duration', async () => {
    const stores = fakePorts();
    const enqueuer = new FakeEnqueuer();
    const ctx: CycleContext = {
      dir: tree.dir,
      env: {},
      client,
      enqueuer,
      ...stores.ports,
      lastGood: new LastGoodManifests(),
      manifestCache: new ManifestCache(),
      settings: { allowLocalDiscovery: false, driftPolicy: 'heal' },
    };
    const lines: Array<Record<string, unknown>> = [];
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      }),
    );
    const metrics = createMetrics({ processMetrics: false });
    const reconciler = new Reconciler({ context: ctx, metrics, log, maxRetryMs: 60_000 });

    const full = await reconciler.request('startup');
    expect(full?.ok, full?.error ?? '').toBe(true);
    expect(enqueuer.added).toHaveLength(NAMES.length);
    // Tracing is off (no SDK in this process): the jobs carry no trace context.
    expect(enqueuer.added.every((data) => data.traceparent === undefined)).toBe(true);
    const first = await figures(metrics);
    expect([...first.steps.keys()].sort()).toEqual([...RECONCILE_STEPS].sort());
    for (const step of RECONCILE_STEPS) expect(first.steps.get(step)?.count, step).toBe(1);
    expect(first.reconcile).toBeGreaterThan(0);
    // Consecutive wall segments: never more than the reconcile, and all of it but the outer loop's few statements.
    expect(first.stepSum).toBeLessThanOrEqual(first.reconcile);
    expect(first.stepSum).toBeGreaterThanOrEqual(first.reconcile * 0.9);

    // One file changed: a targeted reconcile (src/daemon/cycle/targeted.ts) observes the same steps.
    await writeFile(join(tree.dir, 'app-07.yaml'), yaml('app-07', 3));
    const targeted = await reconciler.request('watch', undefined, { paths: ['app-07.yaml'], overflow: false });
    expect(targeted?.ok, targeted?.error ?? '').toBe(true);
    expect(lines.findLast((l) => l.msg === 'reconciled')?.targeted).toBe(1);
    const second = await figures(metrics);
    for (const step of RECONCILE_STEPS) expect(second.steps.get(step)?.count, step).toBe(2);
    const stepSum = second.stepSum - first.stepSum;
    const reconcile = second.reconcile - first.reconcile;
    expect(stepSum).toBeLessThanOrEqual(reconcile);
    expect(stepSum).toBeGreaterThanOrEqual(reconcile * 0.9);
  });
});
