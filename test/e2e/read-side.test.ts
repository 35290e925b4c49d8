// What /status shows is read from Redis (issue 48 item 2): a standby's /status lists the leader's resources, plan,
// orphans, holds, pending deletes, failed builds' log lines and last reconcile; an operator request a leader kept and
// did not serve is served by the next one; a failed build the daemon did not see happen (apply's) shows its log lines.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { requestsKey } from '../../src/store/operator-requests.js';
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
} from './helpers.js';

const HOOK = 'hook-token-read-side-7c2d';
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface Doc {
  lease: { replica: string; leading: boolean } | null;
  resources: Array<{ key: string; hold?: unknown; sync: { reason: string } }>;
  plan: { summary: Record<string, number> } | null;
  orphans: string[];
  held: string[];
  deletesPending: string[];
  failedBuildLogs: Record<string, { revisionId: string; lines: string[] }>;
  lastReconcile: { id: number; ok: boolean; finishedAt: string } | null;
  lastSuccessfulReconcileAt: string | null;
  reconciles: { total: number } | null;
  pendingRequests: Array<{ id: string; by: string; retryFailed?: unknown }>;
}

const doc = async (daemon: DaemonHandle): Promise<Doc> => (await daemon.status()) as unknown as Doc;

/** What a standby must show as the leader does: everything but what describes the replica itself. */
function shared(d: Doc): unknown {
  return {
    resources: [...d.resources].sort((a, b) => a.key.localeCompare(b.key)),
    plan: d.plan,
    orphans: d.orphans,
    held: d.held,
    deletesPending: d.deletesPending,
    failedBuildLogs: d.failedBuildLogs,
    lastReconcile: d.lastReconcile,
    lastSuccessfulReconcileAt: d.lastSuccessfulReconcileAt,
    reconciles: d.reconciles,
    pendingRequests: d.pendingRequests,
  };
}

async function setup(
  label: string,
  buildFail: RegExp,
): Promise<{ e: RunningEmulator; dir: string; prefix: string; common: string[] }> {
  const e = await startEmulator({ buildMs: 300, buildFail });
  const dir = await tempDir(label);
  const prefix = testPrefix(label);
  cleanups.push(
    () => e.close(),
    () => dropPrefix(prefix),
    () => rm(dir, { recursive: true, force: true }),
  );
  return { e, dir, prefix, common: ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix] };
}

