// converge run as a child process against the emulator and a real Redis: watch, resync, drift, replicas, SIGTERM.
// Each test starts its own emulator, directory, Redis prefix and daemons, and stops them when it ends: any test runs
// alone (`-t`) or in any order, and the tests run concurrently (they mostly wait on daemons).
import { execFile } from 'node:child_process';
import { mkdtemp, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import {
  atomicSave,
  killAll,
  MAIN,
  REDIS_URL,
  ROOT,
  startDaemonChild,
  until,
  writeManifest,
  type DaemonChild,
  type LogLine,
} from './daemon-helpers.js';
import { prefixOf } from './scoped.js';
import { internalDockerYaml } from '../helpers/manifests.js';

const run = promisify(execFile);
const BULK = 200;
const PLANTED_KEY = 'planted-api-key-7f3c9a1e5b';
const PLANTED_SECRET = 'planted-secret-value-2d8e4f6a0c';
/** Watch latencies observed (file written -> PATCH/POST at the emulator), printed at the end. */
const latencies: Record<string, number> = {};

/** A temporary directory of the test, removed when it ends. */
async function tempDir(t: TestContext, label: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `converge-daemon-${label}-`));
  t.onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** An emulator of the test, closed when it ends. */
async function emulator(t: TestContext, options: Parameters<typeof startEmulator>[0] = {}): Promise<RunningEmulator> {
  const e = await startEmulator({ buildMs: 0, ...options });
  t.onTestFinished(() => e.close());
  return e;
}

/** A Redis prefix of the test, emptied when it ends. */

