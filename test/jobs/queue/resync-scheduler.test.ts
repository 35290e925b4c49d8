// The resync schedule in Redis (src/jobs/queue/resync-scheduler.ts): its first cycle one interval after it is made, not at
// once (the daemon's start has just reconciled); a replica that starts later leaves it where it is; a new interval or a
// schedule lost from Redis starts one interval from then.
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { dropPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import {
  RESYNC_QUEUE,
  RESYNC_SCHEDULER_ID,
  startResync,
  type Resync,
} from '../../../src/jobs/queue/resync-scheduler.js';
import { closeRedis, connectProducer } from '../../../src/store/redis.js';

describe('the resync schedule', () => {
  const opened: Array<{ close(): Promise<unknown> }> = [];
  const prefixes: string[] = [];
  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) await handle.close();
    for (const prefix of prefixes.splice(0)) await dropPrefix(prefix);
  });

  /** A prefix of this test's own, removed after it. */
  function freshPrefix(label: string): string {
    const prefix = testPrefix(label);
    prefixes.push(prefix);
    return prefix;
  }

  /** A replica's resync on `prefix`, every `everyMs`, counting the cycles it runs. */
  async function replica(prefix: string, everyMs: number, cycles: string[] = []): Promise<Resync> {
    const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    opened.push({ close: () => closeRedis(redis) });
    const resync = await startResync({
      redis: { redisUrl: REDIS_URL, redisPrefix: prefix },
      producer: redis,
      everyMs,
      jitter: 0,
      run: async (cycle) => void cycles.push(cycle),
    });
    opened.push(resync);
    return resync;
  }

  /** When the schedule's next cycle is due (ms since 1970), by BullMQ's public API. */
  async function nextCycle(prefix: string): Promise<number | undefined> {
    const redis: Redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    const queue = new Queue(RESYNC_QUEUE, { connection: redis, prefix });
    try {
      return (await queue.getJobScheduler(RESYNC_SCHEDULER_ID))?.next;
    } finally {
      await queue.close();
      await closeRedis(redis);
    }
  }

  it('the first cycle is one interval after the schedule is made; a replica that starts later does not move it', async () => {
    const prefix = freshPrefix('resync-first');
    const cycles: string[] = [];
    const before = Date.now();
    await replica(prefix, 60_000, cycles);
    const next = (await nextCycle(prefix))!;
    expect(next).toBeGreaterThanOrEqual(before + 60_000);
    // Another replica with the same interval: the schedule stays.
    await replica(prefix, 60_000);
    expect(await nextCycle(prefix)).toBe(next);
    expect(cycles).toEqual([]);

    // A new interval: its first cycle is one new interval from then.
    const changed = Date.now();
    await replica(prefix, 120_000);
    expect((await nextCycle(prefix))!).toBeGreaterThanOrEqual(changed + 120_000);
  });

  it('cycles come every interval after the first', async () => {
    const prefix = freshPrefix('resync-cycles');
    const cycles: string[] = [];
    const started = Date.now();
    await replica(prefix, 300, cycles);
    await expect.poll(() => cycles.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(new Set(cycles).size).toBe(cycles.length);
    // Each cycle's id names when it was due: none before one interval had passed.
    const due = cycles.map((cycle) => Number(cycle.split(':').at(-1)));
    expect(Math.min(...due)).toBeGreaterThanOrEqual(started + 300);
  });
});
