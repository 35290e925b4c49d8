// The election loop of a replica on a real Redis, recording what it is told (the lease suites, standalone and Cluster).
import type { Redis } from 'ioredis';
import { Lease } from '../../src/leader/lease.js';
import { Leadership } from '../../src/leader/leadership.js';

/** A factory of replicas' loops on `prefix` (lease `ttlMs`, standby poll 100 ms), each pushing "ID leads N", "ID standby: WHY", "ID error E" to `events`. */
export function electionLoops(redis: Redis, prefix: string, ttlMs: number, events: string[]): (id: string) => Leadership {
  return (id) =>
    new Leadership(new Lease(redis, prefix, id, ttlMs), {
      onLead: async (token) => void events.push(`${id} leads ${token}`),
      onStandby: async (why) => void events.push(`${id} standby: ${why}`),
      onError: (e) => events.push(`${id} error ${String(e)}`),
    }, 100);
}
