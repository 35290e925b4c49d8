// A delete only on an intent that still holds, checked when its job runs: an owned file removed, its delete decided, and
// the file restored while the job waits on a slow service (its read held at a loopback proxy) gets 0 DELETE, in
// prune_mode auto and confirm; a confirmation answered ok is stored in Redis first, so a leader killed (kill -9) right
// after answering leaves it to the next leader, which sends exactly one DELETE. Through the built binary, against the
// emulator (DELETEs counted at its request log).
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { startEmulator } from '../../src/emulator/server.js';
import { QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import { absentKey, confirmedKey } from '../../src/store/applied-state.js';
import { heldProxy, type HeldProxy } from '../helpers/held-proxy.js';
import { rawRedis } from '../helpers/redis.js';
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
  type ResourceRow,
} from './helpers.js';

const HOOK = 'delete-intent-hook-token';
const B = 'Deployment/b';

interface Row extends ResourceRow {
  sync: { status: string; reason: string; message: string };
  job: { id: string; state: string; outcome?: string; message?: string } | null;
}

const redis = rawRedis();
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  redis.disconnect();
});

/** An emulator behind a proxy that can hold a request, a manifest directory applied once (a and b created by converge). */
async function setup(label: string) {
  const emulator = await startEmulator({ buildMs: 0 });
  const proxy: HeldProxy = await heldProxy(emulator.url);
  const dir = await tempDir(`delete-intent-${label}`);
  const prefix = testPrefix(`delete-intent-${label}`);
  cleanups.push(
    () => emulator.close(),
    () => proxy.close(),
    () => dropPrefix(prefix),
    () => rm(dir, { recursive: true, force: true }),
  );
  const text = dockerDeploymentYaml('b', { maxScale: 1 });
  await writeFiles(dir, { 'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }), 'b.yaml': text });
  // Through the proxy, as the daemon: the prefix serves one service address.
  const created = await runConverge(['apply', dir, '--api-url', proxy.url, '--redis-prefix', prefix]);
  expect(created.code, created.stdout + created.stderr).toBe(0);
  const id = emulator.store.allDeployments().find((d) => d.name === 'b')!.id;
  return {
    emulator,
    proxy,
    dir,
    prefix,
    id,
    /** The daemon's arguments: through the proxy, prune on, no resync during the test. */
    args: (...more: string[]) => [
      '--api-url',
      proxy.url,
      '--redis-prefix',
      prefix,
      '--prune',
      '--prune-grace',
      '1s',
      '--debounce',
      '50ms',
      '--resync',
      '1h',
      '--log-level',
      'info',
      ...more,
    ],
    remove: () => rm(join(dir, 'b.yaml')),
    restore: () => writeFile(join(dir, 'b.yaml'), text),
    /** Every DELETE of b's id that reached the service. */
    deletesOfB: () => emulator.requestLog.filter((r) => r.method === 'DELETE' && r.deploymentId === id),
    /** Holds the next read of b by id: a delete job reads it right before its DELETE. */
    holdJobRead: () => proxy.holdNext((method, path) => method === 'GET' && path === `/v2/deployments/${id}`),
  };
}

async function rowOf(daemon: DaemonHandle, name: string): Promise<Row | undefined> {
  return ((await daemon.status()).resources as Row[]).find((r) => r.name === name);
}

async function untilRow(daemon: DaemonHandle, what: string, test: (row: Row) => boolean): Promise<Row> {
  return until(
    what,
    async () => {
      const row = await rowOf(daemon, 'b');
      return row && test(row) ? row : undefined;
    },
    60_000,
    50,
  );
}

const synced = (row: Row) => row.action === 'noop' && row.sync.status === 'synced';

function confirm(daemon: DaemonHandle, name: string) {
  return runConverge(['reconcile', '--confirm-delete', name, '--url', daemon.url], { CONVERGE_WEBHOOK_TOKEN: HOOK });
}

/** After the held read is let go: the job drops its delete (logged), the daemon decides again, b stays in sync and alive. */
async function droppedAndAlive(s: Awaited<ReturnType<typeof setup>>, daemon: DaemonHandle): Promise<void> {
  s.proxy.release();
  const dropped = await daemon.waitForLine(
    (l) => typeof l.msg === 'string' && l.msg.startsWith('job not run:') && l.key === B,
    30_000,
  );
  expect(dropped.msg).toBe(
    'job not run: not deleted: declared again in the manifests read since its delete was decided (no absence is recorded any more); nothing sent',
  );
  await daemon.waitForLine(
    (l) => l.msg === 'job sent nothing: the intent of its delete no longer held; reconciling again' && l.key === B,
    30_000,
  );
  const row = await untilRow(daemon, 'b in sync after the dropped delete', synced);
  expect(row.job?.outcome).not.toBe('deleted');
  await daemon.kill('SIGTERM');
  expect(s.deletesOfB()).toEqual([]);
  expect(s.emulator.store.allDeployments().find((d) => d.name === 'b')).toMatchObject({ id: s.id, status: 'READY' });
}

// The cases run concurrently: each has its own emulator, proxy, directory, Redis prefix and daemons (setup), and mostly
// waits on its daemon.
describe.concurrent('a delete only on an intent that still holds', () => {
  it('auto: the file restored while the decided delete waits on a slow service gets 0 DELETE, and b stays in sync', async () => {
    const s = await setup('auto');
    const daemon = await startDaemon(s.dir, s.args());
    await untilRow(daemon, 'b in sync', synced);
    s.holdJobRead();
    await s.remove();
    // The grace passed, the delete was decided: its job's read of b waits on the service.
    await until('the delete job of b waiting on the service', () => s.proxy.held().length === 1, 60_000, 50);
    expect((await rowOf(daemon, 'b'))?.action).toBe('delete');
    await s.restore();
    // The reconcile that read the file back ends b's absence (the record the job checks).
    await until(
      'the absence of b cleared',
      async () => (await redis.hexists(absentKey(s.prefix), B)) === 0,
      60_000,
      50,
    );
    await untilRow(daemon, 'b in sync again', synced);
    await droppedAndAlive(s, daemon);
  }, 120_000);

  it('confirm: a confirmed delete whose file is restored while its job waits gets 0 DELETE; the confirmation goes with the absence', async () => {
    const s = await setup('confirm');
    const daemon = await startDaemon(s.dir, s.args('--prune-mode', 'confirm'), { CONVERGE_WEBHOOK_TOKEN: HOOK });
    await untilRow(daemon, 'b in sync', synced);
    await s.remove();
    await untilRow(daemon, 'b DeletePending', (r) => r.sync.reason === 'DeletePending');
    s.holdJobRead();
    const confirmed = await confirm(daemon, 'b');
    expect(confirmed.code, confirmed.stdout + confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toContain('Delete confirmed and enqueued for: Deployment/b');
    // Stored where a new leader finds it: the live id and the absence it confirms, no secret.
    const stored = JSON.parse((await redis.hget(confirmedKey(s.prefix), B))!) as { id: string; since: number };
    expect(stored).toEqual({ id: s.id, since: expect.any(Number) });
    await until('the delete job of b waiting on the service', () => s.proxy.held().length === 1, 60_000, 50);
    await s.restore();
    await until(
      'the absence and the confirmation of b cleared',
      async () =>
        (await redis.hexists(absentKey(s.prefix), B)) + (await redis.hexists(confirmedKey(s.prefix), B)) === 0,
      60_000,
      50,
    );
    await untilRow(daemon, 'b in sync again', synced);
    await droppedAndAlive(s, daemon);
  }, 120_000);

  it('confirm: a confirmation answered ok survives kill -9 of the leader; the next leader sends exactly one DELETE', async () => {
    const s = await setup('failover');
    const args = (replica: string) =>
      s.args(
        '--prune-mode',
        'confirm',
        '--replica-id',
        replica,
        '--lease',
        '2s',
        '--job-lock',
        '2s',
        '--shutdown-timeout',
        '5s',
      );
    const first = await startDaemon(s.dir, args('first'), { CONVERGE_WEBHOOK_TOKEN: HOOK });
    await untilRow(first, 'b in sync', synced);
    await s.remove();
    await untilRow(first, 'b DeletePending on the leader', (r) => r.sync.reason === 'DeletePending');
    // The leader's own delete job will wait on the service when the leader dies.
    s.holdJobRead();
    const confirmed = await confirm(first, 'b');
    expect(confirmed.code, confirmed.stdout + confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toContain('Delete confirmed and enqueued for: Deployment/b');
    await until("the leader's delete job of b waiting on the service", () => s.proxy.held().length === 1, 60_000, 50);
    const second = await startDaemon(s.dir, args('second'), { CONVERGE_WEBHOOK_TOKEN: HOOK });
    await until('the second replica standing by', async () => (await second.readyz()).status === 200, 30_000, 50);
    await first.kill('SIGKILL');
    s.proxy.release();
    await until(
      'the second replica to lead',
      async () => ((await second.status()).lease as { leading: boolean }).leading,
      30_000,
      50,
    );
    await until('the DELETE of b', () => s.deletesOfB().some((r) => r.status === 204), 60_000, 50);
    // Every job of b ended (the dead leader's, taken back from its lapsed lock, and the new leader's).
    const queue = new Queue(QUEUE_NAME, { connection: { url: REDIS_URL }, prefix: s.prefix });
    cleanups.push(() => queue.close());
    await until(
      'no job of b left',
      async () => {
        const counts = await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized', 'waiting-children');
        return Object.values(counts).every((n) => n === 0);
      },
      60_000,
      100,
    );
    await until(
      'the confirmation used',
      async () => (await redis.hexists(confirmedKey(s.prefix), B)) === 0,
      30_000,
      50,
    );
    await second.kill('SIGTERM');
    expect(s.deletesOfB().map((r) => r.status)).toEqual([204]);
    expect(s.emulator.store.allDeployments().find((d) => d.name === 'a')?.status).not.toBe('AWAITING_DELETE');
  }, 180_000);
});
