// The enqueuer on a real BullMQ queue: one job per resource, the newest desired state wins, through BullMQ's public API.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { dropPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import { QUEUE_NAME } from '../../../src/jobs/queue/jobs.js';
import { openJobs, type Jobs } from '../../../src/jobs/open-jobs.js';
import { closeRedis, connectProducer, connectWorker } from '../../../src/store/redis.js';
import type { ReconcileJobData } from '../../../src/store/schema.js';
import { data, scaleOf } from '../../helpers/job-fixtures.js';
import type { DecidedJob } from '../../../src/jobs/queue/decided-jobs.js';
import { JobWaiter } from '../../../src/apply/wait-jobs.js';

describe('Enqueuer: one job per resource, the newest desired state wins', () => {
  const prefix = testPrefix('jobs');
  const settings = {
    redisUrl: REDIS_URL,
    redisPrefix: prefix,
    attempts: 3,
    backoff: 10,
    concurrency: 1,
    globalRate: 0,
  };
  let jobs: Jobs;
  /** The same queue, for looking at it from outside (and for playing another producer). */
  let redis: Redis;
  let queue: Queue;
  const workers: Worker[] = [];
  const connections: Redis[] = [];

  beforeAll(async () => {
    jobs = await openJobs(settings);
    redis = await connectProducer(settings);
    queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.close();
    await closeRedis(...connections.splice(0));
    await queue.obliterate({ force: true });
  });
  afterAll(async () => {
    await queue.close();
    await closeRedis(redis);
    await jobs.close();
    await dropPrefix(prefix);
  });

  /** A worker whose first job waits for `release` before it finishes; records the max_scale of every job it runs. */
  async function gatedWorker(concurrency: number) {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    const seen: unknown[] = [];
    const done: string[] = [];
    let running = 0;
    let maxRunning = 0;
    const connection = await connectWorker(settings);
    connections.push(connection);
    const worker = new Worker(
      QUEUE_NAME,
      async (job: Job) => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        seen.push(scaleOf(job.data as ReconcileJobData));
        if (seen.length === 1) {
          started();
          await gate;
        }
        running -= 1;
        return { outcome: 'unchanged', new_revision: false };
      },
      { connection, prefix, concurrency },
    );
    workers.push(worker);
    worker.on('completed', (job) => done.push(job.id!));
    return { release, firstStarted, seen, done, maxRunning: () => maxRunning };
  }

  it('replaces the data of a job that is still waiting', async () => {
    const [first] = await jobs.enqueuer.enqueue([data('web', 1)]);
    const [second] = await jobs.enqueuer.enqueue([data('web', 2)]);
    expect(first!.how).toBe('added');
    expect(second).toEqual({ key: 'Deployment/web', jobId: first!.jobId, how: 'replaced-waiting' });
    expect(await queue.getWaitingCount()).toBe(1);
    const job = await queue.getJob(first!.jobId);
    expect(scaleOf(job!.data as ReconcileJobData)).toBe(2);
    expect(job!.name).toBe('patch-deployment');
    expect(await jobs.enqueuer.lookup(first!.jobId)).toEqual({ state: 'unfinished' });
  });

  it('queues the newest data behind a running job and never runs two jobs of one resource at once', async () => {
    const worker = await gatedWorker(5);
    const [first] = await jobs.enqueuer.enqueue([data('api', 1)]);
    await worker.firstStarted;
    const [second] = await jobs.enqueuer.enqueue([data('api', 2)]);
    const [third] = await jobs.enqueuer.enqueue([data('api', 3)]);
    expect(second).toMatchObject({ how: 'after-active', behind: first!.jobId });
    expect(third).toMatchObject({ how: 'after-active', behind: first!.jobId });
    expect(await queue.getWaitingCount()).toBe(0);
    // the resource's deduplication id still names the running job until it ends
    expect(await jobs.enqueuer.currentJobOf('Deployment/api')).toBe(first!.jobId);
    worker.release();
    await expect.poll(() => worker.done.length, { timeout: 5_000 }).toBe(2);
    expect(worker.seen).toEqual([1, 3]);
    expect(worker.maxRunning()).toBe(1);
    expect(worker.done).toEqual([first!.jobId, third!.jobId]);
    expect(await jobs.enqueuer.lookup(third!.jobId)).toEqual({
      state: 'completed',
      value: { outcome: 'unchanged', new_revision: false },
    });
  });

  it('gives the running job the newest data before queueing ours behind it, so any later run of that job is of the newest desired state', async () => {
    const worker = await gatedWorker(1);
    const [first] = await jobs.enqueuer.enqueue([data('back', 1)]);
    await worker.firstStarted;
    const [second] = await jobs.enqueuer.enqueue([data('back', 2)]);
    expect(second).toMatchObject({ how: 'after-active', behind: first!.jobId });
    // The run in progress keeps the data it started with; the job's stored data (what a run after a hand-back, a
    // rate-limit pause or a stall reads) is ours.
    expect(scaleOf((await queue.getJob(first!.jobId))!.data as ReconcileJobData)).toBe(2);
    worker.release();
    await expect.poll(() => worker.done.length, { timeout: 5_000 }).toBe(2);
    expect(worker.seen).toEqual([1, 2]);
    expect(worker.done).toEqual([first!.jobId, second!.jobId]);
  });

  it("JobWaiter: when BullMQ dropped ours because the job it followed went back to waiting (that job ran our data), the result is that job's", async () => {
    const worker = await gatedWorker(1);
    const [first] = await jobs.enqueuer.enqueue([data('carried', 1)]);
    await worker.firstStarted;
    const waiter = new JobWaiter(jobs.enqueuer, 1);
    const change = { change: { kind: 'Deployment', name: 'carried' } } as unknown as DecidedJob;
    // Our job id never reaches the queue: as if BullMQ had dropped our add.
    waiter.track(
      0,
      change,
      { key: 'Deployment/carried', jobId: 'Deployment%2Fcarried@dropped', how: 'after-active', behind: first!.jobId },
      'update',
    );
    worker.release();
    const [result] = await waiter.wait(20);
    expect(result).toMatchObject({
      key: 'Deployment/carried',
      jobId: 'Deployment%2Fcarried@dropped',
      event: { type: 'job-completed', result: { outcome: 'unchanged' } },
    });
  });

  it('JobWaiter.settleStored: a job that finished without its event reaching the waiter (an interrupt, drain ended first) is done, not left', async () => {
    const worker = await gatedWorker(1);
    const [enqueued] = await jobs.enqueuer.enqueue([data('drained', 1)]);
    worker.release();
    await expect.poll(() => worker.done, { timeout: 5_000 }).toEqual([enqueued!.jobId]);
    // No events are fed to this waiter: only what the queue stored.
    const waiter = new JobWaiter(jobs.enqueuer, 1);
    const change = { change: { kind: 'Deployment', name: 'drained' } } as unknown as DecidedJob;
    waiter.track(0, change, enqueued!, 'update');
    expect(waiter.unfinishedJobs()).toEqual([enqueued!.jobId]);
    await waiter.settleStored();
    expect(waiter.allFinished()).toBe(true);
    expect(waiter.partial()[0]!.result).toMatchObject({ key: 'Deployment/drained', jobId: enqueued!.jobId });
    expect(waiter.partial()[0]!.result!.event.type).toBe('job-completed');
  });

  it('adds a new job when the deduplication id still names a finished job of another producer', async () => {
    // A producer whose deduplication id outlives its job (a ttl): after the job completes, the id still names it.
    await queue.add('patch-deployment', data('ghost', 1), {
      jobId: 'Deployment/ghost@old',
      deduplication: { id: 'Deployment/ghost', ttl: 60_000 },
    });
    const worker = await gatedWorker(1);
    worker.release();
    await expect.poll(() => worker.done, { timeout: 5_000 }).toEqual(['Deployment/ghost@old']);
    expect(await jobs.enqueuer.currentJobOf('Deployment/ghost')).toBe('Deployment/ghost@old');

    const [enqueued] = await jobs.enqueuer.enqueue([data('ghost', 2)]);
    expect(enqueued!.how).toBe('added');
    expect(enqueued!.jobId).not.toBe('Deployment/ghost@old');
    expect(await jobs.enqueuer.currentJobOf('Deployment/ghost')).toBe(enqueued!.jobId);
    await expect.poll(() => worker.seen, { timeout: 5_000 }).toEqual([1, 2]);
  });

  it('adds a new job when the deduplication id names a job that is gone', async () => {
    await queue.add('patch-deployment', data('gone', 1), {
      jobId: 'Deployment/gone@old',
      removeOnComplete: true,
      deduplication: { id: 'Deployment/gone', ttl: 60_000 },
    });
    const worker = await gatedWorker(1);
    worker.release();
    await expect.poll(() => worker.done, { timeout: 5_000 }).toEqual(['Deployment/gone@old']);
    expect(await jobs.enqueuer.lookup('Deployment/gone@old')).toEqual({ state: 'gone' });
    expect(await jobs.enqueuer.currentJobOf('Deployment/gone')).toBe('Deployment/gone@old');

    const [enqueued] = await jobs.enqueuer.enqueue([data('gone', 2)]);
    expect(enqueued!.how).toBe('added');
    await expect.poll(() => worker.seen, { timeout: 5_000 }).toEqual([1, 2]);
  });

  it('skipInFlight: a waiting or active job of the same desired state gets no second job; another desired state still wins', async () => {
    const withDesired = (name: string, maxScale: number, desired: string): ReconcileJobData => ({
      ...data(name, maxScale),
      desired,
    });
    const same = 'a'.repeat(64);
    const other = 'b'.repeat(64);
    const [waiting] = await jobs.enqueuer.enqueue([withDesired('idle', 1, same)], undefined, { skipInFlight: true });
    const [again] = await jobs.enqueuer.enqueue([withDesired('idle', 1, same)], undefined, { skipInFlight: true });
    expect(again).toEqual({ key: 'Deployment/idle', jobId: waiting!.jobId, how: 'in-flight' });
    expect(await queue.getWaitingCount()).toBe(1);

    const worker = await gatedWorker(5);
    await worker.firstStarted;
    const seenBy: Array<[string, number]> = [];
    const [active] = await jobs.enqueuer.enqueue(
      [withDesired('idle', 1, same), withDesired('busy', 1, same)],
      (e, i) => seenBy.push([e.how, i]),
      { skipInFlight: true },
    );
    expect(active).toMatchObject({ how: 'in-flight', jobId: waiting!.jobId });
    expect(seenBy).toEqual(
      expect.arrayContaining([
        ['in-flight', 0],
        ['added', 1],
      ]),
    );
    const [newer] = await jobs.enqueuer.enqueue([withDesired('idle', 2, other)], undefined, { skipInFlight: true });
    expect(newer).toMatchObject({ how: 'after-active', behind: waiting!.jobId });
    worker.release();
    await expect.poll(() => worker.done.length, { timeout: 5_000 }).toBe(3);
    expect(worker.seen.sort()).toEqual([1, 1, 2]);
  });
});
