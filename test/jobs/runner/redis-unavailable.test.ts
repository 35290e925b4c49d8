// A job whose applied-state store loses Redis mid-way is retried, never failed for good (found by the e2e Redis restart).
import { UnrecoverableError, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../../src/service/client.js';
import type { DeploymentResource } from '../../../src/core/model.js';
import { startEmulator, type RunningEmulator } from '../../../src/emulator/server.js';
import { AppliedStateStore } from '../../../src/store/applied-state.js';
import { buildJobData } from '../../../src/jobs/queue/jobs.js';
import { decidedWrite } from '../../helpers/job-fixtures.js';
import { closeRedis, connectProducer, isRedisUnavailable, RedisUnavailableError } from '../../../src/store/redis.js';
import { createProcessor, RetryableJobError } from '../../../src/jobs/runner/processor.js';
import { SILENT_LOGGER } from '../../../src/jobs/runner/worker.js';
import { REDIS_URL, testPrefix } from '../../helpers/redis.js';

const resource: DeploymentResource = {
  kind: 'Deployment',
  name: 'redis-blip',
  location: { file: 'blip.yaml', line: 1, column: 1 },
  suspend: false,
  spec: { source: 'external_docker', source_revision_config: { image_uri: 'docker.io/acme/blip:1' } },
};

describe('jobs when Redis goes away', () => {
  let emulator: RunningEmulator;
  let client: ServiceClient;
  beforeAll(async () => {
    emulator = await startEmulator({ buildMs: 0 });
    client = new ServiceClient({ baseUrl: emulator.url });
  });
  afterAll(async () => {
    await client.close();
    await emulator.close();
  });

  it('isRedisUnavailable: connection, offline, loading and failover errors; not other errors', () => {
    expect(isRedisUnavailable(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(true);
    expect(isRedisUnavailable(new Error('Connection is closed.'))).toBe(true);
    expect(isRedisUnavailable(new Error('LOADING Redis is loading the dataset in memory'))).toBe(true);
    expect(isRedisUnavailable(new Error("READONLY You can't write against a read only replica."))).toBe(true);
    expect(isRedisUnavailable(new RedisUnavailableError('Redis at redis://x is unreachable'))).toBe(true);
    expect(isRedisUnavailable(new Error('ERR wrong number of arguments'))).toBe(false);
    expect(isRedisUnavailable(new TypeError('x is not a function'))).toBe(false);
    expect(isRedisUnavailable('Connection is closed.')).toBe(false);
  });

  it('a real closed connection under the applied-state store makes the attempt retryable, not final', async () => {
    const prefix = testPrefix('blip');
    const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    redis.disconnect(); // every command now fails the way it does while Redis restarts
    const processor = createProcessor({
      client,
      store: new AppliedStateStore(redis, prefix),
      env: {},
      log: SILENT_LOGGER,
      rateLimit: async () => undefined,
    });
    const data = buildJobData(resource, 'create-deployment', { origin: 'test', write: decidedWrite(resource) });
    const job = { id: 'blip-1', data, attemptsMade: 0 } as unknown as Job;
    const failure = await processor(job).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RetryableJobError);
    expect(failure).not.toBeInstanceOf(UnrecoverableError);
    expect((failure as Error).message).toMatch(/^Redis was unavailable: /);
    // nothing was sent: the store is read before any write
    expect(emulator.requestLog.filter((e) => e.method !== 'GET')).toEqual([]);
  });

  it('a job with a literal secret fails at once in a worker that holds no literal values (no manifest is read)', async () => {
    const prefix = testPrefix('literal');
    const redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    try {
      const processor = createProcessor({
        client,
        store: new AppliedStateStore(redis, prefix),
        env: {},
        log: SILENT_LOGGER,
        rateLimit: async () => undefined,
      });
      const literal: DeploymentResource = {
        ...resource,
        name: 'literal',
        spec: { ...resource.spec, secrets: [{ name: 'TOKEN', from: { value: 'planted-literal-a7c1' } }] },
      };
      const job = {
        id: 'literal-1',
        data: buildJobData(literal, 'create-deployment', { origin: 'test', write: decidedWrite(literal) }),
        attemptsMade: 0,
      } as unknown as Job;
      const failure = await processor(job).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(UnrecoverableError);
      expect((failure as Error).message).toMatch(
        /^Deployment\/literal: secret TOKEN is a literal value in the manifest \(.+, --allow-literal-secrets\)/,
      );
      expect((failure as Error).message).not.toContain('planted-literal-a7c1');
      expect(emulator.requestLog.filter((e) => e.method !== 'GET')).toEqual([]);
    } finally {
      await closeRedis(redis);
    }
  });
});
