// The applied-state epoch: a random value written once into the Redis prefix; if it changes or vanishes, Redis lost converge's records.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** `${prefix}:epoch`: a random hex string, set when absent (SET NX) by the first daemon to start on the prefix. */
export function epochKey(prefix: string): string {
  return `${prefix}:epoch`;
}

/**
 * The epoch of the prefix. The applied state, the pending writes and the daemon's desired-state memory live beside
 * it in the same Redis: a Redis restarted without persistence, flushed, evicting keys or failed over to an empty
 * replica loses them together, and the epoch with them. A daemon that remembers the epoch it started with sees the
 * loss as a missing or different value.
 */
export class AppliedStateEpoch {
  private readonly redis: Redis;
  private readonly key: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.key = epochKey(prefix);
  }

  /** The prefix's epoch, written now when there is none. */
  async ensure(): Promise<string> {
    const fresh = randomBytes(16).toString('hex');
    await this.redis.set(this.key, fresh, 'NX');
    return (await this.redis.get(this.key)) ?? fresh;
  }

  /** The epoch as stored now (null: none). Throws when Redis does not answer. */
  async read(): Promise<string | null> {
    return this.redis.get(this.key);
  }
}

/** What `CONFIG GET maxmemory-policy` said, or why it could not be asked (managed Redis often refuses CONFIG). */
export type EvictionPolicy = { policy: string } | { unknown: string };

/** Redis' maxmemory-policy: anything but noeviction may evict converge's keys (jobs, applied state) under memory pressure. */
export async function readEvictionPolicy(redis: Redis): Promise<EvictionPolicy> {
  try {
    const reply = await redis.config('GET', 'maxmemory-policy');
    const pairs = Array.isArray(reply) ? reply.map(String) : [];
    const at = pairs.indexOf('maxmemory-policy');
    if (at < 0 || pairs[at + 1] === undefined) return { unknown: 'CONFIG GET maxmemory-policy answered nothing' };
    return { policy: pairs[at + 1]! };
  } catch (error) {
    return { unknown: `CONFIG GET maxmemory-policy was refused (${(error as Error).message.split('\n')[0]})` };
  }
}
