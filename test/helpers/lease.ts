// The election loop of a replica on a real Redis, recording what it is told (the lease suites, standalone and Cluster), and when a lease key expires on Redis' own clock.
import type { Redis } from 'ioredis';
import { Lease, leaseKey } from '../../src/leader/lease.js';
import { Leadership } from '../../src/leader/leadership.js';

/** A factory of replicas' loops on `prefix` (lease `ttlMs`, standby poll 100 ms), each pushing "ID leads N", "ID standby: WHY", "ID error E" to `events`. */
export function electionLoops(
  redis: Redis,
  prefix: string,
  ttlMs: number,
  events: string[],
): (id: string) => Leadership {
  return (id) =>
    new Leadership(
      new Lease(redis, prefix, id, ttlMs),
      {
        onLead: async (token) => void events.push(`${id} leads ${token}`),
        onStandby: async (why) => void events.push(`${id} standby: ${why}`),
        onError: (e) => events.push(`${id} error ${String(e)}`),
      },
      100,
    );
}

/**
 * When the lease key of `prefix` expires, in microseconds of Redis' own clock (TIME and PTTL in one transaction), or
 * undefined when there is no key. Comparable with a fencing token, which is at least Redis' clock in microseconds when
 * it was handed out (src/leader/lease.ts): a token not below it was taken after the key expired (or was deleted), on
 * one clock, whatever the machine's speed. PTTL counts whole milliseconds: compare with PTTL_SLACK_MICROS of slack.
 */
export async function leaseExpiryMicros(redis: Redis, prefix: string): Promise<number | undefined> {
  const answers = await redis.multi().time().pttl(leaseKey(prefix)).exec();
  const [time, pttl] = (answers ?? []).map(([error, value]) => {
    if (error) throw error;
    return value;
  }) as [[string, string], number];
  if (pttl < 0) return undefined;
  return Number(time[0]) * 1_000_000 + Number(time[1]) + pttl * 1_000;
}

/** How far leaseExpiryMicros may lie past the real expiry: PTTL's whole milliseconds, and TIME read within the same transaction. */
export const PTTL_SLACK_MICROS = 2_000;
