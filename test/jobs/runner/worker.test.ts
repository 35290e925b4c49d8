// Worker settings: jittered backoff bounds, Retry-After floors, and the global rate limiter shared by workers.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { DeploymentResource } from '../../../src/core/model.js';
import { ServiceClient } from '../../../src/service/client.js';
import { startEmulator } from '../../../src/emulator/server.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import { buildJobData, QUEUE_NAME } from '../../../src/jobs/queue/jobs.js';
import { decidedWrite, deployment } from '../../helpers/job-fixtures.js';
import { openJobs } from '../../../src/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../../src/store/redis.js';
import { jitteredBackoff, MAX_BACKOFF_MS, RetryableJobError } from '../../../src/jobs/runner/processor.js';
import { limiterFor } from '../../../src/jobs/runner/worker.js';

describe('jitteredBackoff', () => {
  const job = { opts: { backoff: { type: 'converge-jitter', delay: 1_000 } } };

  it('draws in [0, base * 2^(attempt-1)) and caps the ceiling', () => {
    const top = jitteredBackoff(() => 0.999_999);
    expect(top(1, 'converge-jitter', new Error('x'), job)).toBe(999);
    expect(top(2, 'converge-jitter', new Error('x'), job)).toBe(1_999);
    expect(top(4, 'converge-jitter', new Error('x'), job)).toBe(7_999);
    expect(top(30, 'converge-jitter', new Error('x'), job)).toBe(MAX_BACKOFF_MS - 1);
    const bottom = jitteredBackoff(() => 0);
    expect(bottom(5, 'converge-jitter', new Error('x'), job)).toBe(0);
    const half = jitteredBackoff(() => 0.5);
    expect(half(3, 'converge-jitter', new Error('x'), job)).toBe(2_000);
  });

  it("caps the ceiling at the worker's max_backoff (at most MAX_BACKOFF_MS); a Retry-After is still waited out", () => {
    const top = jitteredBackoff(() => 0.999_999, 2_000);
    expect(top(1, 'converge-jitter', new Error('x'), job)).toBe(999);
    expect(top(2, 'converge-jitter', new Error('x'), job)).toBe(1_999);
    expect(top(30, 'converge-jitter', new Error('x'), job)).toBe(1_999);
    expect(jitteredBackoff(() => 0.999_999, 10 * MAX_BACKOFF_MS)(30, 'converge-jitter', new Error('x'), job)).toBe(
      MAX_BACKOFF_MS - 1,
    );
    expect(jitteredBackoff(() => 0, 2_000)(30, 'converge-jitter', new RetryableJobError('503', 60_000), job)).toBe(
      60_000,
    );
  });

  it('never waits less than a Retry-After the service sent', () => {
    const bottom = jitteredBackoff(() => 0);
    expect(bottom(1, 'converge-jitter', new RetryableJobError('503', 3_000), job)).toBe(3_000);
    expect(bottom(1, 'converge-jitter', new RetryableJobError('503', 10 * MAX_BACKOFF_MS), job)).toBe(MAX_BACKOFF_MS);
  });
});

/** The emulator, the jobs of `prefix` on it with `runners` job runners, and the queue read directly; `close` ends all. */
async function runnersRig(
  prefix: string,
  worker: { concurrency: number; attempts: number; globalRate: number },
  runners: number,
) {
  const emulator = await startEmulator({ buildMs: 0 });
  const settings = { redisUrl: REDIS_URL, redisPrefix: prefix, backoff: 20, ...worker };
  const jobs = await openJobs(settings);
  const redis = await connectProducer(settings);
  const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
  const clients = Array.from({ length: runners }, () => new ServiceClient({ baseUrl: emulator.url }));
  const started = await Promise.all(clients.map((client, i) => jobs.startRunner({ client, env: {}, name: `w${i}` })));
  return {
    jobs,
    queue,
    runners: started,
    async close() {
      await Promise.all(started.map((w) => w.close()));
      await Promise.all(clients.map((c) => c.close()));
      await queue.close();
      await closeRedis(redis);
      await jobs.close();
      await emulator.close();
    },
  };
}

