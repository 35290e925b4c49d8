// One clock: a replica whose wall clock is wrong (played by the test-only preload test/helpers/clock-shift.mjs, which
// shifts Date in the child only) can neither shorten a delete's grace nor trim the event log, and says how far off it is
// (one warning, converge_clock_skew_seconds). A standby 120 s ahead takes over during a pending delete and deletes only
// once the grace has passed on Redis' clock; a leader 40 days ahead keeps every entry of the log.
// Through the built binary, against the emulator (DELETEs and their arrival times at its request log).
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { recordKeys } from '../../src/store/event-log.js';
import { rawRedis } from '../helpers/redis.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  ROOT,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
  type ResourceRow,
} from './helpers.js';

const AHEAD_MS = 120_000;
const DAYS_40_MS = 40 * 24 * 3600_000;
const GRACE_MS = 20_000;

interface Row extends ResourceRow {
  sync: { status: string; reason: string; message: string };
  pendingDelete?: { since: string; due: string | null; confirm: boolean };
}

interface LeaseDoc {
  replica: string;
  leading: boolean;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/** The environment of a converge child whose wall clock runs `ms` ahead (the test-only preload; nothing in src knows it). */
function clockAhead(ms: number): NodeJS.ProcessEnv {
  const preload = `--import ${pathToFileURL(join(ROOT, 'test/helpers/clock-shift.mjs')).href}`;
  return {
    NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(' '),
    TEST_CLOCK_SHIFT_MS: String(ms),
  };
}

async function rowOf(daemon: DaemonHandle, name: string): Promise<Row | undefined> {
  return ((await daemon.status()).resources as Row[]).find((r) => r.name === name);
}

async function leading(daemon: DaemonHandle): Promise<boolean> {
  return ((await daemon.status()).lease as LeaseDoc | null)?.leading === true;
}

/** converge_clock_skew_seconds as the daemon serves it. */
async function skewSeconds(daemon: DaemonHandle): Promise<number> {
  const found = /^converge_clock_skew_seconds (\S+)$/m.exec(await daemon.metrics());
  return found ? Number(found[1]) : Number.NaN;
}

const SKEW_WARNING = (line: { msg?: unknown }) =>
  typeof line.msg === 'string' &&
  line.msg.startsWith("this replica's clock is") &&
  line.msg.includes("Redis' clock (more than 5 s)");

/** An emulator, a manifest directory applied once (so converge owns every deployment), and the daemon arguments on them. */
async function setup(label: string, files: Record<string, string>) {
  const emulator: RunningEmulator = await startEmulator({ buildMs: 0 });
  const dir = await tempDir(`clock-${label}`);
  const prefix = testPrefix(`clock-${label}`);
  cleanups.push(
    () => emulator.close(),
    () => dropPrefix(prefix),
    () => rm(dir, { recursive: true, force: true }),
  );
  await writeFiles(dir, files);
  const common = ['--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
  const created = await runConverge(['apply', dir, ...common]);
  expect(created.code, created.stdout + created.stderr).toBe(0);
  const daemonArgs = (replica: string, extra: string[] = []) => [
    ...common,
    '--replica-id',
    replica,
    '--resync',
    '1h',
    '--lease',
    '2s',
    '--debounce',
    '50ms',
    '--shutdown-timeout',
    '5s',
    '--log-level',
    'info',
    ...extra,
  ];
  return {
    emulator,
    dir,
    prefix,
    daemonArgs,
    idOf: (name: string) =>
      emulator.store.allDeployments().find((d) => d.name === name && d.status !== 'AWAITING_DELETE')?.id,
  };
}

// The two cases run concurrently: each has its own emulator, directory, Redis prefix and daemons (setup), and mostly waits
// (on a lease, on prune_grace).
describe.concurrent("one clock: a replica's wrong wall clock shortens no grace and trims no log", () => {
  it("a standby 120 s ahead takes over during a pending delete: it deletes only once prune_grace has passed on the leader's clock, and says its clock is off", async () => {
    const s = await setup('standby', {
      'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }),
      'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }),
    });
    const prune = ['--prune', '--prune-grace', `${GRACE_MS / 1000}s`];
    const leader = await startDaemon(s.dir, s.daemonArgs('right', prune));
    await until('the replica with the right clock to lead', () => leading(leader), 15_000, 50);
    const standby = await startDaemon(s.dir, s.daemonArgs('ahead', prune), clockAhead(AHEAD_MS));
    await until('b in sync', async () => (await rowOf(leader, 'b'))?.sync.status === 'synced', 30_000, 50);
    expect(await leading(standby)).toBe(false);

    // The skewed replica says so once, and its gauge shows how far; the other's shows about nothing and says nothing.
    const warning = await standby.waitForLine(SKEW_WARNING);
    expect(warning.level).toBe(40);
    expect(warning.msg).toContain('ahead of');
    expect(warning['skewSeconds']).toBeGreaterThan(AHEAD_MS / 1000 - 5);
    expect(await skewSeconds(standby)).toBeGreaterThan(AHEAD_MS / 1000 - 5);
    expect(await skewSeconds(standby)).toBeLessThan(AHEAD_MS / 1000 + 5);
    expect(Math.abs(await skewSeconds(leader))).toBeLessThan(5);
    expect(leader.lines.some(SKEW_WARNING)).toBe(false);

    const id = s.idOf('b')!;
    await rm(join(s.dir, 'b.yaml'));
    const pending = await until(
      'b DeletePending on the leader',
      async () => {
        const row = await rowOf(leader, 'b');
        return row?.sync.reason === 'DeletePending' ? row.pendingDelete : undefined;
      },
      30_000,
      50,
    );
    const due = Date.parse(pending.due!);
    expect(due - Date.parse(pending.since)).toBe(GRACE_MS);

    // The leader goes (its lease released): the standby, 120 s ahead, leads during the pending delete.
    await leader.kill('SIGTERM');
    await until('the standby to lead', () => leading(standby), 20_000, 50);
    await until(
      "the new leader's first reconcile",
      async () => ((await standby.status()).reconciles?.total ?? 0) >= 1,
      30_000,
      50,
    );
    // The grace the old leader started, on the same clock: not restarted, not shortened by 120 s.
    const taken = await rowOf(standby, 'b');
    expect(taken?.sync.reason).toBe('DeletePending');
    expect(taken?.pendingDelete).toEqual(pending);

    // The delete is sent by the reconcile the new leader schedules, never before the grace has passed on Redis' clock
    // (the emulator's log times each request on this host's clock, which is Redis' here).
    await until(
      'the DELETE of b',
      () => s.emulator.requestLog.some((r) => r.method === 'DELETE' && r.deploymentId === id && r.status === 204),
      60_000,
      50,
    );
    const deletes = s.emulator.requestLog.filter((r) => r.method === 'DELETE' && r.deploymentId === id);
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.at).toBeGreaterThanOrEqual(due);
    // Waited on a timer of the right length: not a reconcile after another until its own clock agreed with Redis'.
    expect((await standby.status()).reconciles?.total).toBeLessThanOrEqual(10);
    expect(s.idOf('a')).toBeDefined();
    // Said once, not at every reconcile.
    expect(standby.lines.filter(SKEW_WARNING)).toHaveLength(1);
    await standby.kill('SIGTERM');
  }, 180_000);

  it('a leader 40 days ahead keeps the whole event log: its first writes trim nothing', async () => {
    const s = await setup('log', {
      'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }),
      'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }),
    });
    const redis = rawRedis();
    cleanups.push(async () => redis.disconnect());
    const log = recordKeys(s.prefix).log;
    // What a leader with the right clock recorded: the apply's jobs, then a reconcile and an edit of its own.
    const first = await startDaemon(s.dir, s.daemonArgs('right'));
    await until('a in sync', async () => (await rowOf(first, 'a'))?.sync.status === 'synced', 30_000, 50);
    await writeFile(join(s.dir, 'a.yaml'), dockerDeploymentYaml('a', { maxScale: 2 }));
    await until('the edit of a applied', async () => (await rowOf(first, 'a'))?.job?.outcome === 'updated', 30_000, 50);
    await first.kill('SIGTERM');
    const before = await redis.xrange(log, '-', '+');
    expect(before.length).toBeGreaterThan(0);

    const ahead = await startDaemon(s.dir, s.daemonArgs('ahead'), clockAhead(DAYS_40_MS));
    await until('the replica 40 days ahead to lead', () => leading(ahead), 20_000, 50);
    expect((await ahead.waitForLine(SKEW_WARNING)).msg).toContain('ahead of');
    expect(await skewSeconds(ahead)).toBeGreaterThan(DAYS_40_MS / 1000 - 5);
    await writeFile(join(s.dir, 'b.yaml'), dockerDeploymentYaml('b', { maxScale: 3 }));
    await until(
      'the edit of b applied by the new leader',
      async () => (await rowOf(ahead, 'b'))?.job?.outcome === 'updated',
      30_000,
      50,
    );
    // Its job's result is in the log (written by its worker): the log has grown, and kept every earlier entry.
    const after = await until(
      "the new leader's entries in the log",
      async () => {
        const entries = await redis.xrange(log, '-', '+');
        const added = entries.filter(([entryId]) => !before.some(([earlier]) => earlier === entryId));
        return added.some(
          ([, fields]) => fields[1]?.includes('"key":"Deployment/b"') && fields[1].includes('"type":"write_done"'),
        )
          ? entries
          : undefined;
      },
      30_000,
      50,
    ).catch(async () => redis.xrange(log, '-', '+'));
    expect(after.length).toBeGreaterThan(before.length);
    expect(after.slice(0, before.length).map(([entryId]) => entryId)).toEqual(before.map(([entryId]) => entryId));
    await ahead.kill('SIGTERM');
  }, 180_000);
});
