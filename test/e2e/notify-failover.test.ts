// Notifications across a failover (issue 40): a leader and a standby on one Redis, a webhook on loopback; the leader is killed (SIGKILL) while four deployments build; the standby takes over with every row's last job, appliedFrom and hold as before, reads the event log from the cursor the dead leader left, and every (resource, revision or job, event) reaches the receiver once, with one delivery id, none missing.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventId } from '../../src/core/notify/events.js';
import { startEmulator } from '../../src/emulator/server.js';
import { OPS_WEBHOOK_CONFIG, startReceiver } from '../helpers/notify-receivers.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
  type RecordedRow,
} from './helpers.js';

const GOOD = ['fo-a', 'fo-b', 'fo-c', 'fo-d'];
const BAD = 'fo-bad';
/** Long enough that the second wave still builds when its writes are seen done (the kill waits for that, not a time). */
const BUILD_MS = 8_000;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

type Row = RecordedRow;

async function rows(daemon: DaemonHandle): Promise<Map<string, Row>> {
  const doc = (await daemon.status()) as unknown as { resources: Row[] };
  return new Map(doc.resources.map((r) => [r.key, r]));
}

/** What a new leader must show as the last one did, per row. */
function kept(row: Row | undefined): unknown {
  return {
    job: row?.job?.id ?? null,
    appliedFrom: row?.appliedFrom?.id ?? null,
    hold: row?.hold ? `${row.hold.reason} ${row.hold.revisionId ?? ''}` : null,
  };
}

async function leading(daemon: DaemonHandle): Promise<boolean> {
  return ((await daemon.status()).lease as { leading: boolean }).leading;
}

describe('notifications across a failover', () => {
  it('kill -9 of the leader mid-rollout: the standby keeps every row and sends each (resource, revision, event) once', async () => {
    const e = await startEmulator({ buildMs: BUILD_MS, buildFail: new RegExp(`^${BAD}$`) });
    cleanups.push(() => e.close());
    const hook = await startReceiver();
    cleanups.push(() => hook.close());
    const dir = await tempDir('notify-failover');
    const etc = await tempDir('notify-failover-config');
    cleanups.push(
      () => rm(dir, { recursive: true, force: true }),
      () => rm(etc, { recursive: true, force: true }),
    );
    const config = join(etc, 'converge.yaml');
    await writeFile(config, OPS_WEBHOOK_CONFIG);
    const prefix = testPrefix('notify-failover');
    cleanups.push(() => dropPrefix(prefix));
    const wave = (maxScale: number) =>
      Object.fromEntries(
        [...GOOD, BAD].map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale: n === BAD ? 2 : maxScale })]),
      );
    await writeFiles(dir, wave(2));
    const args = [
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--health-poll',
      '200ms',
      '--resync',
      '1s',
      '--debounce',
      '50ms',
      '--lease',
      '2s',
      '--config',
      config,
      '--log-level',
      'debug',
    ];
    const env = { OPS_URL: `${hook.url}/hooks/ops` };
    const one = await startDaemon(dir, [...args, '--replica-id', 'one'], env);
    await until('one leads', () => leading(one), 30_000, 50);
    const two = await startDaemon(dir, [...args, '--replica-id', 'two'], env);

    const delivered = (type: string, name?: string) =>
      hook
        .delivered()
        .filter((b) => b.type === type && (name === undefined || (b.resource as { name: string }).name === name));
    // The first wave: every deployment created; the good ones deployed, the bad one failed and held.
    await until(
      'the first wave told',
      () => delivered('rollout_succeeded').length === GOOD.length && delivered('held', BAD).length === 1,
      90_000,
      100,
    );

    // The second wave: the good ones change and build again; the leader dies once their writes are done and told.
    const first = await rows(one);
    await writeFiles(dir, wave(3));
    await until(
      'the second wave written and told',
      async () => {
        const now = await rows(one);
        return (
          GOOD.every((n) => {
            const r = now.get(`Deployment/${n}`);
            return r?.job?.state === 'completed' && r.job.id !== first.get(`Deployment/${n}`)?.job?.id;
          }) && delivered('write_sent').length === 2 * GOOD.length + 1
        );
      },
      60_000,
      50,
    );
    const before = await rows(one);
    const building = GOOD.filter((n) => before.get(`Deployment/${n}`)?.health.status === 'progressing');
    expect(building.length, 'deployments still building when the leader dies').toBeGreaterThan(0);
    await one.kill('SIGKILL');

    await until(
      'two leads and reconciled',
      async () => (await leading(two)) && ((await two.status()).reconciles as unknown as { total: number }).total >= 1,
      60_000,
      50,
    );
    const after = await rows(two);
    for (const key of [...GOOD, BAD].map((n) => `Deployment/${n}`))
      expect(kept(after.get(key)), key).toEqual(kept(before.get(key)));

    // Every rollout of the second wave ends and is told, by whichever replica saw it end.
    await until(
      'the second wave deployed and told',
      () => delivered('rollout_succeeded').length >= 2 * GOOD.length,
      90_000,
      100,
    );
    const resyncs = async (): Promise<number> =>
      ((await two.status()).reconciles as unknown as { byTrigger: Record<string, number> }).byTrigger.resync ?? 0;
    const target = (await resyncs()) + 3;
    await until('three more resyncs', async () => (await resyncs()) >= target, 30_000, 100);

    // Each (resource, revision or job, event) once: one delivery, one id; none missing, nothing else.
    const bodies = hook.delivered();
    expect(hook.requests.length).toBe(bodies.length);
    const told = bodies.map((b) => `${String(b.type)} ${(b.resource as { name: string }).name}`).sort();
    const expected = [
      ...GOOD.flatMap((n) => [
        `rollout_succeeded ${n}`,
        `rollout_succeeded ${n}`,
        `write_sent ${n}`,
        `write_sent ${n}`,
      ]),
      `held ${BAD}`,
      `rollout_failed ${BAD}`,
      `write_sent ${BAD}`,
    ].sort();
    expect(told).toEqual(expected);
    expect(new Set(bodies.map((b) => b.id)).size).toBe(bodies.length);
    // A rollout's delivery id is its resource, type and revision: whichever replica recorded or read it.
    for (const b of bodies.filter((x) => String(x.type).startsWith('rollout_'))) {
      expect(b.id).toBe(eventId(b.resource as { kind: string; name: string }, String(b.type), String(b.revision_id)));
    }
    for (const n of GOOD) {
      const live = e.store.allDeployments().find((d) => d.name === n)!;
      const revisions = delivered('rollout_succeeded', n).map((b) => b.revision_id);
      expect(new Set(revisions).size, n).toBe(2);
      expect(revisions, n).toContain(live.latest_revision_id);
    }
    // The standby sent what happened after the kill: at least the end of the rollouts that were building.
    expect(two.lines.some((l) => l.msg === 'notification delivered' && l.event === 'rollout_succeeded')).toBe(true);
  }, 240_000);
});
