// The flap guard's state in a real Redis: the versions each leader term read (kept in order, a repeat kept once, bounded,
// expiring), and the gate of a job that reads them: a new term that read B before A writes A back, one that never read B does not.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_READS, readOf, recordWrite, EMPTY_HISTORY, type FlapSettings } from '../../src/core/flap-guard.js';
import type { ManifestVersion } from '../../src/core/manifest-version.js';
import { JobGate } from '../../src/jobs/runner/flap-gate.js';
import { FlapStore, flapReadsKey } from '../../src/store/flap-store.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const prefix = testPrefix('flap-store');
const redis = new Redis(REDIS_URL);
const SETTINGS: FlapSettings = { windowMs: 60_000, limit: 3 };
const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

function commit(digit: string): ManifestVersion {
  return { kind: 'git', id: digit.repeat(40), readAt: new Date().toISOString() };
}

describe('FlapStore reads of a leader term', () => {
  it('keeps the versions a term read in order, a version read back to back once, the newest MAX_READS, for the TTL given', async () => {
    const store = new FlapStore(redis, prefix);
    for (const digit of ['1', '1', '2', '2', '1']) await store.recordRead(41, commit(digit), 60_000);
    expect(await store.reads(41)).toEqual([readOf(commit('1')), readOf(commit('2')), readOf(commit('1'))]);
    // Another term's reads are its own.
    expect(await store.reads(42)).toEqual([]);
    const ttl = await redis.pttl(flapReadsKey(prefix, 41));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    for (let i = 0; i < MAX_READS + 5; i++)
      await store.recordRead(43, { kind: 'content', id: i.toString(16).padStart(12, '0'), readAt: '' }, 60_000);
    const kept = await store.reads(43);
    expect(kept).toHaveLength(MAX_READS);
    expect(kept.at(-1)).toBe(`content:${(MAX_READS + 4).toString(16).padStart(12, '0')}`);
  });
});

describe('JobGate with the reads of its term', () => {
  const history = (store: FlapStore, key: string) => {
    // Term 1 wrote A (commit 1) then B (commit 2).
    const first = recordWrite(
      EMPTY_HISTORY,
      { desired: A, version: commit('1'), fence: 1, heal: false, now: new Date() },
      [],
      SETTINGS,
    );
    return store.setHistory(
      key,
      recordWrite(first, { desired: B, version: commit('2'), fence: 1, heal: false, now: new Date() }, [], SETTINGS),
    );
  };
  const gate = (store: FlapStore, key: string, fence: number) =>
    new JobGate({
      store,
      appliedRecord: async () => undefined,
      key,
      desired: A,
      manifestVersion: commit('1'),
      fence,
      settings: SETTINGS,
      now: async () => new Date(),
    });

  it('lets term 2 write A back when it read commit 2 and then commit 1 (a restart, then a checkout)', async () => {
    const store = new FlapStore(redis, prefix);
    await history(store, 'Deployment/restarted');
    await store.recordRead(2, commit('2'), 60_000);
    await store.recordRead(2, commit('1'), 60_000);
    expect(await gate(store, 'Deployment/restarted', 2).check()).toBeUndefined();
    expect((await store.all()).has('Deployment/restarted')).toBe(false);
  });

  it('refuses term 3 that read only commit 1 (a replica on the earlier commit): a conflict naming both versions', async () => {
    const store = new FlapStore(redis, prefix);
    await history(store, 'Deployment/replica');
    await store.recordRead(3, commit('1'), 60_000);
    const refused = await gate(store, 'Deployment/replica', 3).check();
    expect(refused).toMatchObject({ outcome: 'unchanged', conflict: { reason: 'desired_alternates', declared: true } });
    expect((await store.all()).get('Deployment/replica')).toMatchObject({
      reason: 'desired_alternates',
      desired: [A, B],
    });
  });
});
