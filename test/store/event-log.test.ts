// The resource event log on the real Redis: entries and states in one write, history newest first with --limit and --since, the per-resource bound under 10,000 entries, the log's memory, the age bound on Redis' clock, and nothing but names and ids in keys.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Redis } from 'ioredis';
import type { RecordedEvent } from '../../src/core/resource-record.js';
import type { ResourceState } from '../../src/core/resource-state-model.js';
import {
  EventLogStore,
  HISTORY_MAX_ENTRIES,
  LOG_MAX_AGE_MS,
  LOG_MAX_ENTRIES,
  recordKeys,
} from '../../src/store/event-log.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { redisNow } from '../../src/store/clock.js';
import { dropPrefix, keysUnder, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { removeStates, seedStates } from '../helpers/event-log-store.js';

function entry(key: string, n: number, extra: Partial<RecordedEvent> = {}): RecordedEvent {
  const at = new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
  return {
    key,
    at,
    type: 'write_done',
    reason: 'updated',
    message: `job j${n} updated`,
    manifests: { kind: 'git', id: 'c1'.repeat(20) },
    job: { id: `j${n}` },
    revision: { id: `r${n}`, status: 'BUILDING' },
    by: 'replica-a',
    ...extra,
  };
}

const STATE = {
  key: 'Deployment/web',
  kind: 'Deployment',
  name: 'web',
  file: 'web.yaml',
  action: 'update',
  sync: { status: 'synced', reason: 'Applied', message: 'job j1 updated' },
  health: { status: 'progressing', reason: 'RevisionBuilding', message: 'revision r1 started', revisionId: 'r1' },
  reason: null,
  error: null,
  drift: null,
  heldAtLastGood: false,
  job: { id: 'j1', state: 'completed', operation: 'patch-deployment', outcome: 'updated' },
  appliedFrom: {
    kind: 'git',
    id: 'c1'.repeat(20),
    readAt: '2026-01-01T00:00:00.000Z',
    appliedAt: '2026-01-01T00:00:01.000Z',
  },
} as ResourceState;

describe('EventLogStore', () => {
  const prefix = testPrefix('record');
  let redis: Redis;
  let store: EventLogStore;

  beforeAll(async () => {
    redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    store = new EventLogStore(redis, prefix);
  });
  afterAll(async () => {
    await closeRedis(redis);
    await dropPrefix(prefix);
  });

  it('keeps entries and the state they made in one write, the history newest first', async () => {
    await store.append([
      entry('Deployment/web', 1),
      entry('Deployment/web', 2, { type: 'revision', reason: 'RevisionBuildFailed' }),
    ]);
    await seedStates(redis, prefix, [STATE]);
    const history = await store.history('Deployment/web');
    expect(history.map((e) => e.job?.id)).toEqual(['j2', 'j1']);
    expect(history[0]).toMatchObject({ type: 'revision', reason: 'RevisionBuildFailed', by: 'replica-a' });
    expect((await store.statesOf(['Deployment/web'])).get('Deployment/web')).toEqual(STATE);
    expect(await redis.type(recordKeys(prefix).log)).toBe('stream');
    await removeStates(redis, prefix, ['Deployment/web']);
    expect(await store.keysWithState()).toEqual([]);
  });

  it('reads --limit and --since', async () => {
    const key = 'Deployment/limits';
    await store.append([1, 2, 3, 4, 5].map((n) => entry(key, n)));
    expect((await store.history(key, { limit: 2 })).map((e) => e.job?.id)).toEqual(['j5', 'j4']);
    expect((await store.history(key, { since: entry(key, 4).at })).map((e) => e.job?.id)).toEqual(['j5', 'j4']);
  });

  it('keeps one resource at its bound under 10,000 entries; the log within what docs/daemon.md states', async () => {
    const key = 'Deployment/busy';
    for (let batch = 0; batch < 100; batch += 1) {
      await store.append(Array.from({ length: 100 }, (_, i) => entry(key, batch * 100 + i)));
    }
    expect(await redis.xlen(recordKeys(prefix).history(key))).toBe(HISTORY_MAX_ENTRIES);
    const history = await store.history(key, { limit: 1000 });
    expect(history).toHaveLength(HISTORY_MAX_ENTRIES);
    expect(history[0]!.job?.id).toBe('j9999');
    expect(await redis.xlen(recordKeys(prefix).log)).toBeLessThanOrEqual(LOG_MAX_ENTRIES + 100);
    const memory = await store.memoryUsage(key);
    // docs/daemon.md: one resource's history under 150 KB; the log about 4 MB per 10,000 entries (400 bytes each).
    expect(memory.history).toBeLessThan(150_000);
    expect(memory.log).toBeLessThan(4_000_000);
    console.log(
      `event log memory after 10,007 entries: log ${memory.log} bytes, one history (${HISTORY_MAX_ENTRIES}) ${memory.history} bytes`,
    );
  });

  it('drops entries older than the age bound at the next write', async () => {
    // Redis' clock 31 days on: the age bound is measured on it (src/store/clock.ts).
    const old = new EventLogStore(redis, `${prefix}-aged`, async () => (await redisNow(redis)) + 31 * 24 * 3600_000);
    const fresh = new EventLogStore(redis, `${prefix}-aged`);
    await fresh.append(Array.from({ length: 150 }, (_, i) => entry('Deployment/aged', i)));
    await old.append([entry('Deployment/aged', 999)]);
    // Redis trims whole nodes (100 entries each) with MINID ~: the entries of full old nodes are gone.
    expect(await redis.xlen(recordKeys(`${prefix}-aged`).log)).toBeLessThan(100);
    await dropPrefix(`${prefix}-aged`);
  });

  it("a writer whose wall clock runs 40 days ahead trims nothing: the age bound is Redis' clock, not the writer's", async () => {
    const skewed = `${prefix}-skewed`;
    await new EventLogStore(redis, skewed).append(Array.from({ length: 13 }, (_, i) => entry('Deployment/skewed', i)));
    // The next writer lives in a process whose Date runs 40 days ahead (the store made there, as a daemon makes it).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 40 * 24 * 3600_000 });
    try {
      await new EventLogStore(redis, skewed).append([entry('Deployment/skewed', 13)]);
    } finally {
      vi.useRealTimers();
    }
    expect(await redis.xlen(recordKeys(skewed).log)).toBe(14);
    expect(await redis.xlen(recordKeys(skewed).history('Deployment/skewed'))).toBe(14);
    await dropPrefix(skewed);
  });

  it('bounds every key of a resource: its history expires 30 days after its newest entry; its state and build log go when it is removed', async () => {
    const keys = recordKeys(prefix);
    await store.append([entry('Deployment/renamed-old', 1)]);
    await seedStates(redis, prefix, [{ ...STATE, key: 'Deployment/renamed-old', name: 'renamed-old' }]);
    await store.setBuildLog('Deployment/renamed-old', { revisionId: 'r1', lines: ['[ERROR] Build failed'] });
    const ttl = await redis.pttl(keys.history('Deployment/renamed-old'));
    expect(ttl).toBeGreaterThan(LOG_MAX_AGE_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(LOG_MAX_AGE_MS);
    // Removed (pruned, renamed, no longer declared): its state and build log go at once; its history stays readable.
    await removeStates(redis, prefix, ['Deployment/renamed-old']);
    expect(await redis.hexists(keys.state, 'Deployment/renamed-old')).toBe(0);
    expect(await redis.hexists(keys.buildLogs, 'Deployment/renamed-old')).toBe(0);
    expect((await store.history('Deployment/renamed-old')).map((e) => e.job?.id)).toEqual(['j1']);
    expect(await redis.pttl(keys.history('Deployment/renamed-old'))).toBeGreaterThan(0);
  });

  it('names only resources in its keys', async () => {
    const keys = await keysUnder(redis, prefix);
    for (const key of keys)
      expect(key).toMatch(/:record:(log|state|state-version|build-logs|history:(Deployment|OAuthProvider)\/[\w-]+)$/);
  });
});