describe('the read side: /status from Redis', () => {
  it("a standby's /status equals the leader's; a request the leader kept and did not serve is served by the next leader", async () => {
    const { e, dir, prefix, common } = await setup('readside', /^rs-bad$/);
    await writeFiles(dir, {
      'rs-good.yaml': dockerDeploymentYaml('rs-good', { maxScale: 1 }),
      'rs-gone.yaml': dockerDeploymentYaml('rs-gone', { maxScale: 1 }),
    });
    const created = await runConverge(['apply', dir, ...common]);
    expect(created.code, created.stderr).toBe(0);
    // An orphan: live, declared by no manifest here and owned by another prefix's converge.
    const elsewhere = await tempDir('readside-other');
    cleanups.push(
      () => rm(elsewhere, { recursive: true, force: true }),
      () => dropPrefix(`${prefix}-other`),
    );
    await writeFiles(elsewhere, { 'rs-orphan.yaml': dockerDeploymentYaml('rs-orphan', { maxScale: 1 }) });
    const orphan = await runConverge(['apply', elsewhere, ...common.slice(0, -1), `${prefix}-other`]);
    expect(orphan.code, orphan.stderr).toBe(0);
    // rs-gone's delete waits for a person; rs-bad is created by the leader, whose poller sees its build fail.
    await rm(join(dir, 'rs-gone.yaml'));
    await writeFiles(dir, { 'rs-bad.yaml': dockerDeploymentYaml('rs-bad', { maxScale: 1 }) });

    const args = (id: string): string[] => [
      ...common,
      '--replica-id',
      id,
      '--resync',
      '1h',
      '--lease',
      '2s',
      '--health-poll',
      '200ms',
      '--debounce',
      '50ms',
      '--prune',
      '--prune-mode',
      'confirm',
      '--shutdown-timeout',
      '5s',
      '--log-level',
      'info',
    ];
    const first = await startDaemon(dir, args('rs-a'), { CONVERGE_WEBHOOK_TOKEN: HOOK });
    await until('rs-a to lead', async () => (await doc(first)).lease?.leading === true, 20_000, 50);
    const second = await startDaemon(dir, args('rs-b'), { CONVERGE_WEBHOOK_TOKEN: HOOK });
    await until('rs-b to stand by', async () => (await doc(second)).lease?.leading === false, 20_000, 50);
    const settled = async (d: DaemonHandle): Promise<Doc | undefined> => {
      const s = await doc(d);
      const ready =
        s.failedBuildLogs['Deployment/rs-bad']?.lines.length &&
        s.deletesPending.includes('Deployment/rs-gone') &&
        s.orphans.includes('Deployment/rs-orphan') &&
        s.held.includes('Deployment/rs-bad');
      return ready ? s : undefined;
    };
    const leader = await until(
      'the leader: rs-bad held with its log lines, rs-gone pending, rs-orphan an orphan',
      () => settled(first),
      60_000,
      100,
    );
    expect(leader.plan?.summary).toMatchObject({ orphan: 1 });
    expect(leader.lastReconcile?.ok).toBe(true);

    // The standby reconciles nothing itself: it shows the leader's record, field for field (a request answered by
    // the leader while both are read would differ: none is sent).
    const both = await until(
      'both replicas read the same record',
      async () => {
        const [a, b] = await Promise.all([doc(first), doc(second)]);
        return JSON.stringify(shared(a)) === JSON.stringify(shared(b)) ? [a, b] : undefined;
      },
      10_000,
      100,
    ).catch(async () => [await doc(first), await doc(second)] as const);
    expect(shared(both[1])).toEqual(shared(both[0]));
    expect(both[1].lease).toMatchObject({ replica: 'rs-b', leading: false });
    expect(both[1].plan?.summary).toMatchObject({ orphan: 1, delete: 1 });

    // A request the leader kept in Redis and died before serving (as POST /reconcile keeps it before its reconcile):
    // shown on both replicas, and served by the next leader, which releases rs-bad's hold and rebuilds it.
    const redis = rawRedis();
    cleanups.push(async () => redis.disconnect());
    const revisionsBefore = e.store.allDeployments().find((d) => d.name === 'rs-bad')!.latest_revision_id;
    await first.kill('SIGKILL');
    await redis.hset(
      requestsKey(prefix),
      'req-1',
      JSON.stringify({ at: new Date().toISOString(), by: 'rs-a', retryFailed: ['rs-bad'] }),
    );
    await until('rs-b to take over', async () => (await doc(second)).lease?.leading === true, 20_000, 50);
    await until(
      'the kept request served and removed',
      async () => (await redis.hlen(requestsKey(prefix))) === 0,
      30_000,
      100,
    );
    expect(second.lines.some((l) => l.msg === 'operator requests a former leader did not serve: served now')).toBe(
      true,
    );
    await until(
      'rs-bad rebuilt: a new revision',
      () => e.store.allDeployments().find((d) => d.name === 'rs-bad')!.latest_revision_id !== revisionsBefore,
      30_000,
      100,
    );
    expect((await doc(second)).pendingRequests).toEqual([]);
    // The new leader numbers its reconciles on from the former leader's record.
    expect((await doc(second)).lastReconcile!.id).toBeGreaterThan(leader.lastReconcile!.id);

    // A request sent to the leader is kept until its reconcile served it, then no longer.
    const asked = await fetch(`${second.url}/reconcile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK}` },
      body: '{}',
    });
    expect(asked.status).toBe(200);
    expect(await redis.hlen(requestsKey(prefix))).toBe(0);
  }, 180_000);

  it('a failed build that converge apply met (the daemon did not see it happen) shows its log lines on /status', async () => {
    const { dir, common } = await setup('readside-apply', /^ap-bad$/);
    await writeFiles(dir, { 'ap-bad.yaml': dockerDeploymentYaml('ap-bad', { maxScale: 1 }) });
    const applied = await runConverge(['apply', dir, '--wait', ...common]);
    expect(applied.stdout + applied.stderr).toContain('BUILD_FAILED');
    const daemon = await startDaemon(dir, [
      ...common,
      '--resync',
      '1h',
      '--health-poll',
      '200ms',
      '--debounce',
      '50ms',
    ]);
    const logs = await until(
      "the failed build's log lines on /status",
      async () => {
        const s = await doc(daemon);
        return s.failedBuildLogs['Deployment/ap-bad']?.lines.length
          ? s.failedBuildLogs['Deployment/ap-bad']
          : undefined;
      },
      30_000,
      100,
    );
    expect(logs.lines.join('\n')).toContain('Build failed');
    const row = (await doc(daemon)).resources.find((r) => r.key === 'Deployment/ap-bad') as unknown as {
      health: { revisionId?: string };
    };
    expect(logs.revisionId).toBe(row.health.revisionId);
  }, 120_000);
});
