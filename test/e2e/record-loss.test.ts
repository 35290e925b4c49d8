// A Redis that loses the event log under a running daemon (FLUSHALL on a redis-server of the test's own, no
// persistence): the loss is reported once (converge_applied_state_lost, as the applied state's), the daemon rebuilds the
// rows and their projection from the service, and sends no write because the history is missing.
import { rm } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import {
  dockerDeploymentYaml,
  killAllConverge,
  redisChild,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { atEnd, daemonOf } from './scoped.js';

afterAll(async () => {
  await killAllConverge();
});

async function resyncs(daemon: DaemonHandle, more: number): Promise<void> {
  const count = async (): Promise<number> =>
    ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> } | null)?.byTrigger.resync ??
    0;
  const target = (await count()) + more;
  await until(`${more} more resync reconciles`, async () => (await count()) >= target, 30_000, 100);
}

interface Entry {
  at: string;
  type: string;
  job: { id: string } | null;
}

async function history(daemon: DaemonHandle, key: string): Promise<Entry[]> {
  return ((await (await fetch(`${daemon.url}/history/${key}`)).json()) as { events: Entry[] }).events;
}

describe('a Redis that loses the event log', () => {
  it('is reported once; the rows and the projection come back from the service; nothing is written', async (t) => {
    const redis = await redisChild({ extraArgs: ['--appendonly', 'no'] });
    atEnd(t, () => redis.remove());
    const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    atEnd(t, () => raw.quit());
    const e = await startEmulator({ buildMs: 0 });
    atEnd(t, () => e.close());
    const dir = await tempDir('record-loss');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, {
      'web.yaml': dockerDeploymentYaml('web', { maxScale: 2 }),
      'api.yaml': dockerDeploymentYaml('api', { maxScale: 1 }),
    });
    const prefix = 'record-loss';
    const daemon = await daemonOf(t, dir, [
      '--api-url',
      e.url,
      '--redis-url',
      redis.url,
      '--redis-prefix',
      prefix,
      '--resync',
      '1s',
      '--health-poll',
      '200ms',
      '--log-level',
      'info',
    ]);

    await until(
      'both created, healthy and in the projection',
      async () => {
        const rows = (await daemon.status()).resources;
        return (
          rows.length === 2 &&
          rows.every(
            (r) => r.state === 'synced' && (r as unknown as { health: { status: string } }).health.status === 'healthy',
          ) &&
          (await raw.hlen(`${prefix}:record:state`)) === 2
        );
      },
      30_000,
      100,
    );
    const created = await history(daemon, 'Deployment/web');
    expect(created.map((x) => x.type)).toEqual(expect.arrayContaining(['decided', 'write_enqueued', 'write_done']));

    // Everything converge kept in Redis goes at once: the log, the histories, the projection, the applied state, the jobs.
    const flushedAt = new Date().toISOString();
    const writesBefore = e.requestLog.filter((r) => r.method !== 'GET').length;
    const sentBefore = e.requestLog.length;
    expect(await raw.flushall()).toBe('OK');
    const lost = await daemon.waitForLine((l) => String(l.msg).startsWith("Redis lost converge's records"), 20_000);
    expect(lost.level).toBe(50);

    // The next reconciles rebuild the rows from the service, and write their states again: the projection is back.
    await until(
      'the projection rebuilt from the service',
      async () => (await raw.hlen(`${prefix}:record:state`)) === 2,
      30_000,
      100,
    );
    await resyncs(daemon, 3);
    const rows = (await daemon.status()).resources;
    expect(rows.map((r) => [r.key, r.state]).sort()).toEqual([
      ['Deployment/api', 'synced'],
      ['Deployment/web', 'synced'],
    ]);
    // The service was read (the reconciles listed it), never written: the missing history decides nothing.
    expect(e.requestLog.length).toBeGreaterThan(sentBefore);
    expect(e.requestLog.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`)).toHaveLength(
      writesBefore,
    );
    // The history lost its entries with Redis and starts anew: at most a changed decision since, never a write.
    const after = await history(daemon, 'Deployment/web');
    expect(after.filter((x) => x.at < flushedAt)).toEqual([]);
    expect(after.map((x) => x.type).filter((type) => type !== 'decided')).toEqual([]);

    // Reported once: one error line, the gauge, and /status.
    expect(daemon.lines.filter((l) => String(l.msg).startsWith("Redis lost converge's records"))).toHaveLength(1);
    expect(
      parsePrometheusText(await daemon.metrics()).find((s) => s.name === 'converge_applied_state_lost')?.value,
    ).toBe(1);
    expect((await daemon.status()).appliedState).toMatchObject({ lost: true, losses: 1 });
  }, 120_000);
});
