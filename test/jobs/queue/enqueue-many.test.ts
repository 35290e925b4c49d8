// Enqueuer.enqueue of many resources: jobs added a batch per round trip, with the same per-resource rules as one at a time.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { ConvergeError } from '../../../src/core/errors.js';
import { ENQUEUE_BATCH, type Enqueued } from '../../../src/jobs/queue/enqueuer.js';
import { QUEUE_NAME } from '../../../src/jobs/queue/jobs.js';
import { openJobs, type Jobs } from '../../../src/jobs/open-jobs.js';
import { closeRedis, connectProducer, connectWorker } from '../../../src/store/redis.js';
import type { ReconcileJobData } from '../../../src/store/schema.js';
import { data, scaleOf } from '../../helpers/job-fixtures.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';

describe('Enqueuer.enqueue, many resources at once', () => {
  const prefix = testPrefix('many');
  let jobs: Jobs;
  let redis: Redis;
  let queue: Queue;
  const workers: Worker[] = [];
  const connections: Redis[] = [];

  beforeAll(async () => {
    jobs = await openJobs({
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      attempts: 3,
      backoff: 10,
      concurrency: 1,
      globalRate: 0,
    });
    redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
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

  it('adds more than a batch of new resources, in order, each reported as soon as its batch is in', async () => {
    const count = ENQUEUE_BATCH + 30;
    const datas = Array.from({ length: count }, (_, i) => data(`app-${i}`, i));
    const seen: Array<[number, Enqueued]> = [];
    const result = await jobs.enqueuer.enqueue(datas, (e, i) => seen.push([i, e]));
    expect(result.map((e) => e.key)).toEqual(datas.map((d) => d.key));
    expect(result.every((e) => e.how === 'added')).toBe(true);
    expect(seen.map(([i]) => i)).toEqual(datas.map((_, i) => i));
    expect(await queue.getWaitingCount()).toBe(count);
    const job = await queue.getJob(result[7]!.jobId);
    expect(scaleOf(job!.data as ReconcileJobData)).toBe(7);
  });

  it('a resource whose job is waiting gets its data replaced, as one by one', async () => {
    const [first] = await jobs.enqueuer.enqueue([data('web', 1)]);
    const [web, api] = await jobs.enqueuer.enqueue([data('web', 2), data('api', 1)]);
    expect(web).toEqual({ key: 'Deployment/web', jobId: first!.jobId, how: 'replaced-waiting' });
    expect(api!.how).toBe('added');
    expect(await queue.getWaitingCount()).toBe(2);
    expect(scaleOf((await queue.getJob(first!.jobId))!.data as ReconcileJobData)).toBe(2);
  });

  it('a resource whose job runs is queued behind it with the newest data', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const seen: unknown[] = [];
    const connection = await connectWorker({ redisUrl: REDIS_URL, redisPrefix: prefix });
    connections.push(connection);
    const worker = new Worker(
      QUEUE_NAME,
      async (job: Job) => {
        seen.push(scaleOf(job.data as ReconcileJobData));
        if (seen.length === 1) {
          started();
          await gate;
        }
        return { outcome: 'unchanged', new_revision: false };
      },
      { connection, prefix, concurrency: 2 },
    );
    workers.push(worker);
    const done: string[] = [];
    worker.on('completed', (job) => done.push(job.id!));
    const [first] = await jobs.enqueuer.enqueue([data('api', 1)]);
    await running;
    const [again] = await jobs.enqueuer.enqueue([data('api', 5)]);
    expect(again).toMatchObject({ how: 'after-active', behind: first!.jobId });
    release();
    await expect.poll(() => done.length, { timeout: 5_000 }).toBe(2);
    expect(seen).toEqual([1, 5]);
    expect(done).toEqual([first!.jobId, again!.jobId]);
  });

  it('refuses the same resource twice in one call', async () => {
    await expect(jobs.enqueuer.enqueue([data('x', 1), data('x', 2)])).rejects.toBeInstanceOf(ConvergeError);
    expect(await queue.getWaitingCount()).toBe(0);
  });
});
