// Rollout waves through `converge apply` (issue 49): 1 canary in wave 0, 3 in wave 1, 6 in wave 2; every PATCH of a
// wave after the revisions of the wave before are DEPLOYED; a failed build in wave 1 sends nothing to wave 2 and holds
// it (WaveHeld in --output json); a fixing commit rolls out from wave 0 again; wave_max_in_flight bounds a wave;
// without --wait only the first wave is written (exit 3).
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** The ten deployments and their waves: one canary, three, six. */
const WAVES: Record<string, number> = {
  'wv-canary': 0,
  ...Object.fromEntries(['a', 'b', 'c'].map((x) => [`wv-one-${x}`, 1])),
  ...Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f'].map((x) => [`wv-two-${x}`, 2])),
};
const NAMES = Object.keys(WAVES);

/** A name pattern the emulator's --build-fail reads, switched off by the test (the fix). */
class Switch extends RegExp {
  on = false;
  override test(name: string): boolean {
    return this.on && super.test(name);
  }
}

async function setup(
  label: string,
  buildMs = 600,
): Promise<{ e: RunningEmulator; fail: Switch; dir: string; common: string[] }> {
  const fail = new Switch('^wv-one-b$');
  const e = await startEmulator({ buildMs, buildFail: fail });
  cleanups.push(() => e.close());
  const dir = await tempDir(label);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const prefix = testPrefix(label);
  cleanups.push(() => dropPrefix(prefix));
  return {
    e,
    fail,
    dir,
    common: [
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--health-poll',
      '150ms',
      '--auto-approve',
    ],
  };
}

/** One commit: every deployment at image tag `tag`, each in its wave. */
async function commit(dir: string, tag: number): Promise<void> {
  await writeFiles(
    dir,
    Object.fromEntries(
      NAMES.map((name) => [
        `${name}.yaml`,
        dockerDeploymentYaml(name, {
          maxScale: 2,
          image: `docker.io/acme/${name}:${tag}`,
          annotations: WAVES[name] ? { 'converge/wave': String(WAVES[name]) } : {},
        }),
      ]),
    ),
  );
}

interface Write {
  name: string;
  wave: number;
  at: number;
  method: string;
}

/** The landed writes (POST, PATCH) of the ten since request `from`, in the order they arrived, with their wave. */
function writes(e: RunningEmulator, from: number): Write[] {
  const byId = new Map(e.store.allDeployments().map((d) => [d.id, d.name]));
  return e.requestLog.slice(from).flatMap((r) => {
    if (
      (r.method !== 'PATCH' && r.method !== 'POST') ||
      r.status < 200 ||
      r.status >= 300 ||
      !r.route.startsWith('/v2/deployments')
    )
      return [];
    const name = r.deploymentId ? byId.get(r.deploymentId) : undefined;
    return name && name in WAVES ? [{ name, wave: WAVES[name]!, at: r.at, method: r.method }] : [];
  });
}

/** When the revision each write started became DEPLOYED (its end), by name: the latest revision created at or after `since`. */
function deployedAt(
  e: RunningEmulator,
  name: string,
  since: number,
): { endsAt: number; outcome: string; createdAt: number } | undefined {
  const d = e.store.allDeployments().find((x) => x.name === name)!;
  const r = [...d.revisions].filter((x) => x.created_at >= since).sort((a, b) => b.created_at - a.created_at)[0];
  return r ? { endsAt: r.ends_at, outcome: r.outcome, createdAt: r.created_at } : undefined;
}

/** Every write of wave N+1 arrived after every revision its wave N wrote had ended DEPLOYED. */
function expectWaveOrder(e: RunningEmulator, sent: Write[], since: number): void {
  for (const wave of [1, 2]) {
    const before = sent.filter((w) => w.wave === wave - 1).map((w) => deployedAt(e, w.name, since)!);
    expect(before.length).toBeGreaterThan(0);
    for (const r of before) expect(r.outcome).toBe('DEPLOYED');
    const healthy = Math.max(...before.map((r) => r.endsAt));
    const first = Math.min(...sent.filter((w) => w.wave === wave).map((w) => w.at));
    expect(first, `the first write of wave ${wave} came before wave ${wave - 1} was DEPLOYED`).toBeGreaterThanOrEqual(
      healthy,
    );
  }
}

