// Drift: telling "the manifest changed" from "the live deployment changed behind converge's back", per resource.
import type { Redis } from 'ioredis';
import { kindOf } from '../core/kinds/index.js';
import type { DesiredResource, DriftPolicy } from '../core/model.js';

/**
 * A hash of what a manifest asks for (its kind's fingerprint, src/core/kinds): the resource without its location,
 * secret sources replaced by the hashes of the desired values. Holds no secret value.
 */
export function desiredFingerprint(resource: DesiredResource, secretHashes: Readonly<Record<string, string>>): string {
  return kindOf(resource.kind).fingerprint(resource, secretHashes);
}

/** `${prefix}:daemon:desired`: one Redis hash, resourceKey -> fingerprint of the desired state last brought in sync. */
export function desiredMemoryKey(prefix: string): string {
  return `${prefix}:daemon:desired`;
}

/**
 * Per resource, the fingerprint of the desired state converge last saw in sync (a noop plan, or a job that
 * finished). Shared by every replica on the Redis, and kept across restarts, so a manifest change made while
 * no daemon ran is still recognised as a change and applied.
 */
export class DesiredMemory {
  private readonly redis: Redis;
  private readonly key: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.key = desiredMemoryKey(prefix);
  }

  async getAll(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hgetall(this.key)));
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

export type DriftDecision =
  /** No drift: a manifest change (or a first sight) to apply. */
  | { kind: 'apply' }
  /** Live drifted from an unchanged manifest; the policy says revert it. */
  | { kind: 'heal' }
  /** Live drifted from an unchanged manifest; the policy says leave it and report it. */
  | { kind: 'report' };

/**
 * Decides what a planned create/update of a deployment means. It is drift when the desired state is the one last
 * seen in sync: then only the live side can have changed. Otherwise the manifest changed (or converge never saw
 * the resource in sync), and the change is applied under either policy.
 */
export function decideDrift(remembered: string | undefined, fingerprint: string, policy: DriftPolicy): DriftDecision {
  if (remembered !== fingerprint) return { kind: 'apply' };
  return policy === 'report' ? { kind: 'report' } : { kind: 'heal' };
}
