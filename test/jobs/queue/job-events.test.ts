// The job-events feed through BullMQ's public API: every event added after watchEvents resolves reaches it, none from before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueEventsProducer } from 'bullmq';
import type { Redis } from 'ioredis';
import { dropPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import { QUEUE_NAME } from '../../../src/jobs/queue/jobs.js';
import { openJobs, type Jobs } from '../../../src/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../../src/store/redis.js';

describe('job events', () => {
  const prefix = testPrefix('events');
  const settings = {
    redisUrl: REDIS_URL,
    redisPrefix: prefix,
    attempts: 1,
    backoff: 10,
    concurrency: 1,
    globalRate: 0,
  };
  let jobs: Jobs;
  let redis: Redis;
  let producer: QueueEventsProducer;

  beforeAll(async () => {
    jobs = await openJobs(settings);
    redis = await connectProducer(settings);
    producer = new QueueEventsProducer(QUEUE_NAME, { connection: redis, prefix });
  });
  afterAll(async () => {
    await producer.close();
    await jobs.close();
    await closeRedis(redis);
    await dropPrefix(prefix);
  });

  it.each([1, 2, 3, 4, 5])(
    'run %i: an event published the moment watchEvents resolves is delivered; one published before is not',
    async (run) => {
      await producer.publishEvent({ eventName: 'completed', jobId: `before-${run}`, returnvalue: '{}' });
      const completed: string[] = [];
      const feed = await jobs.watchEvents(
        { completed: (jobId) => completed.push(jobId), failed: () => undefined },
        `events-test-${run}`,
      );
      try {
        // No await in between: the reader must already be reading.
        await producer.publishEvent({ eventName: 'completed', jobId: `after-${run}`, returnvalue: '{}' });
        await expect.poll(() => completed, { timeout: 5_000 }).toContain(`after-${run}`);
        expect(completed).not.toContain(`before-${run}`);
      } finally {
        await feed.close();
      }
    },
  );
});