describe('apply in waves', () => {
  it('apply --wait: creates and a commit changing all ten go wave by wave; a failed build in wave 1 holds wave 2; a fix rolls out from wave 0', async () => {
    const { e, fail, dir, common } = await setup('waves-apply');
    await commit(dir, 1);
    const created = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', ...common], {}, 90_000);
    expect(created.code, created.stdout + created.stderr).toBe(0);
    const creates = writes(e, 0);
    expect(creates.filter((w) => w.method === 'POST')).toHaveLength(10);
    expectWaveOrder(e, creates, 0);

    // One commit changing all ten: PATCHes by wave, each after the wave before is DEPLOYED.
    let from = e.requestLog.length;
    let since = Date.now();
    await commit(dir, 2);
    const plan = await runConverge(['plan', dir, ...common.slice(0, 6)]);
    expect(plan.stdout, plan.stderr).toContain('Wave 1: 3 to update, after wave 0 is healthy:');
    const rolled = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', ...common], {}, 90_000);
    expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0);
    const patches = writes(e, from);
    expect(patches.map((w) => w.method)).toEqual(Array(10).fill('PATCH'));
    expect(patches.map((w) => w.wave)).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    expectWaveOrder(e, patches, since);

    // A failed build in wave 1: no PATCH reaches wave 2, whose six are held with the wave and the failed resource named.
    fail.on = true;
    from = e.requestLog.length;
    await commit(dir, 3);
    const failed = await runConverge(
      ['apply', dir, '--wait', '--wait-timeout', '60s', '--output', 'json', ...common],
      {},
      90_000,
    );
    expect(failed.code, failed.stderr).toBe(1);
    const sent = writes(e, from);
    expect(sent.filter((w) => w.wave === 2)).toEqual([]);
    expect(sent.map((w) => w.name).sort()).toEqual(['wv-canary', 'wv-one-a', 'wv-one-b', 'wv-one-c']);
    const doc = JSON.parse(failed.stdout) as {
      converged: boolean;
      results: Array<{ key: string; status: string; message?: string }>;
      resources: Array<{ key: string; sync: { reason: string; message: string } }>;
    };
    expect(doc.converged).toBe(false);
    const held = doc.resources.filter((r) => r.sync.reason === 'WaveHeld');
    expect(held.map((r) => r.key).sort()).toEqual(NAMES.filter((n) => WAVES[n] === 2).map((n) => `Deployment/${n}`));
    for (const r of held)
      expect(r.sync.message).toMatch(
        /^wave 2 waits behind wave 1, where Deployment\/wv-one-b failed \(revision \S+ ended BUILD_FAILED[^)]*\); fix its manifest and commit/,
      );
    expect(doc.results.filter((r) => r.status === 'held')).toHaveLength(6);

    // The fix: a new commit rolls out from wave 0 again, wave by wave, and converges.
    fail.on = false;
    from = e.requestLog.length;
    since = Date.now();
    await commit(dir, 4);
    const fixed = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', ...common], {}, 90_000);
    expect(fixed.code, fixed.stdout + fixed.stderr).toBe(0);
    const again = writes(e, from);
    expect(again.map((w) => w.wave)).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    expectWaveOrder(e, again, since);
  }, 240_000);

  it('wave_max_in_flight 2: no more than 2 writes of one wave building at once; without --wait only wave 0 is written (exit 3)', async () => {
    const { e, dir, common } = await setup('waves-limit');
    await commit(dir, 1);
    const first = await runConverge(['apply', dir, ...common], {}, 60_000);
    expect(first.code, first.stdout + first.stderr).toBe(3);
    expect(first.stdout).toContain('Applied wave 0 only: wave 1, wave 2 wait until it is healthy');
    expect(writes(e, 0).map((w) => w.name)).toEqual(['wv-canary']);

    const from = e.requestLog.length;
    const since = Date.now();
    const limited = await runConverge(
      ['apply', dir, '--wait', '--wait-timeout', '60s', '--wave-max-in-flight', '2', ...common],
      {},
      90_000,
    );
    expect(limited.code, limited.stdout + limited.stderr).toBe(0);
    const sent = writes(e, from);
    expect(sent.map((w) => w.wave)).toEqual([1, 1, 1, 2, 2, 2, 2, 2, 2]);
    for (const wave of [1, 2]) {
      const builds = sent.filter((w) => w.wave === wave).map((w) => deployedAt(e, w.name, since)!);
      for (const b of builds) {
        const building = builds.filter((o) => o.createdAt <= b.createdAt && o.endsAt > b.createdAt).length;
        expect(building, `wave ${wave}: writes building at once`).toBeLessThanOrEqual(2);
      }
    }
  }, 180_000);

  it('the daemon: creates and a commit go wave by wave; a failed build in wave 1 holds wave 2 (WaveHeld on /status, 0 PATCHes); a fix rolls out from wave 0', async () => {
    const { e, fail, dir, common } = await setup('waves-daemon');
    await commit(dir, 1);
    const daemon = await startDaemon(dir, [...common.filter((a) => a !== '--auto-approve'), '--resync', '1s']);
    await until(
      'all ten created and DEPLOYED',
      () =>
        NAMES.every((n) => deployedAt(e, n, 0)?.outcome === 'DEPLOYED' && deployedAt(e, n, 0)!.endsAt <= Date.now()),
      60_000,
      200,
    );
    expectWaveOrder(e, writes(e, 0), 0);

    let from = e.requestLog.length;
    let since = Date.now();
    await commit(dir, 2);
    await until(
      'all ten PATCHed once and DEPLOYED',
      () => writes(e, from).length === 10 && NAMES.every((n) => deployedAt(e, n, since)?.outcome === 'DEPLOYED'),
      60_000,
      200,
    );
    const patches = writes(e, from);
    expect(patches.map((w) => w.wave)).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    expectWaveOrder(e, patches, since);

    fail.on = true;
    from = e.requestLog.length;
    await commit(dir, 3);
    const wave2 = NAMES.filter((n) => WAVES[n] === 2).map((n) => `Deployment/${n}`);
    await until(
      'wave 2 held on /status',
      async () => {
        const rows = await statusRows(daemon);
        return wave2.every(
          (k) =>
            rows.get(k)?.sync?.reason === 'WaveHeld' &&
            rows.get(k)!.sync!.message!.includes('where Deployment/wv-one-b failed'),
        );
      },
      60_000,
      200,
    );
    // Several resyncs later, still nothing sent to wave 2, and nothing sent twice.
    const reconciles = async (): Promise<number> => ((await daemon.status()).reconciles as { total: number }).total;
    const at = await reconciles();
    await until('three more reconciles', async () => (await reconciles()) >= at + 3, 30_000, 200);
    const sent = writes(e, from);
    expect(sent.filter((w) => w.wave === 2)).toEqual([]);
    expect(sent.map((w) => w.name).sort()).toEqual(['wv-canary', 'wv-one-a', 'wv-one-b', 'wv-one-c']);
    // The history says the hold once (not once per reconcile): the wave, the failed resource and what to do.
    const history = await runConverge(['history', 'wv-two-a', '--output', 'json', ...common.slice(2, 6)]);
    expect(history.code, history.stderr).toBe(0);
    const events = (JSON.parse(history.stdout) as { events: Array<{ type: string; reason: string; message: string }> })
      .events;
    const holds = events.filter(
      (ev) => ev.reason === 'WaveHeld' && ev.message.includes('where Deployment/wv-one-b failed'),
    );
    expect(holds, JSON.stringify(events)).toHaveLength(1);
    expect(holds[0]!.message).toMatch(
      /^update: wave 2 waits behind wave 1, where Deployment\/wv-one-b failed \(.*"converge reconcile --retry-failed wv-one-b"/,
    );

    fail.on = false;
    from = e.requestLog.length;
    since = Date.now();
    await commit(dir, 4);
    await until(
      'the fix rolled out to all ten',
      () => writes(e, from).length === 10 && NAMES.every((n) => deployedAt(e, n, since)?.outcome === 'DEPLOYED'),
      60_000,
      200,
    );
    const again = writes(e, from);
    expect(again.map((w) => w.wave)).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    expectWaveOrder(e, again, since);
  }, 240_000);
});

