// Redis connections: fail-fast producers, patient workers, one-line errors (refused, silent, bad URL), no password shown, prefix checks.
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { closedPort, closingServer, REDIS_URL, silentServer } from '../helpers/redis.js';
import {
  checkPrefix,
  closeRedis,
  CONNECT_TIMEOUT_MS,
  connectProducer,
  connectWorker,
  redactRedisUrl,
  RedisUnavailableError,
} from '../../src/store/redis.js';

describe('Redis connections', () => {
  it('connects producers (fail-fast options) and workers (maxRetriesPerRequest null) to a live Redis', async () => {
    const producer = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: '{t}' });
    const worker = await connectWorker({ redisUrl: REDIS_URL, redisPrefix: '{t}' });
    try {
      expect(await producer.ping()).toBe('PONG');
      expect(producer.options.enableOfflineQueue).toBe(false);
      expect(producer.options.maxRetriesPerRequest).toBe(1);
      expect(worker.options.maxRetriesPerRequest).toBeNull();
      // What bounds a first connect to a Redis that never answers (the silent-server test below: its ETIMEDOUT).
      expect(producer.options.connectTimeout).toBe(CONNECT_TIMEOUT_MS);
      expect(worker.options.connectTimeout).toBe(CONNECT_TIMEOUT_MS);
      expect(await worker.ping()).toBe('PONG');
    } finally {
      await closeRedis(producer, worker);
    }
  });

  it('gives one line naming the URL and the cause when nothing listens, after one connection attempt', async () => {
    const port = await closedPort();
    const url = `redis://127.0.0.1:${port}`;
    // ioredis opens its socket with node's net.createConnection: each call is one connection attempt.
    const attempts = vi.spyOn(net, 'createConnection');
    try {
      const error = await connectProducer({ redisUrl: url, redisPrefix: '{t}' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect((error as RedisUnavailableError).code).toBe('E_REDIS');
      expect((error as Error).message).toBe(
        `Redis at ${url} is unreachable (ECONNREFUSED): start redis-server, or set --redis-url or REDIS_URL`,
      );
      // Fail-fast is the first refusal being final: one attempt, no reconnect waited for (the test's timeout guards a hang).
      expect(attempts).toHaveBeenCalledTimes(1);
      // worker connections check the same way instead of retrying forever
      const workerError = await connectWorker({ redisUrl: url, redisPrefix: '{t}' }).catch((e: unknown) => e);
      expect((workerError as Error).message).toContain('is unreachable (ECONNREFUSED)');
      expect(attempts).toHaveBeenCalledTimes(2);
    } finally {
      attempts.mockRestore();
    }
  });

  it('gives up after one connection attempt: a Redis that drops every connection sees one per client', async () => {
    const server = await closingServer();
    try {
      const url = `redis://127.0.0.1:${server.port}`;
      const error = await connectProducer({ redisUrl: url, redisPrefix: '{t}' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect((error as Error).message).toMatch(
        /^Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable \(\S+\): start redis-server, or set --redis-url or REDIS_URL$/,
      );
      expect(server.accepted()).toBe(1);
      const workerError = await connectWorker({ redisUrl: url, redisPrefix: '{t}' }).catch((e: unknown) => e);
      expect(workerError).toBeInstanceOf(RedisUnavailableError);
      expect(server.accepted()).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('gives up on a server that accepts but never answers, within the connect timeout', async () => {
    const silent = await silentServer();
    try {
      const url = `redis://127.0.0.1:${silent.port}`;
      const error = await connectProducer({ redisUrl: url, redisPrefix: '{t}' }, { connectTimeoutMs: 300 }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RedisUnavailableError);
      expect((error as Error).message).toBe(
        `Redis at ${url} is unreachable (ETIMEDOUT): start redis-server, or set --redis-url or REDIS_URL`,
      );
    } finally {
      await silent.close();
    }
  });

  it('never shows a password', async () => {
    expect(redactRedisUrl('redis://:hunter2@127.0.0.1:6379/0')).toBe('redis://:****@127.0.0.1:6379/0');
    const port = await closedPort();
    const error = await connectProducer({
      redisUrl: `redis://user:hunter2@127.0.0.1:${port}`,
      redisPrefix: '{t}',
    }).catch((e: unknown) => e);
    expect((error as Error).message).not.toContain('hunter2');
    expect((error as Error).message).toContain('user:****@127.0.0.1');
  });

  it('refuses URLs that are not redis:// with a usage error', async () => {
    await expect(connectProducer({ redisUrl: 'http://127.0.0.1:6379', redisPrefix: '{t}' })).rejects.toThrow(
      /must start with redis:\/\//,
    );
    await expect(connectProducer({ redisUrl: 'not a url', redisPrefix: '{t}' })).rejects.toThrow(/is not a URL/);
  });

  it('checks the key prefix', () => {
    expect(checkPrefix('{converge}')).toBe('{converge}');
    expect(() => checkPrefix('')).toThrow(/redis_prefix "" is not usable/);
    expect(() => checkPrefix('{converge}:')).toThrow(/no trailing ':'/);
    expect(() => checkPrefix('my prefix')).toThrow(/no spaces/);
  });
});
