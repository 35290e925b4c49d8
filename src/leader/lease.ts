// The leader lease: one Redis key with a TTL held by one replica, renewed before it lapses, taken with a fencing token.
import type { Redis } from 'ioredis';
import { UsageError } from '../core/errors.js';

/** `${prefix}:lease`: "holder|token|since" while a replica holds the lease; expires after the lease time unless renewed. */
export function leaseKey(prefix: string): string {
  return `${prefix}:lease`;
}

/**
 * `${prefix}:lease-token`: the fencing counter. Every acquisition takes max(INCR, Redis' clock in microseconds), so the
 * token rises at every acquisition and keeps rising across a Redis that comes back empty (or restored from an older
 * snapshot): see docs/shutdown-and-leadership.md.
 */
export function fenceKey(prefix: string): string {
  return `${prefix}:lease-token`;
}

/** Who holds the lease: the replica id, its fencing token, and when it took the lease (its own clock; shown only). */
export interface LeaseHolder {
  holder: string;
  token: number;
  since: string;
}

export type AcquireResult =
  { acquired: true; token: number; since: string } | { acquired: false; holder: LeaseHolder | undefined };

// KEYS: lease, fence counter. ARGV: holder, ttl ms, since.
// Free, or still held by this holder (its renew failed on a blip): take it with a new token. Otherwise answer the holder.
// The token is max(INCR, now in microseconds by Redis' own clock (TIME)): INCR alone restarts at 1 on a Redis that lost
// its data, and a job stamped by the former leader would then look newer. Lua numbers are doubles, exact below 2^53
// (microseconds since 1970 reach it in the year 2255); '%.0f' writes them without an exponent.
const ACQUIRE = `
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, string.len(ARGV[1]) + 1) ~= ARGV[1] .. '|' then return {0, current} end
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local token = redis.call('INCR', KEYS[2])
if token < floor then
  token = floor
  redis.call('SET', KEYS[2], string.format('%.0f', token))
end
local text = string.format('%.0f', token)
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. text .. '|' .. ARGV[3], 'PX', ARGV[2])
return {1, text}
`;

// KEYS: lease. ARGV: "holder|token|", ttl ms. Extends the TTL only while the key is still this holder's with this token.
const RENEW = `
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`;

// KEYS: lease. ARGV: "holder|token|". Deletes the key only while it is still this holder's with this token.
const RELEASE = `
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

/** Parses the lease key's value; undefined for a value converge did not write. */
export function parseHolder(value: string | null | undefined): LeaseHolder | undefined {
  if (!value) return undefined;
  const last = value.lastIndexOf('|');
  const middle = value.lastIndexOf('|', last - 1);
  if (middle <= 0) return undefined;
  const token = Number(value.slice(middle + 1, last));
  if (!Number.isSafeInteger(token)) return undefined;
  return { holder: value.slice(0, middle), token, since: value.slice(last + 1) };
}

/**
 * The lease of one prefix as seen by one replica (`holder`). Only Redis TTLs decide who holds it: no wall clock of
 * another host is ever compared. Both keys carry the prefix's hash tag, so the scripts run on one Redis Cluster slot.
 */
export class Lease {
  readonly holder: string;
  readonly ttlMs: number;
  private readonly redis: Redis;
  private readonly key: string;
  private readonly fence: string;

  constructor(redis: Redis, prefix: string, holder: string, ttlMs: number) {
    if (holder.includes('|') || holder.trim().length === 0)
      throw new UsageError(`replica_id "${holder}" is not usable: give a name without '|', such as the pod name`);
    this.redis = redis;
    this.key = leaseKey(prefix);
    this.fence = fenceKey(prefix);
    this.holder = holder;
    this.ttlMs = Math.max(1, Math.round(ttlMs));
  }

  /** Takes the lease when nobody holds it (SET NX PX in a script, with a new fencing token); otherwise names the holder. */
  async tryAcquire(now: Date = new Date()): Promise<AcquireResult> {
    const since = now.toISOString();
    const [taken, value] = (await this.redis.eval(
      ACQUIRE,
      2,
      this.key,
      this.fence,
      this.holder,
      String(this.ttlMs),
      since,
    )) as [number, string];
    if (taken === 1) return { acquired: true, token: Number(value), since };
    return { acquired: false, holder: parseHolder(value) };
  }

  /** Extends the lease by the lease time; false when the key is gone or another holder (or token) has it now. */
  async renew(token: number): Promise<boolean> {
    return (await this.redis.eval(RENEW, 1, this.key, `${this.holder}|${token}|`, String(this.ttlMs))) === 1;
  }

  /** Gives the lease up at once (a standby takes it at its next try); false when it was no longer ours. */
  async release(token: number): Promise<boolean> {
    return (await this.redis.eval(RELEASE, 1, this.key, `${this.holder}|${token}|`)) === 1;
  }

  /** The holder now, if any. */
  async read(): Promise<LeaseHolder | undefined> {
    return parseHolder(await this.redis.get(this.key));
  }
}

/** The newest fencing token handed out on the prefix (0: none yet); a job carrying an older one is from a former leader. */
export async function currentFence(redis: Pick<Redis, 'get'>, prefix: string): Promise<number> {
  const value = await redis.get(fenceKey(prefix));
  return value === null ? 0 : Number(value);
}