describe('the daemon: wave_max_in_flight and deletes by wave', () => {
  it('wave_max_in_flight 2: no more than 2 creates of one wave building at once, the next going as one turns healthy (no resync); pruned, the deletes of wave 2 go before those of wave 1', async () => {
    const { e, dir, common } = await setup('waves-daemon-limit');
    await commit(dir, 1);
    // No resync in the test's time: each next part and wave goes when the one before turns healthy (or its jobs end).
    const args = [
      ...common.filter((a) => a !== '--auto-approve'),
      '--resync',
      '1h',
      '--wave-max-in-flight',
      '2',
      '--prune',
      '--prune-grace',
      '200ms',
      '--max-deletes',
      '9',
    ];
    await startDaemon(dir, args);
    await until(
      'all ten created and DEPLOYED',
      () =>
        NAMES.every((n) => deployedAt(e, n, 0)?.outcome === 'DEPLOYED' && deployedAt(e, n, 0)!.endsAt <= Date.now()),
      60_000,
      200,
    );
    const creates = writes(e, 0);
    expect(creates.map((w) => w.method)).toEqual(Array(10).fill('POST'));
    expectWaveOrder(e, creates, 0);
    for (const wave of [1, 2]) {
      const builds = creates.filter((w) => w.wave === wave).map((w) => deployedAt(e, w.name, 0)!);
      for (const b of builds) {
        const building = builds.filter((o) => o.createdAt <= b.createdAt && o.endsAt > b.createdAt).length;
        expect(building, `wave ${wave}: creates building at once`).toBeLessThanOrEqual(2);
      }
    }

    // Waves 1 and 2 removed from the manifests: prune deletes the six of wave 2, and only then the three of wave 1.
    const byId = new Map(e.store.allDeployments().map((d) => [d.id, d.name]));
    const from = e.requestLog.length;
    await Promise.all(NAMES.filter((n) => WAVES[n]! > 0).map((n) => rm(`${dir}/${n}.yaml`)));
    const deletes = (): Array<{ name: string; at: number }> =>
      e.requestLog.slice(from).flatMap((r) => {
        const name =
          r.method === 'DELETE' && r.status >= 200 && r.status < 300 && r.deploymentId
            ? byId.get(r.deploymentId)
            : undefined;
        return name ? [{ name, at: r.at }] : [];
      });
    await until('the nine deleted', () => deletes().length === 9, 60_000, 200);
    const sent = deletes();
    expect(sent.map((d) => d.name).sort()).toEqual(NAMES.filter((n) => WAVES[n]! > 0).sort());
    const lastOfTwo = Math.max(...sent.filter((d) => WAVES[d.name] === 2).map((d) => d.at));
    const firstOfOne = Math.min(...sent.filter((d) => WAVES[d.name] === 1).map((d) => d.at));
    expect(firstOfOne, 'a delete of wave 1 came before the deletes of wave 2 were done').toBeGreaterThan(lastOfTwo);
  }, 120_000);
});

