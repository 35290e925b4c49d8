// The leader lease on the real Redis: one holder, fencing tokens, renew and release by compare, the election loop, and the
// worker's and enqueuer's fencing of a former leader's jobs.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { dropPrefix, REDIS_URL, uniquePrefix } from './redis-helpers.js';
import { QUEUE_NAME } from '../../src/enqueue/jobs.js';
import { NotLeaderError, newestDesiredKey } from '../../src/enqueue/enqueuer.js';
import { currentFence, fenceKey, Lease, leaseKey } from '../../src/enqueue/lease.js';
import { openJobs, type Jobs } from '../../src/enqueue/open-jobs.js';
import { closeRedis, connectProducer } from '../../src/enqueue/redis.js';
import type { ReconcileJobData } from '../../src/enqueue/schema.js';
import { staleReason } from '../../src/enqueue/worker.js';
import { electionLoops } from './lease-helpers.js';
import { data } from './job-fixtures.js';

const DESIRED_A = 'a'.repeat(64);

describe('the leader lease', () => {
  const prefix = uniquePrefix('lease');
  const settings = { redisUrl: REDIS_URL, redisPrefix: prefix, attempts: 1, backoff: 10, concurrency: 1, globalRate: 0 };
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
    expect(await b.tryAcquire()).toEqual({ acquired: false, holder: { holder: 'replica-a', token, since: first.acquired ? first.since : '' } });
    expect(await b.renew(token)).toBe(false);
    expect(await b.release(token)).toBe(false);
    expect(await a.renew(token + 1)).toBe(false);
    expect(await a.renew(token)).toBe(true);
    expect(await redis.pttl(leaseKey(p))).toBeGreaterThan(4_000);
    expect(await a.release(token)).toBe(true);
    const second = await b.tryAcquire();
    expect(second).toMatchObject({ acquired: true, token: token + 1 });
    expect(await a.renew(token)).toBe(false);
    expect(await currentFence(redis, p)).toBe(token + 1);
    // The same holder takes its own lease again (a renew lost on a blip) with a new token; the old token is dead.
    const again = await b.tryAcquire();
    expect(again).toMatchObject({ acquired: true, token: token + 2 });
    expect(await b.renew(token + 1)).toBe(false);
    expect(await b.read()).toMatchObject({ holder: 'replica-b', token: token + 2 });
    // Both keys share the prefix's hash tag (one Redis Cluster slot for the scripts).
    const tag = /\{[^}]+\}/.exec(p)![0];
    expect(leaseKey(p)).toContain(tag);
    expect(fenceKey(p)).toContain(tag);
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

  it('the election loop: one leader, a standby takes over after a release within its poll time and after a crash within the lease time; a stolen lease stops the leader', async () => {
    const p = `${prefix}:loop`;
    const events: string[] = [];
    const loop = electionLoops(redis, p, 600, events);
    const a = loop('a');
    const b = loop('b');
    a.start();
    await until(() => a.token() !== undefined);
    b.start();
    await sleep(250);
    expect(b.token()).toBeUndefined();
    expect(b.status()).toMatchObject({ replica: 'b', leading: false, leader: { holder: 'a' } });
    // Renewed past its lease time.
    await sleep(500);
    expect(a.token()).toBeDefined();
    const tokenA = a.token()!;
    // Release: b takes over within its poll time (100 ms here).
    const released = Date.now();
    expect(await a.stop()).toBe(true);
    expect(a.token()).toBeUndefined();
    await until(() => b.token() !== undefined);
    expect(Date.now() - released).toBeLessThan(400);
    expect(b.token()).toBe(tokenA + 1);
    await b.settled();
    expect(events).toEqual([`a leads ${tokenA}`, `b leads ${tokenA + 1}`]);
    // A crashed holder (key left to lapse): c takes over within the lease time.
    expect(await b.stop()).toBe(true);
    const crashed = new Lease(redis, p, 'crashed', 600);
    expect((await crashed.tryAcquire()).acquired).toBe(true);
    const c = loop('c');
    const crashAt = Date.now();
    c.start();
    await until(() => c.token() !== undefined, 2_000);
    expect(Date.now() - crashAt).toBeGreaterThanOrEqual(500);
    expect(Date.now() - crashAt).toBeLessThan(600 + 400);
    // Someone else holds the key now (c's lapsed unseen, say): c stops at its next renew.
    await redis.set(leaseKey(p), `intruder|${(await currentFence(redis, p)) + 1}|now`, 'PX', 5_000);
    await until(() => c.token() === undefined, 1_000);
    await c.settled();
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
    expect(await staleReason(redis, seqKey, p, job({ fence: 6, seq: 3 }))).toEqual({ code: 'former_leader', message: expect.stringMatching(/former leader \(fencing token 6, current 7\)/) });
    expect(await staleReason(redis, seqKey, p, job({ fence: 7, seq: 2 }))).toEqual({ code: 'superseded', message: expect.stringMatching(/superseded/) });
    expect(await staleReason(redis, seqKey, p, job({ fence: 7, seq: 3 }))).toBeUndefined();
    expect(await staleReason(redis, seqKey, p, job({}))).toBeUndefined();
  });

  it('the enqueuer stamps the token and a Redis sequence, refuses once the lease is lost, and does not count a former leader\'s job as in flight', async () => {
    const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
    try {
      let token: number | undefined = 4;
      const fence = () => token;
      const web = { ...data('web', 1), desired: DESIRED_A };
      const [first] = await jobs.enqueuer.enqueue([web], undefined, { skipInFlight: true, fence });
      expect(first!.how).toBe('added');
      const job = await queue.getJob(first!.jobId);
      expect(job!.data).toMatchObject({ fence: 4, seq: expect.any(Number) });
      expect(Number(await redis.hget(newestDesiredKey(queue), 'Deployment/web'))).toBe((job!.data as ReconcileJobData).seq);
      // The same leader, the same desired state: in flight, nothing added.
      expect((await jobs.enqueuer.enqueue([web], undefined, { skipInFlight: true, fence }))[0]!.how).toBe('in-flight');
      // A new leader (token 5) with the same desired state: the waiting job is taken over with its token.
      token = 5;
      const [taken] = await jobs.enqueuer.enqueue([web], undefined, { skipInFlight: true, fence });
      expect(taken).toMatchObject({ how: 'replaced-waiting', jobId: first!.jobId });
      expect((await queue.getJob(first!.jobId))!.data).toMatchObject({ fence: 5 });
      // The lease lost: nothing is added.
      token = undefined;
      await expect(jobs.enqueuer.enqueue([{ ...data('api', 1), desired: DESIRED_A }], undefined, { skipInFlight: true, fence })).rejects.toBeInstanceOf(NotLeaderError);
      expect(await queue.getWaitingCount()).toBe(1);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});

async function until(check: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(10);
  }
}
