// Which service a Redis prefix serves: jobs and applied hashes of two services or tenants must never mix.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ConvergeError } from '../core/errors.js';

/** The service converge writes to: base URL and workspace. */
export interface ServiceTarget {
  apiUrl: string;
  tenantId?: string | undefined;
}

/** `${prefix}:target`: a short hash of the service URL and tenant that first used the prefix. */
export function targetKey(prefix: string): string {
  return `${prefix}:target`;
}

export function targetIdentity(target: ServiceTarget): string {
  return createHash('sha256')
    .update(`${target.apiUrl.replace(/\/+$/, '')}\0${target.tenantId ?? ''}`)
    .digest('hex')
    .slice(0, 16);
}

/** Binds the prefix to the target on first use; refuses (E_REDIS_PREFIX) a prefix bound to another one. */
export async function claimPrefix(redis: Redis, prefix: string, target: ServiceTarget): Promise<void> {
  const mine = targetIdentity(target);
  await redis.set(targetKey(prefix), mine, 'NX');
  const current = await redis.get(targetKey(prefix));
  if (current === mine) return;
  throw new ConvergeError(
    'E_REDIS_PREFIX',
    `Redis prefix ${prefix} already serves another service URL or tenant; give each service its own --redis-prefix (e.g. {converge-prod}), or if this is the same service at a new address, delete the Redis key ${targetKey(prefix)}`,
  );
}