/** `converge run DIR` for the test, killed (SIGKILL) when the test ends if it still runs. */
async function daemon(t: TestContext, dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<DaemonChild> {
  const d = await startDaemonChild(dir, args, env);
  t.onTestFinished(async () => {
    if (d.child.exitCode !== null || d.child.signalCode !== null) return;
    d.signal('SIGKILL');
    await d.exited;
  });
  return d;
}

function maxScale(e: RunningEmulator, name: string): unknown {
  const d = e.store.allDeployments().find((x) => x.name === name);
  return (d?.source_config.resource_spec as { max_scale?: number } | undefined)?.max_scale;
}

async function patchBehindTheBack(e: RunningEmulator, name: string, max: number, apiKey?: string): Promise<void> {
  const d = e.store.allDeployments().find((x) => x.name === name)!;
  const res = await fetch(`${e.url}/v2/deployments/${d.id}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json', ...(apiKey ? { 'x-api-key': apiKey } : {}) },
    body: JSON.stringify({
      source_config: { resource_spec: { ...(d.source_config.resource_spec as object), max_scale: max } },
    }),
  });
  expect(res.status).toBe(200);
}

/** ms from `t0` to the first write request for deployment `name` at or after t0. */
function writeLatency(e: RunningEmulator, name: string, t0: number): number | undefined {
  const id = e.store.allDeployments().find((x) => x.name === name)?.id;
  const hit = e.requestLog.find(
    (r) =>
      r.at >= t0 &&
      r.method !== 'GET' &&
      (r.deploymentId === id || (r.body as { name?: string } | undefined)?.name === name),
  );
  return hit ? hit.at - t0 : undefined;
}

/** Every value under a Redis prefix, whatever the key's type, as one string. */
async function redisDump(keyPrefix: string): Promise<string> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const parts: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(
        cursor,
        'MATCH',
        `${keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}*`,
        'COUNT',
        1000,
      );
      cursor = next;
      for (const key of keys) {
        const type = await redis.type(key);
        parts.push(key);
        if (type === 'string') parts.push(String(await redis.get(key)));
        else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)));
        else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(key, 0, -1)));
        else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(key)));
        else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(key, 0, -1)));
        else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  expect(parts.length).toBeGreaterThan(10);
  return parts.join('\n');
}

beforeAll(async () => {
  // The e2e tier's global setup (test/global-build.ts) built src/ for child processes; without it, build dist/.
  if (!process.env.CONVERGE_TEST_DIST)
    await run('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT }).catch(() => undefined);
  await run(process.execPath, [MAIN, '--version']);
}, 120_000);

afterAll(async () => {
  await killAll();
  if (Object.keys(latencies).length)
    console.log(`watch latency (file written -> write at the emulator): ${JSON.stringify(latencies)}`);
});

interface Watching {
  e: RunningEmulator;
  /** The manifest directory: app/a.yaml (web-a, max_scale 1) and app/b.yaml (web-b, max_scale 1), and what was asked. */
  dir: string;
  d: DaemonChild;
  prefix: string;
  /** Deployments declared at the start. */
  declared: number;
}

/**
 * A daemon of the test watching its own directory under --drift report, against an emulator that answers 401 unless
 * the API key is sent; resolves once every manifest is created and reported synced. `bulk` adds bulk/d<i>.yaml
 * (bulk-<i>), `configMap` a Kubernetes ConfigMap mount (cm/cm-app.yaml -> ..data/cm-app.yaml), `secret` app/secret.yaml
 * (web-secret, its secret read from the environment).
 */
async function watching(
  t: TestContext,
  label: string,
  options: { bulk?: number; configMap?: boolean; secret?: boolean } = {},
): Promise<Watching> {
  const e = await emulator(t, { apiKey: PLANTED_KEY });
  const dir = await tempDir(t, label);
  await writeManifest(join(dir, 'app', 'a.yaml'), internalDockerYaml('web-a', 1));
  await writeManifest(join(dir, 'app', 'b.yaml'), internalDockerYaml('web-b', 1));
  const bulk = options.bulk ?? 0;
  await Promise.all(
    Array.from({ length: bulk }, (_, i) =>
      writeManifest(join(dir, 'bulk', `d${i}.yaml`), internalDockerYaml(`bulk-${i}`, 1)),
    ),
  );
  if (options.configMap) {
    await writeManifest(
      join(dir, 'cm', '..2026_01_01_00_00_00.000000001', 'cm-app.yaml'),
      internalDockerYaml('cm-app', 1),
    );
    await symlink('..2026_01_01_00_00_00.000000001', join(dir, 'cm', '..data'));
    await symlink('..data/cm-app.yaml', join(dir, 'cm', 'cm-app.yaml'));
  }
  if (options.secret) {
    await writeManifest(
      join(dir, 'app', 'secret.yaml'),
      `${internalDockerYaml('web-secret', 1)}  secrets:\n    - name: OPENAI_API_KEY\n      valueFrom: { env: PLANTED_ENV }\n`,
    );
  }
  const declared = 2 + bulk + (options.configMap ? 1 : 0) + (options.secret ? 1 : 0);
  const p = prefixOf(t, label);
  const d = await daemon(
    t,
    dir,
    [
      '--api-url',
      e.url,
      '--redis-prefix',
      p,
      '--resync',
      '1h',
      '--drift',
      'report',
      '--job-lock',
      '2s',
      '--log-level',
      'debug',
    ],
    {
      CONVERGE_API_KEY: PLANTED_KEY,
      PLANTED_ENV: PLANTED_SECRET,
    },
  );
  await until('every manifest to be created', () => e.store.allDeployments().length === declared, 30_000);
  await until(
    'the daemon to report everything synced',
    async () => {
      const rows = (await d.status()).resources;
      return rows.length === declared && rows.every((r) => r.state === 'synced');
    },
    15_000,
  );
  return { e, dir, d, prefix: p, declared };
}

/**
 * Changes web-b behind the daemon's back, then saves a.yaml and b.yaml (web-b's, unchanged): a watch reconcile that
 * finds the drift. A watch event decides the resources of the files it changed (docs/daemon.md, "A watch event
 * reconciles what changed"), so b.yaml is saved too; the drift of a file not saved is found by the resync.
 */
async function driftWebB(w: Watching, aMaxScale: number): Promise<void> {
  await patchBehindTheBack(w.e, 'web-b', 9, PLANTED_KEY);
  const edited = Date.now();
  await atomicSave(join(w.dir, 'app', 'b.yaml'), internalDockerYaml('web-b', 1));
  await atomicSave(join(w.dir, 'app', 'a.yaml'), internalDockerYaml('web-a', aMaxScale));
  await until(
    'a watch reconcile started after the hand edit',
    async () => (await w.d.status()).history.some((h) => h.trigger === 'watch' && Date.parse(h.startedAt) > edited),
    5_000,
  );
  await until(
    'web-b reported out of sync',
    async () => (await w.d.status()).resources.find((r) => r.key === 'Deployment/web-b')?.state === 'out_of_sync',
    5_000,
  );
}

describe.concurrent('converge run: watching a directory (--drift report)', { timeout: 90_000 }, () => {
  it('follows an edit, an added file, an atomic replace and a deletion within seconds', async (t) => {
    const w = await watching(t, 'edits');
    let t0 = Date.now();
    await writeFile(join(w.dir, 'app', 'a.yaml'), internalDockerYaml('web-a', 2));
    await until('web-a max_scale 2', () => maxScale(w.e, 'web-a') === 2, 5_000);
    latencies.edit = writeLatency(w.e, 'web-a', t0)!;

    t0 = Date.now();
    await writeManifest(join(w.dir, 'app', 'c.yaml'), internalDockerYaml('web-c', 1));
    await until('web-c to be created', () => maxScale(w.e, 'web-c') === 1, 5_000);
    latencies.add = writeLatency(w.e, 'web-c', t0)!;

    t0 = Date.now();
    await atomicSave(join(w.dir, 'app', 'b.yaml'), internalDockerYaml('web-b', 3));
    await until('web-b max_scale 3', () => maxScale(w.e, 'web-b') === 3, 5_000);
    latencies.atomicSave = writeLatency(w.e, 'web-b', t0)!;

    await unlink(join(w.dir, 'app', 'c.yaml'));
    await until(
      'web-c to be reported as an orphan',
      async () => (await w.d.status()).orphans.includes('Deployment/web-c'),
      5_000,
    );
    expect(maxScale(w.e, 'web-c')).toBe(1); // reported, never deleted
  });

  it(`plans a rewrite of ${BULK} files as ONE reconcile of the whole set, each deployment written once`, async (t) => {
    const w = await watching(t, 'bulk', { bulk: BULK });
    const before = await w.d.status();
    const from = w.e.requestLog.length;
    await Promise.all(
      Array.from({ length: BULK }, (_, i) =>
        writeFile(join(w.dir, 'bulk', `d${i}.yaml`), internalDockerYaml(`bulk-${i}`, 2)),
      ),
    );
    await until(
      'every bulk deployment at max_scale 2',
      () => Array.from({ length: BULK }, (_, i) => maxScale(w.e, `bulk-${i}`)).every((m) => m === 2),
      20_000,
    );
    await sleep(800);
    const after = await w.d.status();
    expect((after.reconciles.byTrigger.watch ?? 0) - (before.reconciles.byTrigger.watch ?? 0)).toBe(1);
    // The rewrite is one watch reconcile. Another trigger may run in the window on a loaded machine (a new leader term's
    // startup reconcile, a retry): it must find nothing left to enqueue, and the PATCH count below stays BULK.
    const since = after.history.filter((r) => r.id > before.reconciles.total);
    const burst = since.filter((r) => r.trigger === 'watch');
    expect(burst, JSON.stringify(since.map((r) => ({ trigger: r.trigger, enqueued: r.enqueued })))).toHaveLength(1);
    for (const other of since.filter((r) => r.trigger !== 'watch')) expect(other.enqueued, other.trigger).toBe(0);
    expect(burst[0]!.summary!.update).toBe(BULK);
    expect(burst[0]!.enqueued).toBe(BULK);
    const bulkIds = new Set(
      w.e.store
        .allDeployments()
        .filter((d) => d.name.startsWith('bulk-'))
        .map((d) => d.id),
    );
    const patches = w.e.requestLog.slice(from).filter((r) => r.method === 'PATCH' && bulkIds.has(r.deploymentId ?? ''));
    expect(patches).toHaveLength(BULK);
    expect(new Set(patches.map((p) => p.deploymentId)).size).toBe(BULK);
  }, 120_000);

  it('follows a ConfigMap update that swaps the ..data symlink', async (t) => {
    const w = await watching(t, 'configmap', { configMap: true });
    const next = join(w.dir, 'cm', '..2026_01_01_00_00_00.000000002');
    await writeManifest(join(next, 'cm-app.yaml'), internalDockerYaml('cm-app', 4));
    await writeManifest(join(next, 'cm-two.yaml'), internalDockerYaml('cm-two', 1));
    const t0 = Date.now();
    await symlink('..2026_01_01_00_00_00.000000002', join(w.dir, 'cm', '..data_tmp'));
    await rename(join(w.dir, 'cm', '..data_tmp'), join(w.dir, 'cm', '..data'));
    await symlink('..data/cm-two.yaml', join(w.dir, 'cm', 'cm-two.yaml'));
    await rm(join(w.dir, 'cm', '..2026_01_01_00_00_00.000000001'), { recursive: true });
    await until(
      'cm-app max_scale 4 and cm-two created',
      () => maxScale(w.e, 'cm-app') === 4 && maxScale(w.e, 'cm-two') === 1,
      5_000,
    );
    latencies.configMapSwap = writeLatency(w.e, 'cm-app', t0)!;
  });

  it('keeps the last good version in force while a file does not parse, and follows it again once fixed', async (t) => {
    const w = await watching(t, 'lastgood');
    const patchesBefore = w.e.requestLog.filter((r) => r.method === 'PATCH').length;
    await writeFile(join(w.dir, 'app', 'a.yaml'), `${internalDockerYaml('web-a', 9)}  broken: [unclosed\n`);
    const row = await until(
      'web-a held at its last good version',
      async () => (await w.d.status()).resources.find((r) => r.key === 'Deployment/web-a' && r.heldAtLastGood),
      5_000,
    );
    expect(row.state).toBe('blocked');
    expect(row.error).toMatch(/a\.yaml:\d+:\d+/);
    const status = await w.d.status();
    expect(status.orphans).not.toContain('Deployment/web-a');
    expect(maxScale(w.e, 'web-a')).toBe(1);
    expect(w.e.requestLog.filter((r) => r.method === 'PATCH').length).toBe(patchesBefore);
    await writeFile(join(w.dir, 'app', 'a.yaml'), internalDockerYaml('web-a', 5));
    await until('web-a max_scale 5', () => maxScale(w.e, 'web-a') === 5, 5_000);
  });

  it('under --drift report, reports a deployment changed behind its back and leaves it', async (t) => {
    const w = await watching(t, 'drift');
    await driftWebB(w, 1);
    const row = (await w.d.status()).resources.find((r) => r.key === 'Deployment/web-b')!;
    expect(row.state).toBe('out_of_sync');
    expect(row.drift).toEqual({
      policy: 'report',
      fields: ['source_config.resource_spec.max_scale'],
      reason: expect.stringMatching(/^changed outside converge/),
    });
    await w.d.waitForLine((l) => l.msg.startsWith('drift reported') && l.key === 'Deployment/web-b', 2_000);
    await sleep(500);
    expect(maxScale(w.e, 'web-b')).toBe(9);
  });

  it('serves Prometheus metrics, /healthz, /readyz, and `converge status`', async (t) => {
    const testStart = Date.now();
    const w = await watching(t, 'metrics');
    // An update (web-a), a create then a deletion (web-c, an orphan), and a drift reported (web-b): 4 watch reconciles.
    await writeFile(join(w.dir, 'app', 'a.yaml'), internalDockerYaml('web-a', 2));
    await until('web-a max_scale 2', () => maxScale(w.e, 'web-a') === 2, 5_000);
    await writeManifest(join(w.dir, 'app', 'c.yaml'), internalDockerYaml('web-c', 1));
    await until('web-c to be created', () => maxScale(w.e, 'web-c') === 1, 5_000);
    await unlink(join(w.dir, 'app', 'c.yaml'));
    await until(
      'web-c to be reported as an orphan',
      async () => (await w.d.status()).orphans.includes('Deployment/web-c'),
      5_000,
    );
    await driftWebB(w, 2);
    await until(
      'every job to be counted',
      async () => {
        const samples = parsePrometheusText(await w.d.metricsText());
        return samples.filter((s) => s.name === 'converge_jobs_total').reduce((n, s) => n + s.value, 0) >= 4;
      },
      5_000,
    );

    const samples = parsePrometheusText(await w.d.metricsText());
    const value = (name: string, labels: Record<string, string> = {}) =>
      samples
        .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((n, s) => n + s.value, 0);
    expect(
      value('converge_reconcile_duration_seconds_count', { trigger: 'watch', result: 'ok' }),
    ).toBeGreaterThanOrEqual(4);
    expect(value('converge_reconcile_duration_seconds_bucket', { trigger: 'startup', le: '+Inf' })).toBe(1);
    expect(value('converge_resources', { kind: 'Deployment', state: 'synced' })).toBe(1);
    expect(value('converge_resources', { kind: 'Deployment', state: 'out_of_sync' })).toBe(1);
    expect(value('converge_drifted_resources', { kind: 'Deployment', policy: 'report' })).toBe(1);
    expect(value('converge_orphan_deployments')).toBe(1);
    expect(value('converge_jobs_total', { outcome: 'created' })).toBe(3);
    expect(value('converge_jobs_total', { outcome: 'updated' })).toBeGreaterThanOrEqual(1);
    expect(
      value('converge_service_requests_total', { method: 'GET', endpoint: '/v2/deployments', status: '200' }),
    ).toBeGreaterThan(0);
    expect(
      value('converge_service_requests_total', {
        method: 'PATCH',
        endpoint: '/v2/deployments/{deployment_id}',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(1);
    // A reconcile of this daemon (started in this test), not a time of some other run: between the test's start and now.
    const lastSuccessMs = Math.round(value('converge_last_successful_reconcile_timestamp_seconds') * 1000);
    expect(lastSuccessMs).toBeGreaterThanOrEqual(testStart);
    expect(lastSuccessMs).toBeLessThanOrEqual(Date.now());
    expect(samples.some((s) => s.name === 'converge_process_resident_memory_bytes')).toBe(true);

    expect((await fetch(`${w.d.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${w.d.url}/readyz`);
    expect(ready.status).toBe(200);
    const text = await run(process.execPath, [MAIN, 'status', '--url', w.d.url]);
    expect(text.stdout).toMatch(/: ready \(dir /);
    expect(text.stdout).toMatch(/KIND\s+NAME\s+SYNC\s+HEALTH\s+REASON\s+ACTION\s+NOTE/);
    expect(text.stdout).toMatch(
      /Deployment\s+web-b\s+out_of_sync\s+(healthy\s+DriftReported|progressing\s+RevisionBuilding)\s+update\s+drift \(report\): source_config\.resource_spec\.max_scale/,
    );
    expect(text.stdout).toContain('Orphans (live, in no manifest; never deleted): Deployment/web-c');
    const json = JSON.parse(
      (await run(process.execPath, [MAIN, 'status', '--url', w.d.url, '--output', 'json'])).stdout,
    );
    expect(json.readiness.ready).toBe(true);
    expect(json.resources).toHaveLength(w.declared);
    await expect(run(process.execPath, [MAIN, 'status', '--url', 'http://127.0.0.1:9'])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/no converge daemon answers at http:\/\/127\.0\.0\.1:9/),
    });
  });

  it('never shows the API key or a secret value: logs (debug), /status, /metrics, /readyz, converge status, Redis', async (t) => {
    const w = await watching(t, 'secrets', { secret: true });
    expect(
      w.e.store
        .allDeployments()
        .find((d) => d.name === 'web-secret')!
        .secrets.map((x) => x.name),
    ).toEqual(['OPENAI_API_KEY']);
    const texts = [
      JSON.stringify(w.d.lines),
      w.d.stderr(),
      await (await fetch(`${w.d.url}/status`)).text(),
      await w.d.metricsText(),
      await (await fetch(`${w.d.url}/readyz`)).text(),
      (await run(process.execPath, [MAIN, 'status', '--url', w.d.url, '--output', 'json'])).stdout,
      await redisDump(w.prefix),
    ];
    expect(w.d.lines.length).toBeGreaterThan(w.declared); // debug lines, one per job at least
    for (const text of texts) {
      expect(text).not.toContain(PLANTED_KEY);
      expect(text).not.toContain(PLANTED_SECRET);
    }
  });

  it('stops on SIGTERM with exit code 0', async (t) => {
    const w = await watching(t, 'sigterm');
    w.d.signal('SIGTERM');
    expect(await w.d.exited).toBe(0);
    expect(w.d.lines.some((l) => l.msg === 'stopped')).toBe(true);
  });
});

describe.concurrent('converge run: two replicas on one Redis, resync every second', () => {
  it('heals drift on resync, only reports it under the converge/drift: report annotation, and runs each cycle once', async (t) => {
    const e2 = await emulator(t);
    const x = await tempDir(t, 'replicas');
    await writeManifest(join(x, 'heal.yaml'), internalDockerYaml('heal-me', 1));
    await writeManifest(join(x, 'keep.yaml'), internalDockerYaml('keep-me', 1, { 'converge/drift': 'report' }));
    const p = prefixOf(t, 'replicas');
    const args = ['--api-url', e2.url, '--redis-prefix', p, '--resync', '1s', '--job-lock', '2s'];
    const [a, b] = await Promise.all([daemon(t, x, args), daemon(t, x, args)]);
    await until(
      'both deployments created',
      () => maxScale(e2, 'heal-me') === 1 && maxScale(e2, 'keep-me') === 1,
      10_000,
    );
    // One replica holds the leader lease and plans; the other runs jobs only. Both show the resources as the leader
    // recorded them (the projection in Redis, docs/daemon.md "The event log"): the same two rows, in sync.
    await until(
      "both replicas to show the leader's rows in sync",
      async () => {
        const views = [(await a.status()).resources, (await b.status()).resources];
        return views.every((rows) => rows.length === 2 && rows.every((r) => r.state === 'synced'));
      },
      10_000,
    );
    // lease is null until a daemon has started its election loop.
    const leases = await until(
      'both replicas to know the leader',
      async () => {
        const both = [(await a.status()).lease, (await b.status()).lease] as Array<{ leading: boolean } | null>;
        return both.every((l) => l !== null) ? both : undefined;
      },
      10_000,
    );
    expect(leases.map((l) => l.leading).sort()).toEqual([false, true]);

    // Only lines logged after the hand edits count: a replica whose startup plan (a create, from a list read before the
    // other replica's create landed) meets the other's remembered state logs a "drift" of every field before that.
    const [fromA, fromB] = [a.lines.length, b.lines.length];
    await patchBehindTheBack(e2, 'heal-me', 7);
    await patchBehindTheBack(e2, 'keep-me', 7);
    await until('heal-me reverted to its manifest', () => maxScale(e2, 'heal-me') === 1, 6_000);
    const lineOf = (match: (l: LogLine) => boolean) => () =>
      [...a.lines.slice(fromA), ...b.lines.slice(fromB)].find(match);
    const healedLine = await until(
      'a replica to log the healed drift',
      lineOf((l) => l.msg.startsWith('drift found') && l.key === 'Deployment/heal-me'),
      6_000,
    );
    expect(healedLine.fields).toEqual(['source_config.resource_spec.max_scale']);
    await until(
      'a replica to report the drift of keep-me',
      lineOf((l) => l.msg.startsWith('drift reported') && l.key === 'Deployment/keep-me'),
      6_000,
    );
    const cyclesNow = (await a.status()).resync.cyclesRun.length + (await b.status()).resync.cyclesRun.length;
    await until(
      'three more resync cycles',
      async () =>
        (await a.status()).resync.cyclesRun.length + (await b.status()).resync.cyclesRun.length >= cyclesNow + 3,
      8_000,
    );
    expect(maxScale(e2, 'keep-me')).toBe(7);

    const [sa, sb] = [await a.status(), await b.status()];
    const union = [...sa.resync.cyclesRun, ...sb.resync.cyclesRun];
    expect(union.length).toBeGreaterThanOrEqual(4);
    expect(new Set(union).size).toBe(union.length); // no cycle ran on both replicas
    // ... and only the leader runs them.
    expect((leases[0]!.leading ? sb : sa).resync.cyclesRun).toEqual([]);
    console.log(
      `resync cycles: replica A ran ${sa.resync.cyclesRun.length}, replica B ran ${sb.resync.cyclesRun.length}, none on both`,
    );
    for (const s of [sa, sb]) {
      // Every cycle a replica took became a resync reconcile of that replica.
      const reconciled = new Set(s.history.filter((h) => h.trigger === 'resync').map((h) => h.cycle));
      for (const cycle of s.resync.cyclesRun.slice(-10, -1)) expect(reconciled.has(cycle)).toBe(true);
    }
    a.signal('SIGTERM');
    b.signal('SIGINT');
    expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
  }, 90_000);
});

describe.concurrent('converge run: SIGTERM during an apply', () => {
  it('finishes or hands back the active jobs, loses none, and converges after a restart', async (t) => {
    const N = 12;
    const e3 = await emulator(t, { latencyMs: 700 });
    const dir = await tempDir(t, 'sigterm');
    await Promise.all(
      Array.from({ length: N }, (_, i) => writeManifest(join(dir, `s${i}.yaml`), internalDockerYaml(`slow-${i}`, 3))),
    );
    const p = prefixOf(t, 'sigterm');
    const base = ['--api-url', e3.url, '--redis-prefix', p, '--resync', '1h', '--concurrency', '2', '--job-lock', '2s'];
    const created = () => e3.requestLog.filter((r) => r.method === 'POST' && r.status === 201).length;

    // 1. Graceful: the two active jobs finish within the deadline; the waiting ones stay queued.
    const first = await daemon(t, dir, [...base, '--shutdown-timeout', '10s']);
    await first.waitForLine((l) => l.msg.startsWith('converge daemon running'));
    await until('the first creates to land', () => created() >= 2, 15_000);
    first.signal('SIGTERM');
    expect(await first.exited).toBe(0);
    const landed = created();
    expect(landed).toBeLessThan(N);
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const queue = new Queue(QUEUE_NAME, { connection: redis, prefix: p });
    t.onTestFinished(async () => {
      await queue.close();
      redis.disconnect();
    });
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    expect(counts.active).toBe(0);
    expect((counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0)).toBe(N - landed);
    expect(first.lines.some((l) => l.msg.startsWith('active jobs did not finish'))).toBe(false);

    // 2. Deadline passes: requests in flight, the daemon exits 0 at once and the jobs' locks lapse.
    const second = await daemon(t, dir, [...base, '--shutdown-timeout', '200ms']);
    const before = e3.requestLog.length;
    // A job looked its deployment up; its create is sent next and takes 700 ms to be answered.
    await until(
      'a create in flight',
      () => e3.requestLog.slice(before).some((r) => r.method === 'GET' && r.query.name_contains),
      15_000,
    );
    await sleep(300);
    second.signal('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(second.lines.some((l) => l.msg.startsWith('active jobs did not finish'))).toBe(true);

    // 3. Restart: every deployment exists exactly once, as declared.
    const third = await daemon(t, dir, [...base, '--shutdown-timeout', '10s']);
    await until(
      `all ${N} deployments`,
      () => Array.from({ length: N }, (_, i) => maxScale(e3, `slow-${i}`)).every((m) => m === 3),
      30_000,
    );
    const names = e3.store.allDeployments().map((d) => d.name);
    expect(names.sort()).toEqual(Array.from({ length: N }, (_, i) => `slow-${i}`).sort());
    expect(created()).toBe(N);
    third.signal('SIGTERM');
    expect(await third.exited).toBe(0);
  }, 120_000);
});
