// Fencing tokens through the built binary: after Redis loses its data (FLUSHALL on a redis-server of the test's own), the
// daemon takes the lease again with a higher token, shown in /status, and a job stamped by the former leader is dropped.
import { afterAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { rm } from 'node:fs/promises';
import { buildJobData, QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import { startEmulator } from '../../src/emulator/server.js';
import { decidedWrite, deployment } from '../helpers/job-fixtures.js';
import {
  dockerDeploymentYaml,
  killAllConverge,
  redisChild,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { atEnd, daemonOf } from './scoped.js';

afterAll(async () => {
  await killAllConverge();
});

interface LeaseDoc {
  leading: boolean;
  leader: { holder: string; token: number; since: string } | null;
}

async function leaseOf(daemon: DaemonHandle): Promise<LeaseDoc> {
  return (await daemon.status()).lease as LeaseDoc;
}

describe('fencing tokens across a Redis that lost its data', () => {
  it('FLUSHALL: the daemon leads again with a higher token (/status), and a job stamped with the former token is dropped, nothing sent', async (t) => {
    const redis = await redisChild();
    atEnd(t, () => redis.remove());
    const e = await startEmulator({ buildMs: 0, lenientCreate: true });
    atEnd(t, () => e.close());
    const dir = await tempDir('fencing');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, { 'web.yaml': dockerDeploymentYaml('fenced-web', { maxScale: 2 }) });
    const prefix = testPrefix('fencing');
    const daemon = await daemonOf(t, dir, [
      '--api-url',
      e.url,
      '--redis-url',
      redis.url,
      '--redis-prefix',
      prefix,
      '--lease',
      '3s',
      '--resync',
      '1h',
      '--log-level',
      'info',
    ]);
    const before = await until(
      'the daemon to lead',
      async () => {
        const lease = await leaseOf(daemon);
        return lease.leading ? lease.leader!.token : undefined;
      },
      20_000,
      50,
    );
    expect(Number.isSafeInteger(before)).toBe(true);

    const own = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    atEnd(t, () => own.quit());
    await own.flushall();
    // The lease key went with the rest: the renew finds it gone, the daemon stands by and takes the lease again.
    const after = await until(
      'the daemon to lead again with a new token',
      async () => {
        const lease = await leaseOf(daemon);
        return lease.leading && lease.leader!.token !== before ? lease.leader!.token : undefined;
      },
      20_000,
      50,
    );
    expect(after).toBeGreaterThan(before);
    expect(Number.isSafeInteger(after)).toBe(true);

    // A job of the former leader (its token) and one of the leader now: the first is dropped, the second runs.
    const queue = new Queue(QUEUE_NAME, { connection: { url: redis.url }, prefix });
    atEnd(t, () => queue.close());
    const stale = {
      ...buildJobData(deployment('fenced-ghost', 1), 'create-deployment', {
        origin: 'test',
        write: decidedWrite(deployment('fenced-ghost', 1)),
      }),
      fence: before,
    };
    const current = {
      ...buildJobData(deployment('fenced-current', 1), 'create-deployment', {
        origin: 'test',
        write: decidedWrite(deployment('fenced-current', 1)),
      }),
      fence: after,
    };
    const staleJob = await queue.add(stale.operation, stale);
    const currentJob = await queue.add(current.operation, current);
    const dropped = await daemon.waitForLine(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('job not run:') && l.key === 'Deployment/fenced-ghost',
    );
    expect(dropped.msg).toBe(
      `job not run: enqueued by a former leader (fencing token ${before}, current ${after}); dropped, nothing sent`,
    );
    await until(
      'both jobs to finish',
      async () =>
        (await staleJob.getState()) === 'completed' && ['completed', 'failed'].includes(await currentJob.getState()),
      20_000,
      50,
    );
    expect(
      daemon.lines.some(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('job not run:') && l.key === 'Deployment/fenced-current',
      ),
    ).toBe(false);
    const names = e.store.allDeployments().map((d) => d.name);
    expect(names).not.toContain('fenced-ghost');
    expect(names).toContain('fenced-current');
  }, 60_000);
});
