// Test-run setup of the integration and e2e tiers: checks Redis answers, gives this run its own key prefix, and
// removes the run's Redis keys afterwards. Both tiers list this file; it sets up once per run.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** Set on the first setup of the run (vitest loads a global setup file once per project that lists it). */
const RUN = Symbol.for('converge.test.redis-run');
type Holder = { [RUN]?: string };

export async function setup(): Promise<(() => Promise<void>) | undefined> {
  const holder = globalThis as Holder;
  if (holder[RUN]) return undefined;
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `{cvt-${randomBytes(4).toString('hex')}}`;
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`tests need Redis at ${url} (set REDIS_URL): ${(error as Error).message}`, { cause: error });
  } finally {
    redis.disconnect();
  }
  holder[RUN] = prefix;
  process.env.CONVERGE_TEST_REDIS_URL = url;
  process.env.CONVERGE_TEST_PREFIX = prefix;
  return async () => {
    const cleaner = new Redis(url, { maxRetriesPerRequest: 1 });
    let cursor = '0';
    do {
      const [next, keys] = await cleaner.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await cleaner.del(...keys);
    } while (cursor !== '0');
    cleaner.disconnect();
    delete holder[RUN];
  };
}
