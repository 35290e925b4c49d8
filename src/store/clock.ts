// One clock for every time two replicas compare (a delete's grace, the flap window, the event log's age bound): Redis' TIME.
import type { Redis } from 'ioredis';

/** Redis' clock now, in ms since the epoch (TIME: seconds and microseconds, read through ioredis' `time()`). */
export async function redisNow(redis: Pick<Redis, 'time'>): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** One reading of this process's wall clock against Redis' clock. */
export interface ClockReading {
  /** This process's wall clock minus Redis' (ms): positive when this replica's clock runs ahead. */
  skewMs: number;
  /** The round trip of the TIME command (ms): the reading is exact to within half of it. */
  roundTripMs: number;
}

/** How far this process's wall clock (`local`, Date.now by default) is from Redis' clock, read once. */
export async function readClockSkew(redis: Pick<Redis, 'time'>, local: () => number = Date.now): Promise<ClockReading> {
  const before = local();
  const now = await redisNow(redis);
  const after = local();
  return { skewMs: Math.round((before + after) / 2 - now), roundTripMs: Math.max(0, after - before) };
}
