// A real EventLogStore on a test prefix of its own for one describe block: connected before its tests, its keys dropped after; states seeded and removed through the one fold.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { ResourceState } from '../../src/core/resource-state-model.js';
import { leaseKey } from '../../src/leader/lease.js';
import { EventLogStore } from '../../src/store/event-log.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
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

/**
 * Writes `states` as they are through the one fold (src/store/resource-folds.ts: each a seed folded with no event),
 * for resources with no state yet: what a test starts from, written by the one writer of states.
 */
export async function seedStates(redis: Redis, prefix: string, states: readonly ResourceState[]): Promise<void> {
  const folds = new ResourceFolds(redis, prefix, leaseKey(prefix));
  const meta = { at: new Date().toISOString(), by: 'test' };
  const outcomes = await folds.fold(states.map((state) => ({ key: state.key, events: [], meta, seed: state })));
  const missed = outcomes.filter((o) => o.status !== 'written');
  if (missed.length > 0) throw new Error(`seedStates: ${missed.map((o) => o.key).join(', ')} had a state already`);
}

/** Removes the states of `keys` through the one fold (a resource no longer declared: its history stays). */
export async function removeStates(redis: Redis, prefix: string, keys: readonly string[]): Promise<void> {
  const folds = new ResourceFolds(redis, prefix, leaseKey(prefix));
  const meta = { at: new Date().toISOString(), by: 'test' };
  await folds.fold(keys.map((key) => ({ key, events: [], meta, remove: true as const })));
}
