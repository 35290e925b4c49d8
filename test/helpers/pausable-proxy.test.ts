// The pausable proxy on the real Redis: while paused a command gets no answer and the connection stays open (silence, not a reset); on resume the held command is answered, in order.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { pausableProxy } from './pausable-proxy.js';
import { dropPrefix, REDIS_URL, testPrefix } from './redis.js';
import { until } from './until.js';

describe('pausableProxy', () => {
  const prefix = testPrefix('pausable-proxy');
  afterAll(() => dropPrefix(prefix));

  it('holds both directions while paused and sends what it held on resume; the client sees no error', async () => {
    const proxy = await pausableProxy(REDIS_URL);
    const client = new Redis(proxy.url, { maxRetriesPerRequest: 1 });
    const errors: Error[] = [];
    client.on('error', (error: Error) => errors.push(error));
    try {
      expect(await client.set(`${prefix}:k`, '1')).toBe('OK');
      proxy.pause();
      let answered: string | null | undefined;
      const pending = client.incr(`${prefix}:k`).then((n) => (answered = String(n)));
      await until('the command held in the proxy', () => proxy.heldBytes() > 0, 5_000, 10);
      // Redis never saw it: the key is unchanged, and the client has no answer.
      const direct = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      expect(await direct.get(`${prefix}:k`)).toBe('1');
      direct.disconnect();
      expect(answered).toBeUndefined();
      proxy.resume();
      await pending;
      expect(answered).toBe('2');
      expect(proxy.heldBytes()).toBe(0);
      expect(errors).toEqual([]);
      expect(client.status).toBe('ready');
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });
});
