// A real EventLogStore on a test prefix of its own for one describe block: connected before its tests, its keys dropped after.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { EventLogStore } from '../../src/store/event-log.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { dropPrefix, REDIS_URL, testPrefix } from './redis.js';

export interface EventLogFixture {
  readonly prefix: string;
  /** the store (after beforeAll) */
  store(): EventLogStore;
  /** its Redis connection (after beforeAll) */
  redis(): Redis;
}

/** Registers the hooks in the calling describe block; read `store()` inside tests. */
export function eventLogStoreOnTestPrefix(label: string): EventLogFixture {
  const prefix = testPrefix(label);
  let redis: Redis | undefined;
  let store: EventLogStore | undefined;
  beforeAll(async () => {
    redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    store = new EventLogStore(redis, prefix);
  });
  afterAll(async () => {
    if (redis) await closeRedis(redis);
    await dropPrefix(prefix);
  });
  return {
    prefix,
    store: () => store ?? fail('store'),
    redis: () => redis ?? fail('connection'),
  };
}

function fail(what: string): never {
  throw new Error(`the event log fixture's ${what} is read before its beforeAll ran`);
}
