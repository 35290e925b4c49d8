// The leader lease on the real Redis: one holder, fencing tokens, renew and release by compare, the election loop, and the
// worker's and enqueuer's fencing of a former leader's jobs.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import { NotLeaderError, newestDesiredKey } from '../../src/jobs/queue/enqueuer.js';
import { currentFence, fenceKey, Lease, leaseKey } from '../../src/leader/lease.js';
import { openJobs, type Jobs } from '../../src/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import type { ReconcileJobData } from '../../src/store/schema.js';
import { staleReason } from '../../src/jobs/runner/stale-job.js';
import { electionLoops, leaseExpiryMicros, PTTL_SLACK_MICROS } from '../helpers/lease.js';
import { data } from '../helpers/job-fixtures.js';
import { until } from '../helpers/until.js';
import { redisChild } from '../e2e/helpers.js';

const DESIRED_A = 'a'.repeat(64);

describe('the leader lease', () => {
  const prefix = testPrefix('lease');
  const settings = {
    redisUrl: REDIS_URL,
    redisPrefix: prefix,
    attempts: 1,
    backoff: 10,
    concurrency: 1,
    globalRate: 0,
  };
  let redis: Redis;
  let jobs: Jobs;

  beforeAll(async () => {
    redis = await connectProducer(settings);
    jobs = await openJobs(settings);
  });
  afterAll(async () => {
    await jobs.close();
    await closeRedis(redis);
    await dropPrefix(prefix);
  });

  it('has one holder at a time; renew and release only by the holder with its token; each acquisition a higher token', async () => {
    const p = `${prefix}:one`;
    const a = new Lease(redis, p, 'replica-a', 5_000);
    const b = new Lease(redis, p, 'replica-b', 5_000);
    const first = await a.tryAcquire();
    expect(first.acquired).toBe(true);
    const token = first.acquired ? first.token : 0;
    expect(await b.tryAcquire()).toEqual({
      acquired: false,
      holder: { holder: 'replica-a', token, since: first.acquired ? first.since : '' },
    });
    expect(await b.renew(token)).toBe(false);
    expect(await b.release(token)).toBe(false);
    expect(await a.renew(token + 1)).toBe(false);
    expect(await a.renew(token)).toBe(true);
    expect(await redis.pttl(leaseKey(p))).toBeGreaterThan(4_000);
    expect(await a.release(token)).toBe(true);
    const second = await b.tryAcquire();
    const token2 = second.acquired ? second.token : 0;
    expect(token2).toBeGreaterThan(token);
    expect(await a.renew(token)).toBe(false);
    expect(await currentFence(redis, p)).toBe(token2);
    // The same holder takes its own lease again (a renew lost on a blip) with a new token; the old token is dead.
    const again = await b.tryAcquire();
    const token3 = again.acquired ? again.token : 0;
    expect(token3).toBeGreaterThan(token2);
    expect(await b.renew(token2)).toBe(false);
    expect(await b.read()).toMatchObject({ holder: 'replica-b', token: token3 });
    // Tokens are Redis' clock in microseconds at the least (read with TIME before and after), and JS-safe integers.
    const [seconds] = await redis.time();
    expect(token3).toBeGreaterThan((Number(seconds) - 60) * 1_000_000);
    expect(Number.isSafeInteger(token3)).toBe(true);
    expect(await redis.get(fenceKey(p))).toBe(String(token3));
    // Both keys share the prefix's hash tag (one Redis Cluster slot for the scripts).
    const tag = /\{[^}]+\}/.exec(p)![0];
    expect(leaseKey(p)).toContain(tag);
    expect(fenceKey(p)).toContain(tag);
  });

  it('the token keeps rising across a Redis that lost its data (FLUSHALL on a redis-server of its own): a job of the former leader is still older', async () => {
    const child = await redisChild();
    const own = await connectProducer({ redisUrl: child.url, redisPrefix: prefix });
    try {
      const p = `${prefix}:flushed`;
      const a = new Lease(own, p, 'replica-a', 60_000);
      const first = await a.tryAcquire();
      expect(first.acquired).toBe(true);
      const before = first.acquired ? first.token : 0;
      await own.flushall();
      expect(await own.get(fenceKey(p))).toBeNull();
      // A new leader (the key is gone with the rest): INCR alone would answer 1 here.
      const b = new Lease(own, p, 'replica-b', 60_000);
      const second = await b.tryAcquire();
      expect(second.acquired).toBe(true);
      const after = second.acquired ? second.token : 0;
      expect(after).toBeGreaterThan(before);
      expect(Number.isSafeInteger(after)).toBe(true);
      // The worker compares tokens: a job the former leader stamped is dropped, the new leader's runs.
      const seqKey = `${p}:seq`;
      expect((await staleReason(own, seqKey, p, { ...data('web', 1), fence: before }))?.message).toMatch(
        new RegExp(`former leader \\(fencing token ${before}, current ${after}\\)`),
      );
      expect(await staleReason(own, seqKey, p, { ...data('web', 1), fence: after })).toBeUndefined();
    } finally {
      await closeRedis(own);
      await child.remove();
    }
  });

  it('lapses after its time when not renewed (the TTL in Redis decides, no clock is compared)', async () => {
    const p = `${prefix}:lapse`;
    const a = new Lease(redis, p, 'replica-a', 200);
    const b = new Lease(redis, p, 'replica-b', 200);
    expect((await a.tryAcquire()).acquired).toBe(true);
    expect((await b.tryAcquire()).acquired).toBe(false);
    await sleep(260);
    expect((await b.tryAcquire()).acquired).toBe(true);
  });

  it('refuses a replica id it cannot store', () => {
    expect(() => new Lease(redis, prefix, 'a|b', 1_000)).toThrow(/replica_id "a\|b" is not usable/);
  });

  it('the election loop: one leader, a standby takes over after a release, and after a crash once the lease lapsed; a stolen lease stops the leader', async () => {
    const events: string[] = [];
    // A lease far longer than the test: b can only lead before it lapses because a released it.
    const long = electionLoops(redis, `${prefix}:loop`, 60_000, events);
    const a = long('a');
    const b = long('b');
    a.start();
    await until('a to lead', () => a.token() !== undefined);
    b.start();
    await until('b to see the leader', () => b.status().leader?.holder === 'a');
    expect(b.token()).toBeUndefined();
    expect(b.status()).toMatchObject({ replica: 'b', leading: false, leader: { holder: 'a' } });
    const tokenA = a.token()!;
    // Release (compare-and-delete): b takes over at its next poll, long before the lease could lapse.
    expect(await a.stop()).toBe(true);
    expect(a.token()).toBeUndefined();
    await until('b to take over after the release', () => b.token() !== undefined);
    const tokenB = b.token()!;
    expect(tokenB).toBeGreaterThan(tokenA);
    await b.transitionsDone();
    expect(events).toEqual([`a leads ${tokenA}`, `b leads ${tokenB}`]);
    expect(await b.stop()).toBe(true);

    // Renewal: a leader renews its lease before it lapses (seen as the key's time to live going up again).
    const p = `${prefix}:renew`;
    const renewing = electionLoops(redis, p, 600, events)('r');
    renewing.start();
    await until('r to lead', () => renewing.token() !== undefined);
    let lowest = Number.POSITIVE_INFINITY;
    await until('the lease to be renewed', async () => {
      const left = await redis.pttl(leaseKey(p));
      if (left > lowest) return true;
      lowest = Math.min(lowest, left);
      return false;
    });
    expect(renewing.token()).toBeDefined();
    await renewing.stop();

    // A crashed holder (key left to lapse): c takes over once the key expired, not before. Its fencing token is at
    // least Redis' clock (µs) when it took the lease, so it is compared with the key's expiry on that same clock.
    const q = `${prefix}:crash`;
    const crashed = new Lease(redis, q, 'crashed', 600);
    expect((await crashed.tryAcquire()).acquired).toBe(true);
    const expiry = await leaseExpiryMicros(redis, q);
    expect(expiry).toBeDefined();
    const c = electionLoops(redis, q, 600, events)('c');
    c.start();
    await until('c to take over after the lapse', () => c.token() !== undefined);
    expect(c.token()!).toBeGreaterThanOrEqual(expiry! - PTTL_SLACK_MICROS);
    // Someone else holds the key now (c's lapsed unseen, say): c stops at its next renew.
    await redis.set(leaseKey(q), `intruder|${(await currentFence(redis, q)) + 1}|now`, 'PX', 60_000);
    await until('c to stop leading', () => c.token() === undefined);
    await c.transitionsDone();
    expect(events.at(-1)).toBe('c standby: the lease key was gone or held by another replica at renewal');
    expect(c.status()).toMatchObject({ leading: false, transitions: { gained: 1, lost: 1 } });
    await c.stop();
  });

  it("the worker drops a former leader's job (older fencing token) and a superseded one (older sequence); apply's jobs carry neither", async () => {
    const p = `${prefix}:stale`;
    const seqKey = `${p}:seq`;
    const job = (extra: Partial<ReconcileJobData>): ReconcileJobData => ({ ...data('web', 1), ...extra });
    await redis.set(fenceKey(p), '7');
    await redis.hset(seqKey, 'Deployment/web', '3');
    expect(await staleReason(redis, seqKey, p, job({ fence: 6, seq: 3 }))).toEqual({
      code: 'former_leader',
      message: expect.stringMatching(/former leader \(fencing token 6, current 7\)/),
    });
    expect(await staleReason(redis, seqKey, p, job({ fence: 7, seq: 2 }))).toEqual({
      code: 'superseded',
      message: expect.stringMatching(/superseded/),
    });
    expect(await staleReason(redis, seqKey, p, job({ fence: 7, seq: 3 }))).toBeUndefined();
    expect(await staleReason(redis, seqKey, p, job({}))).toBeUndefined();
  });

  it("moves the sequences an older converge kept inside BullMQ's key space to converge's own key, once, and numbers on from them", async () => {
    const p = `${prefix}:legacy`;
    const legacy = `${p}:${QUEUE_NAME}:desired-seq`;
    await redis.hset(legacy, 'Deployment/web', '41');
    const opened = await openJobs({ ...settings, redisPrefix: p });
    const queue = new Queue(QUEUE_NAME, { connection: redis, prefix: p });
    try {
      expect(await redis.exists(legacy)).toBe(0);
      expect(await redis.hget(newestDesiredKey(p), 'Deployment/web')).toBe('41');
      const [web] = await opened.enqueuer.enqueue([data('web', 2)]);
      expect(((await queue.getJob(web!.jobId))!.data as ReconcileJobData).seq).toBe(42);
      // Opening the prefix again moves nothing over the newer numbers.
      await redis.hset(legacy, 'Deployment/web', '7');
      await (await openJobs({ ...settings, redisPrefix: p })).close();
      expect(await redis.hget(newestDesiredKey(p), 'Deployment/web')).toBe('42');
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      await opened.close();
      await dropPrefix(p);
    }
  });

  it("the enqueuer stamps the token and a Redis sequence, refuses once the lease is lost, and does not count a former leader's job as in flight", async () => {
    const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
    try {
      let token: number | undefined = 4;
      const fence = () => token;
      const web = { ...data('web', 1), desired: DESIRED_A };
      const [first] = await jobs.enqueuer.enqueue([web], undefined, { skipInFlight: true, fence });
      expect(first!.how).toBe('added');
      const job = await queue.getJob(first!.jobId);
      expect(job!.data).toMatchObject({ fence: 4, seq: expect.any(Number) });
      expect(Number(await redis.hget(newestDesiredKey(prefix), 'Deployment/web'))).toBe(
        (job!.data as ReconcileJobData).seq,
      );
      // The same leader, the same desired state: in flight, nothing added.
      expect((await jobs.enqueuer.enqueue([web], undefined, { skipInFlight: true, fence }))[0]!.how).toBe('in-flight');
      // A new leader (token 5) with the same desired state: the waiting job is taken over with its token.
      token = 5;
      const [taken] = await jobs.enqueuer.enqueue([web], undefined, { skipInFlight: true, fence });
      expect(taken).toMatchObject({ how: 'replaced-waiting', jobId: first!.jobId });
      expect((await queue.getJob(first!.jobId))!.data).toMatchObject({ fence: 5 });
      // The lease lost: nothing is added.
      token = undefined;
      await expect(
        jobs.enqueuer.enqueue([{ ...data('api', 1), desired: DESIRED_A }], undefined, { skipInFlight: true, fence }),
      ).rejects.toBeInstanceOf(NotLeaderError);
      expect(await queue.getWaitingCount()).toBe(1);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
