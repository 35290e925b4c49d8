// Several `converge run` replicas on one Redis and one service, each with its own copy of the manifests a commit apart:
// only the lease holder plans and enqueues, so nothing flaps; after SIGKILL of the leader the standby takes over once
// the dead leader's key expired, after SIGTERM once it was released, each with a higher fencing token (on Redis' clock,
// never a wall-time bound); a leadership that goes back to the first replica's version (A, B, A) meets the flap guard,
// not a third write.
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { leaseKey } from '../../src/leader/lease.js';
import { leaseExpiryMicros, PTTL_SLACK_MICROS } from '../helpers/lease.js';
import { rawRedis } from '../helpers/redis.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  liveMaxScale,
  REDIS_URL,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';

const COUNT = 20;
const LEASE_MS = 2_000;

interface LeaseDoc {
  replica: string;
  leading: boolean;
  leader: { holder: string; token: number; since: string } | null;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function manifests(label: string, maxScale: number): Promise<string> {
  const dir = await tempDir(label);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {};
  for (let i = 0; i < COUNT; i++) files[`ha-${i}.yaml`] = dockerDeploymentYaml(`ha-${i}`, { maxScale });
  await writeFiles(dir, files);
  return dir;
}

async function leaseOf(daemon: DaemonHandle): Promise<LeaseDoc> {
  return (await daemon.status()).lease as LeaseDoc;
}

/** Polls until `daemon` leads (the cap is a hang guard, not a target); the milliseconds it took from `since`, for the log only. */
async function leads(daemon: DaemonHandle, since: number): Promise<number> {
  await until('the standby to take the lease', async () => (await leaseOf(daemon)).leading, 15_000, 20);
  return Date.now() - since;
}

/** Redis' clock, in microseconds: what a fencing token taken at that moment is at least (src/leader/lease.ts). */
async function redisMicros(redis: ReturnType<typeof rawRedis>): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1_000_000 + Number(micros);
}

