// Jobs.queueCounts: the reconcile queue's jobs by state, read from Redis (what converge_queue_jobs exports).
import { afterAll, describe, expect, it } from 'vitest';
import { openJobs } from '../../src/jobs/open-jobs.js';
import { data } from '../helpers/job-fixtures.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

describe('Jobs.queueCounts', () => {
  const prefix = testPrefix('queue-counts');
  afterAll(() => dropPrefix(prefix));

  it('counts the waiting jobs of every process on the prefix, each state named, zeros included', async () => {
    const jobs = await openJobs({
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      attempts: 3,
      backoff: 10,
      concurrency: 1,
      globalRate: 0,
    });
    const other = await openJobs({
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      attempts: 3,
      backoff: 10,
      concurrency: 1,
      globalRate: 0,
    });
    try {
      expect(await jobs.queueCounts()).toEqual({ wait: 0, prioritized: 0, delayed: 0, active: 0, failed: 0 });
      // No worker runs: what is added waits. Another handle on the prefix (another replica) adds some too.
      await jobs.enqueuer.enqueue([data('a', 1), data('b', 1)]);
      await other.enqueuer.enqueue([data('c', 1)]);
      const counts = await jobs.queueCounts();
      expect(counts.wait + counts.prioritized).toBe(3);
      expect(counts).toMatchObject({ delayed: 0, active: 0, failed: 0 });
      expect(await other.queueCounts()).toEqual(counts);
    } finally {
      await other.close();
      await jobs.close();
    }
  });
});