describe('the daemon: failover in the middle of a rollout', () => {
  it('kill -9 of the leader while wave 1 builds: the standby writes wave 2 only after wave 1 is DEPLOYED, and no resource gets its write twice', async () => {
    const { e, dir, common } = await setup('waves-failover', 2500);
    await commit(dir, 1);
    const args = (id: string): string[] => [
      ...common.filter((a) => a !== '--auto-approve'),
      '--replica-id',
      id,
      '--resync',
      '1h',
      '--lease',
      '2s',
      '--job-lock',
      '2s',
      '--debounce',
      '50ms',
    ];
    const leading = async (d: DaemonHandle): Promise<boolean> =>
      ((await d.status()) as { lease?: { leading?: boolean } | null }).lease?.leading === true;
    const first = await startDaemon(dir, args('wv-a'));
    await until('wv-a to lead', () => leading(first), 20_000, 50);
    const second = await startDaemon(dir, args('wv-b'));
    await until(
      'all ten created and DEPLOYED',
      () =>
        NAMES.every((n) => deployedAt(e, n, 0)?.outcome === 'DEPLOYED' && deployedAt(e, n, 0)!.endsAt <= Date.now()),
      90_000,
      100,
    );

    // One commit changing all ten; the leader dies once wave 1's three PATCHes landed, their revisions still building.
    const from = e.requestLog.length;
    const since = Date.now();
    await commit(dir, 2);
    await until('wave 1 written', () => writes(e, from).filter((w) => w.wave === 1).length === 3, 60_000, 20);
    await first.kill('SIGKILL');
    const building = NAMES.filter((n) => WAVES[n] === 1).map((n) => deployedAt(e, n, since)!);
    expect(
      building.every((r) => r.endsAt > Date.now()),
      'wave 1 still building at the kill',
    ).toBe(true);
    await until('wv-b to take over', () => leading(second), 20_000, 50);
    await until(
      'all ten PATCHed and DEPLOYED',
      () =>
        NAMES.every(
          (n) => deployedAt(e, n, since)?.outcome === 'DEPLOYED' && deployedAt(e, n, since)!.endsAt <= Date.now(),
        ),
      90_000,
      100,
    );
    const sent = writes(e, from);
    expect(sent.map((w) => w.name).sort(), 'each resource written once').toEqual([...NAMES].sort());
    expect(sent.map((w) => w.wave)).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 2, 2]);
    expectWaveOrder(e, sent, since);
  }, 180_000);
});

async function statusRows(
  daemon: DaemonHandle,
): Promise<Map<string, { sync?: { reason?: string; message?: string } }>> {
  return new Map((await daemon.status()).resources.map((r) => [r.key, r]));
}