describe('replicas: one active reconciler', () => {
  it('two daemons a commit apart: no flapping, one write per version change; SIGKILL of the leader hands over once its key expired, SIGTERM once it was released', async () => {
    const redis = rawRedis();
    cleanups.push(async () => redis.disconnect());
    // Writes per deployment name: POST (create) and PATCH, from the emulator's own request log.
    const writes = new Map<string, string[]>();
    const idToName = new Map<string, string>();
    const emulator: RunningEmulator = await startEmulator({
      buildMs: 0,
      lenientCreate: true,
      onRequest: (entry) => {
        if (entry.method === 'GET' || entry.status >= 400) return;
        const name =
          entry.method === 'POST'
            ? String((entry.body as { name?: unknown } | undefined)?.name)
            : (idToName.get(entry.deploymentId ?? '') ?? entry.path);
        writes.set(name, [
          ...(writes.get(name) ?? []),
          `${entry.method} ${JSON.stringify((entry.body as { source_config?: unknown } | undefined)?.source_config ?? null)}`,
        ]);
      },
    });
    cleanups.push(() => emulator.close());
    const live = (): Map<string, unknown> => {
      const out = new Map<string, unknown>();
      for (const d of emulator.store.allDeployments()) {
        idToName.set(d.id, d.name);
        out.set(d.name, liveMaxScale(d));
      }
      return out;
    };
    const allAt = (maxScale: number) => () => {
      const now = live();
      return now.size === COUNT && [...now.values()].every((v) => v === maxScale);
    };
    const prefix = testPrefix('ha');
    cleanups.push(() => dropPrefix(prefix));
    const dirs: Record<string, string> = { a: await manifests('ha-a', 2), b: await manifests('ha-b', 4) };
    const scaleOf: Record<string, number> = { a: 2, b: 4 };
    const start = (id: string) =>
      startDaemon(dirs[id]!, [
        '--api-url',
        emulator.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
        '--replica-id',
        id,
        '--resync',
        '1s',
        '--lease',
        `${LEASE_MS}ms`,
        '--debounce',
        '50ms',
        '--shutdown-timeout',
        '5s',
        '--log-level',
        'info',
      ]);

    // Both start at once and race for the lease: one leads, the other stands by (ready: it serves jobs).
    const started = await Promise.all([start('a'), start('b')]);
    const daemons: Record<string, DaemonHandle> = { a: started[0], b: started[1] };
    const [leaseA, leaseB] = await until(
      'one replica to lead',
      async () => {
        const both = await Promise.all([leaseOf(daemons.a!), leaseOf(daemons.b!)]);
        // Null until the daemon has connected and started its election loop.
        return both.every((l) => l !== null) && both.some((l) => l.leading) ? both : undefined;
      },
      10_000,
    );
    expect(leaseA.leading !== leaseB.leading).toBe(true);
    const first = leaseA.leading ? 'a' : 'b';
    const second = first === 'a' ? 'b' : 'a';
    await until(`every deployment at the leader's max_scale ${scaleOf[first]}`, allAt(scaleOf[first]!), 15_000, 50);
    // Several resync cycles (1 s) with the standby's directory a commit behind or ahead: nothing more is written.
    await sleep(3_000);
    expect(allAt(scaleOf[first]!)()).toBe(true);
    for (let i = 0; i < COUNT; i++) expect(writes.get(`ha-${i}`)?.map((w) => w.split(' ')[0])).toEqual(['POST']);
    const standby = daemons[second]!;
    expect((await standby.readyz()).status).toBe(200);
    expect(await leaseOf(standby)).toMatchObject({ replica: second, leading: false, leader: { holder: first } });
    expect(await standby.metrics()).toContain(`converge_leader{replica="${second}"} 0`);
    expect(await daemons[first]!.metrics()).toContain(`converge_leader{replica="${first}"} 1`);
    // The standby runs no reconcile; it shows the leader's last one, read from Redis (the record is the same on both).
    await until(
      "the standby to show the leader's last reconcile",
      async () => {
        const [led, stood] = await Promise.all([daemons[first]!.status(), standby.status()]);
        return stood.lastReconcile !== null && stood.lastReconcile.id === led.lastReconcile?.id;
      },
      10_000,
      50,
    );
    const shown = await runConverge(['status', '--url', standby.url]);
    expect(shown.stdout).toMatch(
      new RegExp(
        `^Replica ${second}: standby \\(runs jobs only\\); leader: ${first} since \\S+ \\(fencing token \\d+\\)$`,
        'm',
      ),
    );

    // SIGKILL of the leader: the standby takes over once the dead leader's key expired, not before, and writes its
    // version once per deployment. What bounds the wait is configuration: the key lives a lease time after the last
    // renew (PX lease), and a standby tries every half second (docs/daemon.md).
    const killedLeader = (await leaseOf(standby)).leader!;
    expect(killedLeader.holder).toBe(first);
    const pttl = await redis.pttl(leaseKey(prefix));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(LEASE_MS);
    // When the key expires, on Redis' clock: read before the kill (a renew after it only makes it later), and again once
    // the leader is dead (nothing renews it any more: its final expiry, unless it already expired, and then this one is).
    const aliveKeyExpires = await leaseExpiryMicros(redis, prefix);
    expect(aliveKeyExpires).toBeDefined();
    const killedAt = Date.now();
    await daemons[first]!.kill('SIGKILL');
    const deadKeyExpires = (await leaseExpiryMicros(redis, prefix)) ?? aliveKeyExpires!;
    const killHandover = await leads(standby, killedAt);
    const afterKill = (await leaseOf(standby)).leader!;
    expect(afterKill.holder).toBe(second);
    expect(afterKill.token).toBeGreaterThan(killedLeader.token);
    // The token is at least Redis' clock when the standby took the lease: not before the dead leader's key expired.
    expect(afterKill.token).toBeGreaterThanOrEqual(deadKeyExpires - PTTL_SLACK_MICROS);
    await until(
      `every deployment at the new leader's max_scale ${scaleOf[second]}`,
      allAt(scaleOf[second]!),
      15_000,
      50,
    );

    // The killed replica comes back as a standby; SIGTERM of the leader hands over within two seconds.
    daemons[first] = await start(first);
    // Once its election loop has seen the leader, it is given a while to (wrongly) take the lease: it stays a standby.
    await until(
      'the returning replica to see the leader',
      async () => (await leaseOf(daemons[first]!))?.leader?.holder === second,
      15_000,
      50,
    );
    await sleep(1_500);
    expect(await leaseOf(daemons[first])).toMatchObject({ leading: false, leader: { holder: second } });
    expect(allAt(scaleOf[second]!)()).toBe(true);
    // SIGTERM of the leader: it releases the lease (compare-and-DEL) and the returning replica takes it after the
    // signal, with a higher token; the old leader writes nothing after it (no write at all: version B is applied and the
    // alternation back to A meets the flap guard below).
    const termedLeader = (await leaseOf(daemons[first])).leader!;
    expect(termedLeader.holder).toBe(second);
    const writesBeforeTerm = JSON.stringify([...writes]);
    const signalledAt = await redisMicros(redis);
    const termAt = Date.now();
    standby.child.kill('SIGTERM');
    const termHandover = await leads(daemons[first], termAt);
    const afterTerm = (await leaseOf(daemons[first])).leader!;
    expect(afterTerm.holder).toBe(first);
    expect(afterTerm.token).toBeGreaterThan(termedLeader.token);
    expect(afterTerm.token).toBeGreaterThanOrEqual(signalledAt);
    expect(await standby.exited).toMatchObject({ code: 0 });
    expect(standby.lines.some((l) => l.msg === 'leader lease released: a standby takes over')).toBe(true);
    // The returning replica's version is the first one again: each deployment's desired state went A, B, A within
    // flap_window, so the flap guard stops it (Conflict naming both versions) instead of writing A back.
    const conflicted = await until(
      'every deployment in Conflict on the new leader',
      async () => {
        const doc = await daemons[first]!.status();
        return ((doc.conflicts as string[] | undefined) ?? []).length === COUNT ? doc : undefined;
      },
      15_000,
      100,
    );
    const row = (
      conflicted.resources as unknown as Array<{
        key: string;
        sync: { reason: string };
        conflict?: { reason: string; versions?: unknown[] };
      }>
    ).find((r) => r.key === 'Deployment/ha-0');
    expect(row).toMatchObject({ sync: { reason: 'Conflict' }, conflict: { reason: 'desired_alternates' } });
    expect(row!.conflict!.versions).toHaveLength(2);
    await sleep(1_500);
    expect(allAt(scaleOf[second]!)()).toBe(true);

    // One create and one PATCH per version change, nothing written twice, and the alternation back not written at all:
    // nothing was written after the SIGTERM.
    for (let i = 0; i < COUNT; i++)
      expect(
        writes.get(`ha-${i}`)?.map((w) => w.split(' ')[0]),
        `ha-${i}`,
      ).toEqual(['POST', 'PATCH']);
    expect(JSON.stringify([...writes])).toBe(writesBeforeTerm);
    const after = await leaseOf(daemons[first]);
    expect(after.leader!.token).toBeGreaterThanOrEqual(3);
    const metrics = await daemons[first].metrics();
    expect(metrics).toContain(`converge_leader{replica="${first}"} 1`);
    expect(metrics).toContain('converge_lease_transitions_total{to="leader"} 1');
    expect(metrics).toMatch(/^converge_leader_since_seconds [1-9]\d{9}/m);
    // Measured, not asserted (the machine's speed is no promise): docs/daemon.md quotes these.
    console.log(
      `replicas: SIGKILL handover ${killHandover} ms (lease ${LEASE_MS} ms), SIGTERM handover ${termHandover} ms`,
    );
    daemons[first].child.kill('SIGTERM');
    await daemons[first].exited;
  }, 60_000);
});
