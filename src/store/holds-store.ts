// The daemon's holds in Redis (`${prefix}:daemon:holds`): per resource, why its writes stop (a failed revision of its desired state), kept across restarts.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { HOLD_REASONS, type ResourceHold } from '../core/holds.js';
import { parseStoredHash } from './schema.js';

/** `${prefix}:daemon:holds`: one Redis hash, resourceKey -> JSON of a ResourceHold (hashes and ids only, never a secret). */
export function holdsKey(prefix: string): string {
  return `${prefix}:daemon:holds`;
}

export const StoredHold = z.object({
  reason: z.enum(HOLD_REASONS),
  desired: z.string(),
  message: z.string(),
  since: z.string(),
  revisionId: z.string().optional(),
  revisionStatus: z.string().optional(),
});

/**
 * Shared by every replica on the prefix and kept across restarts, so that a restarted daemon does not rebuild an
 * input whose revision already failed. An entry it cannot read (a newer converge's reason) is left alone and ignored.
 */
export class RedisHoldStore {
  private readonly redis: Redis;
  private readonly key: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.key = holdsKey(prefix);
  }

  async getAll(): Promise<Map<string, ResourceHold>> {
    return parseStoredHash(StoredHold, await this.redis.hgetall(this.key));
  }

  async set(key: string, hold: ResourceHold): Promise<void> {
    await this.redis.hset(this.key, key, JSON.stringify(hold));
  }

  /** Removes the holds of these resources; returns how many there were. */
  async release(keys: readonly string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return this.redis.hdel(this.key, ...keys);
  }
}
