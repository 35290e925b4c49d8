// Applied-state store on the real Redis: hashes only, merged writes, one-round-trip reads, pending markers cleared, plans without Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { secretHash } from '../../src/core/hash.js';
import { dropPrefix, REDIS_URL, uniquePrefix, closedPort } from './redis-helpers.js';
import { AppliedStateStore, appliedKey, readAppliedState } from '../../src/enqueue/applied-state.js';
import { closeRedis, connectProducer } from '../../src/enqueue/redis.js';

describe('AppliedStateStore', () => {
  const prefix = uniquePrefix('applied');
  let redis: Redis;
  let store: AppliedStateStore;

  beforeAll(async () => {
    redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    store = new AppliedStateStore(redis, prefix);
  });
  afterAll(async () => {
    await closeRedis(redis);
    await dropPrefix(prefix);
  });

  it('keeps one hash field per resource, JSON of hashes only', async () => {
    const h = secretHash('Deployment/a', 'KEY', 'value-1');
    await store.set('Deployment/a', { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    expect(await redis.type(appliedKey(prefix))).toBe('hash');
    expect(JSON.parse((await redis.hget(appliedKey(prefix), 'Deployment/a'))!)).toEqual({ secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    expect(await store.get('Deployment/a')).toEqual({ secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    expect([...(await store.getAll()).keys()]).toEqual(['Deployment/a']);
  });

  it('refuses to store anything that is not a hash', async () => {
    await expect(store.set('Deployment/b', { secrets: { KEY: 'plain-value' }, appliedAt: 'now' })).rejects.toThrow();
    expect(await redis.hexists(appliedKey(prefix), 'Deployment/b')).toBe(0);
  });

  it('merges a write over the previous record and clears the pending write', async () => {
    const one = secretHash('Deployment/c', 'ONE', '1');
    const two = secretHash('Deployment/c', 'TWO', '2');
    const twoNew = secretHash('Deployment/c', 'TWO', '22');
    await store.recordWrite('Deployment/c', { secrets: { ONE: one, TWO: two } });
    await store.setPending('Deployment/c', { op: 'patch', secrets: { TWO: twoNew }, sentAt: new Date().toISOString(), revisionBefore: 'r1', startsRevision: true });
    expect(await store.getPending('Deployment/c')).toMatchObject({ op: 'patch', secrets: { TWO: twoNew } });
    const merged = await store.recordWrite('Deployment/c', { secrets: { TWO: twoNew } });
    expect(merged.secrets).toEqual({ ONE: one, TWO: twoNew });
    expect(await store.getPending('Deployment/c')).toBeUndefined();
  });

  it('keeps a provider definition hash until a new one is written', async () => {
    const def = 'a'.repeat(64);
    await store.recordWrite('OAuthProvider/slack', { secrets: {}, definitionHash: def });
    const again = await store.recordWrite('OAuthProvider/slack', { secrets: { client_secret: 'b'.repeat(64) } });
    expect(again.definitionHash).toBe(def);
  });

  it('leaves out unreadable entries instead of failing the plan', async () => {
    await redis.hset(appliedKey(prefix), 'Deployment/broken', '{not json');
    const all = await store.getAll();
    expect(all.has('Deployment/broken')).toBe(false);
    expect(all.has('Deployment/a')).toBe(true);
  });

  it('read() returns the record and the pending write together, undefined where there is none', async () => {
    expect(await store.read('Deployment/none')).toEqual({ applied: undefined, pending: undefined });
    const h = secretHash('Deployment/a', 'KEY', 'v1');
    await store.set('Deployment/a', { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    const pending = { op: 'patch' as const, secrets: { KEY: h }, sentAt: '2024-01-02T00:00:00.000Z', revisionBefore: null, startsRevision: true };
    await store.setPending('Deployment/a', pending);
    expect(await store.read('Deployment/a')).toEqual({ applied: { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' }, pending });
    await redis.hset(`${prefix}:pending`, 'Deployment/b', '{not json');
    expect((await store.read('Deployment/b')).pending).toBeUndefined();
  });


  it('recordWrite over a known record merges into it without reading; null means none; undefined reads', async () => {
    const one = secretHash('Deployment/c', 'ONE', 'v1');
    const two = secretHash('Deployment/c', 'TWO', 'v2');
    await store.set('Deployment/c', { secrets: { STORED: one }, appliedAt: '2024-01-01T00:00:00.000Z' });
    const at = new Date('2024-02-01T00:00:00.000Z');
    // The caller's record wins over what is stored (it was read during the same job, nobody else writes meanwhile).
    const merged = await store.recordWrite('Deployment/c', { secrets: { TWO: two } }, at, { secrets: { ONE: one }, appliedAt: 'x' });
    expect(merged.secrets).toEqual({ ONE: one, TWO: two });
    const fresh = await store.recordWrite('Deployment/c', { secrets: { TWO: two } }, at, null);
    expect(fresh.secrets).toEqual({ TWO: two });
    await store.setPending('Deployment/c', { op: 'patch', secrets: {}, sentAt: at.toISOString() });
    const read = await store.recordWrite('Deployment/c', { secrets: { ONE: one } }, at);
    expect(read.secrets).toEqual({ ONE: one, TWO: two });
    expect(await store.read('Deployment/c')).toEqual({ applied: read, pending: undefined });
  });

  it('prefetch hints each record once, none for a resource with a pending write', async () => {
    const h = secretHash('Deployment/p1', 'KEY', 'v1');
    await store.set('Deployment/p1', { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    await store.setPending('Deployment/p3', { op: 'patch', secrets: {}, sentAt: '2024-01-02T00:00:00.000Z' });
    await redis.hset(appliedKey(prefix), 'Deployment/p4', '{not json');
    await store.prefetch(['Deployment/p1', 'Deployment/p2', 'Deployment/p3', 'Deployment/p4']);
    const one = store.takeHint('Deployment/p1');
    expect(one).toEqual({ raw: await redis.hget(appliedKey(prefix), 'Deployment/p1'), record: { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' } });
    expect(store.takeHint('Deployment/p1')).toBeUndefined();
    expect(store.takeHint('Deployment/p2')).toEqual({ raw: '', record: undefined });
    expect(store.takeHint('Deployment/p3')).toBeUndefined();
    // unreadable: planned as no record, but the mark still compares the stored text
    expect(store.takeHint('Deployment/p4')).toEqual({ raw: '{not json', record: undefined });
  });

  it('markPending records the write only while the hinted record is still stored and nothing is pending', async () => {
    const pending = { op: 'patch' as const, secrets: {}, sentAt: '2024-01-02T00:00:00.000Z', revisionBefore: 'r1', startsRevision: true };
    const h = secretHash('Deployment/m1', 'KEY', 'v1');
    await store.set('Deployment/m1', { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    await store.prefetch(['Deployment/m1', 'Deployment/m2', 'Deployment/m3']);
    const m1 = store.takeHint('Deployment/m1')!;
    const m2 = store.takeHint('Deployment/m2')!;
    const m3 = store.takeHint('Deployment/m3')!;

    expect(await store.markPending('Deployment/m1', m1, pending)).toEqual({ marked: true });
    expect(await store.getPending('Deployment/m1')).toEqual(pending);
    // a second mark finds the first one pending
    expect(await store.markPending('Deployment/m1', m1, pending)).toEqual({ marked: false, applied: m1.record, pending });

    // the record changed after the read-ahead: nothing is marked
    const changed = await store.recordWrite('Deployment/m2', { secrets: { KEY: h } }, new Date('2024-03-01T00:00:00.000Z'), null);
    expect(await store.markPending('Deployment/m2', m2, pending)).toEqual({ marked: false, applied: changed, pending: undefined });
    expect(await store.getPending('Deployment/m2')).toBeUndefined();

    expect(await store.markPending('Deployment/m3', m3, pending)).toEqual({ marked: true });
    expect(await store.markPending('Deployment/m3', m3, { ...pending, secrets: { KEY: 'not a hash' } }).catch((e: Error) => e.name)).toBe('ZodError');
  });

  it('readAppliedState: plans without Redis get an empty map and one warning line', async () => {
    const port = await closedPort();
    const read = await readAppliedState({ redisUrl: `redis://127.0.0.1:${port}`, redisPrefix: prefix });
    expect(read.records.size).toBe(0);
    expect(read.warning).toBe(`Redis at redis://127.0.0.1:${port} is unreachable (ECONNREFUSED): start redis-server or set REDIS_URL; planning without applied state`);
    const live = await readAppliedState({ redisUrl: REDIS_URL, redisPrefix: prefix });
    expect(live.warning).toBeUndefined();
    expect(live.records.get('Deployment/a')?.secrets.KEY).toMatch(/^[0-9a-f]{64}$/);
  });
});
