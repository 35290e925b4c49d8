// The reconcile record and the operator's pending requests on the real Redis: a write under an older fencing token is refused, the plan is sent only when it changed and read again only when its hash moved, the requests are bounded.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { fenceKey } from '../../src/leader/lease.js';
import { MAX_PENDING_REQUESTS, OperatorRequestStore } from '../../src/store/operator-requests.js';
import { reconcileKeys, ReconcileRecordStore, type ReconcilesWrite } from '../../src/store/reconcile-record.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

function written(id: number, plan: unknown, fence: number | undefined): ReconcilesWrite {
  const history = [
    {
      id,
      trigger: 'watch',
      startedAt: '2026-01-01T00:00:00.000Z',
      finishedAt: '2026-01-01T00:00:01.000Z',
      durationMs: 1000,
      ok: true,
    },
  ];
  const record = {
    by: 'replica-a',
    history,
    lastSuccessfulReconcileAt: '2026-01-01T00:00:01.000Z',
    reconciles: { total: id, failed: 0, byTrigger: { watch: id } },
    manifests: { loaded: true, everLoaded: true, error: null },
    orphans: ['Deployment/o'],
  };
  return { record, plan, fence };
}

/** A connection to the real Redis under a prefix of its own for one describe block, closed and dropped after it. */
function redisOfBlock(label: string): { prefix: string; redis: Redis } {
  const db = { prefix: testPrefix(label), redis: undefined as unknown as Redis };
  beforeAll(async () => {
    db.redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: db.prefix });
  });
  afterAll(async () => {
    await closeRedis(db.redis);
    await dropPrefix(db.prefix);
  });
  return db;
}

describe('ReconcileRecordStore', () => {
  const db = redisOfBlock('reconciles');

  it("refuses a write under an older fencing token: the newer leader's record stands", async () => {
    const store = new ReconcileRecordStore(db.redis, db.prefix, fenceKey(db.prefix));
    await db.redis.set(fenceKey(db.prefix), '100');
    expect(await store.write(written(1, { summary: { noop: 1 } }, 100))).toBe(true);
    await db.redis.set(fenceKey(db.prefix), '200');
    expect(await store.write(written(2, { summary: { noop: 2 } }, 100))).toBe(false);
    const reader = new ReconcileRecordStore(db.redis, db.prefix, fenceKey(db.prefix));
    expect(await reader.read()).toMatchObject({
      record: { reconciles: { total: 1 }, orphans: ['Deployment/o'] },
      plan: { summary: { noop: 1 } },
    });
    expect(await store.write(written(3, { summary: { noop: 3 } }, 200))).toBe(true);
    expect(await reader.read()).toMatchObject({ record: { reconciles: { total: 3 } }, plan: { summary: { noop: 3 } } });
  });

  it('sends the plan only when it changed, and sends it again when Redis lost it', async () => {
    const store = new ReconcileRecordStore(db.redis, db.prefix, fenceKey(db.prefix));
    const plan = {
      summary: { noop: 7 },
      changes: Array.from({ length: 50 }, (_, i) => ({ name: `d${i}`, action: 'noop' })),
    };
    expect(await store.write(written(4, plan, undefined))).toBe(true);
    const keys = reconcileKeys(db.prefix);
    // A marker in place of the plan's JSON, under the same hash: a write of the same plan does not send it again.
    const kept = (await db.redis.get(keys.plan))!;
    const hash = kept.slice(0, kept.indexOf('\n'));
    await db.redis.set(keys.plan, `${hash}\n{"marker":true}`);
    expect(await store.write(written(5, plan, undefined))).toBe(true);
    expect(await db.redis.get(keys.plan)).toBe(`${hash}\n{"marker":true}`);
    // Lost (FLUSHALL, eviction): the next write sends it whole again.
    await db.redis.del(keys.plan);
    expect(await store.write(written(6, plan, undefined))).toBe(true);
    expect(JSON.parse((await db.redis.get(keys.plan))!.slice(hash.length + 1))).toEqual(plan);
    const reader = new ReconcileRecordStore(db.redis, db.prefix, fenceKey(db.prefix));
    expect((await reader.read())?.plan).toEqual(plan);
  });

  it('keeps the hash and bytes of JSON.stringify(plan) when the next plan shares most of its changes', async () => {
    const store = new ReconcileRecordStore(db.redis, db.prefix, fenceKey(db.prefix));
    const keys = reconcileKeys(db.prefix);
    const changes = Array.from({ length: 20 }, (_, i) => ({ name: `é-${i} ✓`, action: 'noop', reason: 'a "b"' }));
    const first = { format_version: '1', summary: { noop: 20 }, changes, diagnostics: [] };
    const second = { ...first, summary: { noop: 19, update: 1 }, changes: [...changes.slice(0, 19), { name: 'x' }] };
    for (const [id, plan] of [first, second].entries()) {
      expect(await store.write(written(7 + id, plan, undefined))).toBe(true);
      const json = JSON.stringify(plan);
      const hash = createHash('sha256').update(json).digest('hex').slice(0, 32);
      expect(await db.redis.get(keys.plan)).toBe(`${hash}\n${json}`);
      expect(JSON.parse((await db.redis.get(keys.reconciles))!)).toMatchObject({ planHash: hash });
    }
  });
});

describe('OperatorRequestStore', () => {
  const db = redisOfBlock('requests');

  it('keeps requests oldest first, notes rebuilds, removes the served ones and refuses one past the bound', async () => {
    const store = new OperatorRequestStore(db.redis, db.prefix);
    expect(await store.add('b', { at: '2026-01-01T00:00:02.000Z', by: 'r1', retryFailed: ['web'] })).toBe(true);
    expect(await store.add('a', { at: '2026-01-01T00:00:01.000Z', by: 'r1' })).toBe(true);
    await store.noteRebuild(['b', 'gone'], ['Deployment/web']);
    expect([...(await store.all())]).toEqual([
      ['a', { at: '2026-01-01T00:00:01.000Z', by: 'r1' }],
      ['b', { at: '2026-01-01T00:00:02.000Z', by: 'r1', retryFailed: ['web'], rebuild: ['Deployment/web'] }],
    ]);
    await store.remove(['a', 'b']);
    expect((await store.all()).size).toBe(0);
    for (let i = 0; i < MAX_PENDING_REQUESTS; i++)
      expect(await store.add(`r${i}`, { at: new Date(i).toISOString(), by: 'r1' })).toBe(true);
    expect(await store.add('one-more', { at: new Date().toISOString(), by: 'r1' })).toBe(false);
    expect((await store.all()).size).toBe(MAX_PENDING_REQUESTS);
  });
});
