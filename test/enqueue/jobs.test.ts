// Job payloads (references, never values) and per-resource deduplication on a real BullMQ queue: newest state wins.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DeploymentResource, ProviderResource } from '../../src/core/model.js';
import { dropPrefix, REDIS_URL, uniquePrefix } from './redis-helpers.js';
import { buildJobData, enqueueReconcile, jobIdFor, keyOfJobId, QUEUE_NAME, toJobResource } from '../../src/enqueue/jobs.js';
import { closeRedis, connectProducer, connectWorker } from '../../src/enqueue/redis.js';
import type { ReconcileJobData } from '../../src/enqueue/schema.js';

function deployment(name: string, maxScale: number, secretFrom: DeploymentResource['spec']['secrets'] = []): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: 'apps/a.yaml', line: 1, column: 1 },
    suspend: false,
    spec: { source: 'external_docker', source_config: { resource_spec: { max_scale: maxScale } }, source_revision_config: { image_uri: 'docker.io/a:1' }, secrets: secretFrom },
  };
}

describe('job payloads', () => {
  it('keep env and file references and replace a literal value by a pointer to its manifest', () => {
    const resource = deployment('a', 1, [
      { name: 'FROM_ENV', from: { env: 'SOME_VAR' } },
      { name: 'FROM_FILE', from: { file: '/run/secrets/x' } },
      { name: 'LITERAL', from: { value: 'planted-literal-7f3a' } },
    ]);
    const job = toJobResource(resource);
    expect(job.kind === 'Deployment' && job.spec.secrets).toEqual([
      { name: 'FROM_ENV', from: { env: 'SOME_VAR' } },
      { name: 'FROM_FILE', from: { file: '/run/secrets/x' } },
      { name: 'LITERAL', from: { manifest: { file: 'apps/a.yaml', line: 1, column: 1 } } },
    ]);
    const data = buildJobData(resource, 'create-deployment', { origin: 'test', manifestDir: '/m' });
    expect(JSON.stringify(data)).not.toContain('planted-literal-7f3a');
    expect(data.manifestDir).toBe('/m');
    expect(() => buildJobData(resource, 'create-deployment', { origin: 'test' })).toThrow(/literal secret value but no manifest directory/);
  });

  it('do the same for a provider client_secret', () => {
    const provider: ProviderResource = {
      kind: 'OAuthProvider',
      name: 'slack',
      location: { file: 'p.yaml', line: 3, column: 1 },
      suspend: false,
      spec: { mode: 'manual', name: 'Slack', client_id: 'c', auth_url: 'https://a', token_url: 'https://t', client_secret: { value: 'planted-client-secret' } },
    };
    const data = buildJobData(provider, 'create-provider', { origin: 'test', manifestDir: '/m' });
    expect(JSON.stringify(data)).not.toContain('planted-client-secret');
    expect(data.resource.kind === 'OAuthProvider' && data.resource.spec.client_secret).toEqual({ manifest: { file: 'p.yaml', line: 3, column: 1 } });
  });

  it('have job ids derived from the resource key, valid for BullMQ', () => {
    const id = jobIdFor('OAuthProvider/odd:name%');
    expect(id).not.toContain(':');
    expect(keyOfJobId(id)).toBe('OAuthProvider/odd:name%');
    expect(id.startsWith('OAuthProvider/odd')).toBe(true);
  });
});

describe('enqueueReconcile: one job per resource, the newest desired state wins', () => {
  const prefix = uniquePrefix('jobs');
  const settings = { redisUrl: REDIS_URL, redisPrefix: prefix };
  let redis: Redis;
  let queue: Queue;
  const workers: Worker[] = [];
  const connections: Redis[] = [];

  beforeAll(async () => {
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
    await dropPrefix(prefix);
  });

  const retry = { attempts: 3, backoff: 10 };
  const data = (name: string, maxScale: number): ReconcileJobData => buildJobData(deployment(name, maxScale), 'patch-deployment', { origin: 'test' });
  const scaleOf = (d: ReconcileJobData): unknown => (d.resource.spec as unknown as { source_config: { resource_spec: { max_scale: number } } }).source_config.resource_spec.max_scale;

  it('replaces the data of a job that is still waiting', async () => {
    const first = await enqueueReconcile(queue, redis, data('web', 1), retry);
    const second = await enqueueReconcile(queue, redis, data('web', 2), retry);
    expect(first.how).toBe('added');
    expect(second).toEqual({ key: 'Deployment/web', jobId: first.jobId, how: 'replaced-waiting' });
    expect(await queue.getWaitingCount()).toBe(1);
    const job = await queue.getJob(first.jobId);
    expect(scaleOf(job!.data as ReconcileJobData)).toBe(2);
    expect(job!.name).toBe('patch-deployment');
  });

  it('queues the newest data behind a running job and never runs two jobs of one resource at once', async () => {
    const seen: unknown[] = [];
    let running = 0;
    let maxRunning = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
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
      { connection, prefix, concurrency: 5 },
    );
    workers.push(worker);
    const done: string[] = [];
    worker.on('completed', (job) => done.push(job.id!));

    const first = await enqueueReconcile(queue, redis, data('api', 1), retry);
    await firstStarted;
    const second = await enqueueReconcile(queue, redis, data('api', 2), retry);
    const third = await enqueueReconcile(queue, redis, data('api', 3), retry);
    expect(second.how).toBe('after-active');
    expect(third.how).toBe('after-active');
    expect(await queue.getWaitingCount()).toBe(0);
    release();
    await expect.poll(() => done.length, { timeout: 5_000 }).toBe(2);
    expect(seen).toEqual([1, 3]);
    expect(maxRunning).toBe(1);
    expect(done).toEqual([first.jobId, third.jobId]);
  });

  it('clears a deduplication key left pointing at a job that no longer exists', async () => {
    await redis.set(queue.toKey('de:Deployment/ghost'), 'Deployment/ghost@gone');
    const enqueued = await enqueueReconcile(queue, redis, data('ghost', 1), retry);
    expect(enqueued.how).toBe('added');
    expect(await redis.get(queue.toKey('de:Deployment/ghost'))).toBe(enqueued.jobId);
  });
});
