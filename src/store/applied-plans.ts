// The saved plans applied on this prefix (`converge apply --plan`), by checksum: a plan is applied once, never twice.
import type { Redis } from 'ioredis';

/** `${prefix}:applied-plans`: one Redis hash, field a saved plan's checksum ("sha256:…", no secret) -> ISO time it was applied. */
export function appliedPlansKey(prefix: string): string {
  return `${prefix}:applied-plans`;
}

/** The record of saved plans applied; one field per apply --plan (a few dozen bytes each). */
export class AppliedPlans {
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.key = appliedPlansKey(prefix);
  }

  /** When the plan of `checksum` was applied (claimed), or undefined: never on this prefix. */
  async appliedAt(checksum: string): Promise<string | undefined> {
    return (await this.redis.hget(this.key, checksum)) ?? undefined;
  }

  /**
   * Claims the plan of `checksum` for this apply, atomically (HSETNX): undefined when it is claimed now, else the time
   * an earlier apply claimed it (the plan was applied already, or is being applied by another process).
   */
  async claim(checksum: string, at: Date): Promise<string | undefined> {
    const set = await this.redis.hsetnx(this.key, checksum, at.toISOString());
    if (set === 1) return undefined;
    return (await this.redis.hget(this.key, checksum)) ?? 'an unknown time';
  }
}