describe('global rate', () => {
  const prefix = testPrefix('rate');
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it('limiterFor: the set rate, else a ceiling that only makes 429 pauses queue-wide', () => {
    expect(limiterFor(5)).toEqual({ max: 5, duration: 1_000 });
    expect(limiterFor(0).max).toBeGreaterThan(1e8);
  });

  it('two workers together start at most global-rate jobs in any second', async () => {
    const rig = await runnersRig(prefix, { concurrency: 5, attempts: 3, globalRate: 4 }, 2);
    const { jobs, queue } = rig;
    try {
      const started = performance.now();
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const resource: DeploymentResource = {
          kind: 'Deployment',
          name: `rated-${i}`,
          location: { file: 'r.yaml', line: 1, column: 1 },
          suspend: false,
          spec: { source: 'external_docker', source_revision_config: { image_uri: `docker.io/r:${i}` } },
        };
        const [enqueued] = await jobs.enqueuer.enqueue([
          buildJobData(resource, 'create-deployment', { origin: 'test', write: decidedWrite(resource) }),
        ]);
        ids.push(enqueued!.jobId);
      }
      const finished: Job[] = [];
      for (const id of ids) {
        for (;;) {
          const job = await Job.fromId(queue, id);
          if (job?.finishedOn) {
            finished.push(job);
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const elapsed = performance.now() - started;
      expect(finished.every((j) => j.returnvalue?.outcome === 'created')).toBe(true);
      expect(new Set(finished.map((j) => j.processedBy)).size).toBe(2);
      // BullMQ's limiter counts starts in fixed 1 s windows on Redis's clock: 10 jobs at 4 a second need 3 windows,
      // so at least 2 s pass on this clock from before the first enqueue to after the last job ends (load only adds).
      expect(elapsed).toBeGreaterThanOrEqual(2 * 1_000 - 5);
    } finally {
      await rig.close();
    }
  }, 30_000);
});

describe('job events', () => {
  const prefix = testPrefix('events');
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it('tells a job done before BullMQ records it completed, so the daemon knows it done before Redis says so', async () => {
    const rig = await runnersRig(prefix, { concurrency: 1, attempts: 1, globalRate: 0 }, 1);
    const { jobs, runners } = rig;
    const runner = runners[0]!;
    // A connection without auto-pipelining: a command is written to its socket when it is called.
    const plain = new Redis(REDIS_URL);
    await new Promise((resolve) => plain.once('ready', resolve));
    try {
      const told: string[] = [];
      // The job's finishedOn in Redis, asked the moment 'done' is told: the command is written to the socket at once,
      // before the worker's completion (sent after the processor returns), so Redis answers it first.
      let finishedAtDone: Promise<string | null> | undefined;
      runner.onJob((event) => {
        told.push(event.type === 'done' ? `done ${event.key}` : event.type);
        if (event.type === 'done') finishedAtDone = plain.hget(`${prefix}:${QUEUE_NAME}:${event.jobId}`, 'finishedOn');
      });
      const resource = deployment('told', 1);
      const data = buildJobData(resource, 'create-deployment', {
        origin: 'test',
        desired: 'd'.repeat(64),
        write: decidedWrite(resource),
      });
      const [enqueued] = await jobs.enqueuer.enqueue([data]);
      await vi.waitFor(() => expect(told).toContain('completed'), { timeout: 20_000 });
      expect(told).toEqual(['started', 'done Deployment/told', 'completed']);
      // Still active in Redis: the daemon's finishedSince is set before the completion clears the deduplication id
      // an enqueue looks up, so a reconcile never finds the job neither in flight nor done and enqueues it again.
      expect(await finishedAtDone).toBeNull();
      expect(await plain.hget(`${prefix}:${QUEUE_NAME}:${enqueued!.jobId}`, 'finishedOn')).not.toBeNull();
    } finally {
      plain.disconnect();
      await rig.close();
    }
  }, 30_000);
});
