// The daemon's memory of desired states in sync, in a real Redis: all of it, or the fingerprints of some resources only.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisDesiredMemory } from '../../src/store/desired-memory.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const prefix = testPrefix('desired-memory');
const redis = new Redis(REDIS_URL);

afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

describe('RedisDesiredMemory', () => {
  it('answers the fingerprints of the keys asked for only, leaving out those it never saw in sync', async () => {
    const memory = new RedisDesiredMemory(redis, prefix);
    await memory.set(
      new Map([
        ['Deployment/a', 'fa'],
        ['Deployment/b', 'fb'],
        ['Deployment/c', 'fc'],
      ]),
    );
    expect(await memory.getSome(['Deployment/b', 'Deployment/unknown'])).toEqual(new Map([['Deployment/b', 'fb']]));
    expect(await memory.getSome([])).toEqual(new Map());
    expect(await memory.getAll()).toEqual(
      new Map([
        ['Deployment/a', 'fa'],
        ['Deployment/b', 'fb'],
        ['Deployment/c', 'fc'],
      ]),
    );
    expect(await memory.retain(new Set(['Deployment/a']))).toBe(2);
    expect(await memory.getSome(['Deployment/a', 'Deployment/b'])).toEqual(new Map([['Deployment/a', 'fa']]));
  });
});
