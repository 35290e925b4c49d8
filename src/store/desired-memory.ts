// The daemon's memory of desired states seen in sync, in Redis beside the applied state (see src/core/drift.ts).
import type { Redis } from 'ioredis';

/** `${prefix}:daemon:desired`: one Redis hash, resourceKey -> fingerprint of the desired state last brought in sync. */
export function desiredMemoryKey(prefix: string): string {
  return `${prefix}:daemon:desired`;
}

/**
 * Per resource, the fingerprint of the desired state converge last saw in sync (a noop plan, or a job that
 * finished). Shared by every replica on the Redis, and kept across restarts, so a manifest change made while
 * no daemon ran is still recognised as a change and applied.
 */
export class RedisDesiredMemory {
  private readonly redis: Redis;
  private readonly key: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.key = desiredMemoryKey(prefix);
  }

  async getAll(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hgetall(this.key)));
  }

  async getSome(keys: Iterable<string>): Promise<Map<string, string>> {
    const wanted = [...keys];
    if (wanted.length === 0) return new Map();
    const values = await this.redis.hmget(this.key, ...wanted);
    return new Map(wanted.flatMap((key, i) => (values[i] == null ? [] : [[key, values[i]] as const])));
  }

  async set(entries: ReadonlyMap<string, string>): Promise<void> {
    if (entries.size === 0) return;
    await this.redis.hset(this.key, Object.fromEntries(entries));
  }

  /** Forgets resources no manifest declares any more. */
  async retain(keys: ReadonlySet<string>): Promise<number> {
    const stale = (await this.redis.hkeys(this.key)).filter((k) => !keys.has(k));
    if (stale.length === 0) return 0;
    return this.redis.hdel(this.key, ...stale);
  }
}
