// The one clock on the real Redis: redisNow reads Redis' TIME, and readClockSkew measures a wall clock against it within half its round trip.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { readClockSkew, redisNow } from '../../src/store/clock.js';
import { rawRedis } from '../helpers/redis.js';

describe('the one clock', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = rawRedis();
  });
  afterAll(() => {
    redis.disconnect();
  });

  it("redisNow is Redis' TIME in ms, between two readings of TIME itself", async () => {
    const [s1, us1] = await redis.time();
    const now = await redisNow(redis);
    const [s2, us2] = await redis.time();
    expect(now).toBeGreaterThanOrEqual(Math.floor((Number(s1) * 1e6 + Number(us1)) / 1000));
    expect(now).toBeLessThanOrEqual(Math.floor((Number(s2) * 1e6 + Number(us2)) / 1000));
  });

  it('a wall clock 120 s ahead reads as +120 s, one 40 days behind as -40 days, each to within half the round trip', async () => {
    for (const shift of [120_000, -40 * 24 * 3600_000]) {
      // Redis and this process share the host's clock: the shift is the whole skew.
      const reading = await readClockSkew(redis, () => Date.now() + shift);
      expect(Math.abs(reading.skewMs - shift)).toBeLessThanOrEqual(reading.roundTripMs / 2 + 2);
    }
  });
});
