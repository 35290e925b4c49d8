// Process faults: the daemon killed with SIGKILL mid-apply, Redis restarted mid-apply, the service down for a while.
// Scaled for CI: the "service down for a minute" is 10 s here (resync 4 s, which caps the reconcile backoff at 4 s),
// long enough for several failed reconciles with growing backoff; the behaviour does not depend on the outage's length.
import { rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { Queue } from 'bullmq';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { RESYNC_QUEUE, RESYNC_SCHEDULER_ID } from '../../src/jobs/queue/resync-scheduler.js';
import { startEmulator, type RequestLogEntry, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  killAllConverge,
  liveMaxScale,
  redisChild,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
  type RedisChild,
} from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

const OUTAGE_MS = 10_000;
const ENV = { PF_TOKEN: 'process-faults-token-2b7a' };

function landedCreates(log: readonly RequestLogEntry[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of log) {
    if (e.method !== 'POST' || e.route !== '/v2/deployments' || e.status < 200 || e.status >= 300) continue;
    const name = (e.body as { name: string }).name;
    out.set(name, (out.get(name) ?? 0) + 1);
  }
  return out;
}

function landedPatches(log: readonly RequestLogEntry[]): RequestLogEntry[] {
  return log.filter((e) => e.method === 'PATCH' && e.status >= 200 && e.status < 300);
}

async function manifestTree(t: TestContext, label: string, names: readonly string[], maxScale = 2): Promise<string> {
  const dir = await tempDir(label);
  atEnd(t, () => rm(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {};
  names.forEach((name, i) => {
    files[`${name}.yaml`] = dockerDeploymentYaml(name, {
      maxScale,
      secrets: i % 2 === 0 ? [['TOKEN', 'PF_TOKEN']] : [],
    });
  });
  await writeFiles(dir, files);
  return dir;
}

async function emulator(t: TestContext, options: Parameters<typeof startEmulator>[0]): Promise<RunningEmulator> {
  const e = await startEmulator({ buildMs: 0, ...options });
  atEnd(t, () => e.close());
  return e;
}

/** Every name exists in the emulator with `maxScale`. */
function converged(e: RunningEmulator, names: readonly string[], maxScale = 2): boolean {
  const live = new Map(e.store.allDeployments().map((d) => [d.name, d]));
  return names.every((n) => liveMaxScale(live.get(n)) === maxScale);
}

/** A failed wait, explained: the daemon's last log lines and the requests the emulator answered, by route and status. */
function explained(daemon: DaemonHandle, e: RunningEmulator) {
  return (error: Error): never => {
    const tail = daemon.lines.slice(-25).map((l) => JSON.stringify(l).slice(0, 300));
    const requests = new Map<string, number>();
    for (const r of e.requestLog)
      requests.set(`${r.method} ${r.route} ${r.status}`, (requests.get(`${r.method} ${r.route} ${r.status}`) ?? 0) + 1);
    throw new Error(
      `${error.message}\nrequests: ${JSON.stringify(Object.fromEntries(requests))}\ndaemon log (last lines):\n${tail.join('\n')}`,
    );
  };
}

function expectExactlyOnce(e: RunningEmulator, names: readonly string[]): void {
  const creates = landedCreates(e.requestLog);
  expect([...creates.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  expect([...creates.keys()].sort()).toEqual([...names].sort());
  // new deployments need no PATCH: one written after a lost answer would be a needless revision
  expect(landedPatches(e.requestLog)).toEqual([]);
  for (const d of e.store.allDeployments()) expect(d.revisions.length, d.name).toBe(1);
}

afterAll(async () => {
  await killAllConverge();
});

// The four cases run concurrently (they mostly wait on daemons, restarts and the outage), each with its own emulator,
// directory, Redis prefix or redis-server, and daemons.
describe.concurrent('process faults', () => {
  it('kill -9 of the daemon mid-apply: a restarted daemon converges everything, each create lands once', async (t) => {
    const names = Array.from({ length: 40 }, (_, i) => `kill-${i}`);
    const e = await emulator(t, { latencyMs: 40, jitterMs: 20 });
    const dir = await manifestTree(t, 'kill', names);
    const p = prefixOf(t, 'kill');
    // --lease 2s: the restarted daemon (another replica id) leads once the killed one's lease lapses.
    const args = [
      '--api-url',
      e.url,
      '--redis-prefix',
      p,
      '--concurrency',
      '3',
      '--backoff',
      '50ms',
      '--job-lock',
      '2s',
      '--lease',
      '2s',
      '--resync',
      '30s',
      '--log-level',
      'info',
    ];

    const first = await daemonOf(t, dir, args, ENV);
    await until('10 creates to land', () => (landedCreates(e.requestLog).size >= 10 ? true : false), 30_000, 20);
    // mid-apply: jobs are active, some requests are in flight at the emulator
    const before = landedCreates(e.requestLog).size;
    await first.kill('SIGKILL');
    expect(before).toBeLessThan(names.length);

    const second = await daemonOf(t, dir, args, ENV);
    await until('every deployment to exist', () => converged(e, names), 45_000, 100);
    // Within one resync interval (30 s) at most; on a timeout, say which resources were not synced and why.
    await until(
      '/status to show every resource synced',
      async () => (await second.status()).resources.every((r) => r.state === 'synced'),
      40_000,
      200,
    ).catch(async (error: Error) => {
      const pending = (await second.status()).resources.filter((r) => r.state !== 'synced');
      throw new Error(`${error.message}; not synced: ${JSON.stringify(pending).slice(0, 2000)}`);
    });
    expectExactlyOnce(e, names);
    expect(second.alive()).toBe(true);
  }, 90_000);

  it('Redis restarted mid-apply (AOF on): the daemon re-takes its lease, decides again, and converges without operator action', async (t) => {
    const redis: RedisChild = await redisChild({ extraArgs: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    atEnd(t, () => redis.remove());
    const names = Array.from({ length: 40 }, (_, i) => `redis-restart-${i}`);
    const e = await emulator(t, { latencyMs: 40, jitterMs: 20 });
    const dir = await manifestTree(t, 'redis', names);
    // --resync 1h: no resync cycle comes during the test, so what converges after the restart is decided by cause (the
    // new term's first reconcile, a dropped job's decide-again), never by a timer that happens to fire.
    const daemon = await daemonOf(
      t,
      dir,
      [
        '--api-url',
        e.url,
        '--redis-url',
        redis.url,
        '--redis-prefix',
        '{converge}',
        '--concurrency',
        '3',
        '--backoff',
        '50ms',
        '--job-lock',
        '2s',
        '--resync',
        '1h',
        '--log-level',
        'info',
      ],
      ENV,
    );
    await until('10 creates to land', () => (landedCreates(e.requestLog).size >= 10 ? true : false), 30_000, 20).catch(
      explained(daemon, e),
    );

    await redis.stop('SIGKILL');
    // while Redis is away the daemon is alive and not ready
    const down = await until(
      '/readyz to fail on Redis',
      async () => {
        const r = await daemon.readyz();
        return r.status === 503 && r.body.checks.some((c) => c.name === 'redis' && !c.ok) ? r : undefined;
      },
      10_000,
      100,
    );
    expect(down.body.ready).toBe(false);
    expect(await daemon.healthz()).toBe(200);
    // By order, not by time: the lease is lost while Redis is away, so the daemon re-takes it with a new fencing token
    // after the restart, and its jobs still queued under the old one are a former leader's.
    const lost = await daemon.waitForLine(
      (l) => l.msg === 'leader lease lost: this replica stops planning and enqueueing and runs jobs only',
      20_000,
    );
    expect(daemon.alive()).toBe(true);

    await redis.start();
    // The next term starts (its end waited for ever on the resync worker's close before), and reconciles at once.
    const taken = await daemon
      .waitForLine(
        (l) =>
          l.msg === 'leader lease taken: this replica watches, plans and enqueues' &&
          daemon.lines.indexOf(l) > daemon.lines.indexOf(lost),
        30_000,
      )
      .catch(explained(daemon, e));
    await daemon
      .waitForLine(
        (l) =>
          l.msg === 'reconciled' && l.trigger === 'startup' && daemon.lines.indexOf(l) > daemon.lines.indexOf(taken),
        30_000,
      )
      .catch(explained(daemon, e));
    await until('every deployment to exist after the restart', () => converged(e, names), 45_000, 100).catch(
      explained(daemon, e),
    );
    await until('/readyz to pass again', async () => (await daemon.readyz()).status === 200, 20_000, 200).catch(
      explained(daemon, e),
    );
    await until(
      '/status to show every resource synced',
      async () => (await daemon.status()).resources.every((r) => r.state === 'synced'),
      20_000,
      200,
    ).catch(explained(daemon, e));
    expectExactlyOnce(e, names);
    // a job that met the restart was retried, never failed for good
    const failedJobs = parsePrometheusText(await daemon.metrics()).find(
      (m) => m.name === 'converge_jobs_total' && m.labels.outcome === 'failed',
    );
    expect(failedJobs?.value).toBe(0);
    expect(daemon.alive()).toBe(true);
  }, 120_000);

  it('Redis restarted empty mid-apply (no persistence): resync still runs and the daemon converges', async (t) => {
    const redis: RedisChild = await redisChild({ extraArgs: ['--appendonly', 'no'] });
    atEnd(t, () => redis.remove());
    const names = Array.from({ length: 30 }, (_, i) => `redis-empty-${i}`);
    const e = await emulator(t, { latencyMs: 40, jitterMs: 20 });
    const dir = await manifestTree(t, 'redis-empty', names);
    const daemon = await daemonOf(
      t,
      dir,
      [
        '--api-url',
        e.url,
        '--redis-url',
        redis.url,
        '--redis-prefix',
        '{converge}',
        '--concurrency',
        '3',
        '--backoff',
        '50ms',
        '--job-lock',
        '2s',
        '--resync',
        '2s',
        '--log-level',
        'info',
      ],
      ENV,
    );
    await until('8 creates to land', () => (landedCreates(e.requestLog).size >= 8 ? true : false), 30_000, 20);
    await redis.stop('SIGKILL');
    await sleep(1_000);
    await redis.start();
    // the queued jobs, the resync schedule and the applied hashes are gone with the data
    await until('every deployment to exist after the empty restart', () => converged(e, names), 45_000, 100);
    // Every resource synced, except deployments whose secrets (masked by the service) were written before the loss:
    // their hashes went with the data, so they are held as SecretsUnknown, never rewritten blind.
    await until(
      '/status to show every resource synced or held as SecretsUnknown',
      async () =>
        (await daemon.status()).resources.every(
          (r) =>
            r.state === 'synced' ||
            (r.state === 'out_of_sync' && (r as unknown as { syncReason?: string }).syncReason === 'SecretsUnknown'),
        ),
      30_000,
      200,
    );
    for (const row of (await daemon.status()).resources)
      if (row.state !== 'synced') expect(Number(row.name.split('-').pop()) % 2, row.name).toBe(0);
    await daemon.waitForLine((l) => String(l.msg).startsWith("Redis lost converge's records"), 5_000);
    // a create whose answer was lost with the pending record can only be adopted (409), never created twice
    const creates = landedCreates(e.requestLog);
    expect([...creates.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    // the resync schedule lived in the lost data: it is created again, and drift made behind converge's back is
    // still found and healed
    const queue = new Queue(RESYNC_QUEUE, {
      connection: { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 },
      prefix: '{converge}',
    });
    try {
      await until(
        'the resync schedule to be back in Redis',
        () => queue.getJobScheduler(RESYNC_SCHEDULER_ID),
        10_000,
        200,
      );
    } finally {
      await queue.close();
    }
    const target = e.store.allDeployments().find((d) => d.name === 'redis-empty-1')!;
    const res = await fetch(`${e.url}/v2/deployments/${target.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_config: { resource_spec: { max_scale: 9 } } }),
    });
    expect(res.status).toBe(200);
    await until(
      'the drift to be healed by a resync',
      () => liveMaxScale(e.store.allDeployments().find((d) => d.name === 'redis-empty-1')) === 2,
      20_000,
      100,
    );
    expect(daemon.alive()).toBe(true);
  }, 90_000);

  it('the service down for 10 s: not ready, backs off, recovers by itself and applies the change made meanwhile', async (t) => {
    const names = Array.from({ length: 5 }, (_, i) => `outage-${i}`);
    const e = await emulator(t, {});
    const front = await switchableProxy(e.port);
    atEnd(t, () => front.close());
    const dir = await manifestTree(t, 'outage', names);
    const p = prefixOf(t, 'outage');
    const daemon: DaemonHandle = await daemonOf(
      t,
      dir,
      [
        '--api-url',
        front.url,
        '--redis-prefix',
        p,
        '--backoff',
        '50ms',
        '--resync',
        '4s',
        '--request-timeout',
        '2s',
        '--log-level',
        'info',
      ],
      ENV,
    );
    await until('the first apply', () => converged(e, names), 20_000, 100);
    await until('/readyz 200', async () => (await daemon.readyz()).status === 200, 10_000, 100);

    await front.down();
    const outageStart = Date.now();
    const requestsBefore = networkFailures(await daemon.metrics());
    await writeFile(
      join(dir, 'outage-0.yaml'),
      dockerDeploymentYaml('outage-0', { maxScale: 7, secrets: [['TOKEN', 'PF_TOKEN']] }),
    );
    const notReady = await until(
      '/readyz to report the service down',
      async () => {
        const r = await daemon.readyz();
        return r.status === 503 && r.body.checks.some((c) => c.name === 'service' && !c.ok) ? r : undefined;
      },
      10_000,
      100,
    );
    expect(notReady.body.checks.find((c) => c.name === 'service')?.detail).toMatch(/network error/);
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStart)));

    // it backed off: each failed reconcile waits longer before the next (1 s, 2 s, 4 s, ... capped at the resync
    // interval), each reconcile's list request is tried at most 5 times, and the poll of building revisions pauses
    // while the service fails: a bounded number of attempts in 10 s, no storm
    const failedDuringOutage = networkFailures(await daemon.metrics()) - requestsBefore;
    expect(failedDuringOutage).toBeGreaterThan(0);
    expect(failedDuringOutage).toBeLessThanOrEqual(35);
    expect(daemon.lines.filter((l) => l.source === 'revisions')).toEqual([]);
    const failures = daemon.lines.filter((l) => l.msg === 'reconcile failed');
    expect(failures.length).toBeGreaterThanOrEqual(3);
    const delays = failures.map((l) => Number(l.retryInMs));
    expect(delays.slice(0, 3)).toEqual([1_000, 2_000, 4_000]);
    expect(failures.every((l) => typeof l.error === 'string' && !String(l.error).includes('\n'))).toBe(true);
    expect(daemon.alive()).toBe(true);
    expect(await daemon.healthz()).toBe(200);

    await front.up();
    await until(
      'the change made during the outage to land',
      () => liveMaxScale(e.store.allDeployments().find((d) => d.name === 'outage-0')) === 7,
      20_000,
      100,
    );
    await until('/readyz 200 again', async () => (await daemon.readyz()).status === 200, 10_000, 100);
    const patches = landedPatches(e.requestLog);
    expect(patches).toHaveLength(1);
    expect(patches[0]!.newRevision).toBe(true);
  }, 90_000);
});

/** converge_service_requests_total with status "network", summed. */
function networkFailures(metrics: string): number {
  return parsePrometheusText(metrics)
    .filter((s) => s.name === 'converge_service_requests_total' && s.labels.status === 'network')
    .reduce((sum, s) => sum + s.value, 0);
}

interface SwitchableProxy {
  url: string;
  /** Stops listening and drops every connection: clients get "connection refused". */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP forwarder on a fixed loopback port in front of the emulator, which can be switched off and on. */
async function switchableProxy(targetPort: number): Promise<SwitchableProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  async function listen(at: number): Promise<number> {
    server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      sockets.add(client);
      sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
    const s = server;
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(at, '127.0.0.1', () => resolve());
    });
    return (s.address() as { port: number }).port;
  }
  async function stop(): Promise<void> {
    if (!server) return;
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  port = await listen(0);
  return {
    url: `http://127.0.0.1:${port}`,
    down: stop,
    async up() {
      await listen(port);
    },
    close: stop,
  };
}
