// Whether a replica's wall clock is too far from the one clock every replica shares (Redis' TIME) and when to say so (pure).

/** Beyond this, a replica's wall clock is said to differ from Redis' (a warning and converge_clock_skew_seconds). */
export const CLOCK_SKEW_BOUND_MS = 5_000;

/** One reading of a wall clock against Redis' (src/store/clock.ts ClockReading). */
export interface SkewReading {
  /** Wall clock minus Redis' clock, ms (positive: ahead). */
  skewMs: number;
  /** The reading's round trip, ms: the skew is known to within half of it. */
  roundTripMs: number;
}

/** What was last said of the clock: beyond the bound or not, and the skew then. */
export interface SkewNotice {
  beyond: boolean;
  skewMs: number;
}

/** The notice after a reading, and what to log: `warn` (beyond the bound, newly or by another bound's worth), `info` (back within), none. */
export interface SkewChange {
  notice: SkewNotice;
  log?: 'warn' | 'info';
}

/**
 * Whether `reading` is news. A skew is beyond the bound only when it is beyond it by more than the reading's own
 * uncertainty (half its round trip), so a slow Redis is never taken for a wrong clock. Said once when it goes beyond,
 * again only when it moved by more than the bound since (not at every reading), and once when it comes back.
 */
export function skewChange(
  last: SkewNotice | undefined,
  reading: SkewReading,
  boundMs: number = CLOCK_SKEW_BOUND_MS,
): SkewChange {
  const beyond = Math.abs(reading.skewMs) - reading.roundTripMs / 2 > boundMs;
  const notice: SkewNotice = { beyond, skewMs: reading.skewMs };
  if (beyond && (!last?.beyond || Math.abs(reading.skewMs - last.skewMs) > boundMs)) return { notice, log: 'warn' };
  if (!beyond && last?.beyond) return { notice, log: 'info' };
  return { notice: last ?? notice };
}

/** The warning's words: how far, which way, and what it does and does not change. */
export function skewMessage(skewMs: number, boundMs: number = CLOCK_SKEW_BOUND_MS): string {
  const seconds = (Math.abs(skewMs) / 1000).toFixed(1);
  const way = skewMs >= 0 ? 'ahead of' : 'behind';
  return `this replica's clock is ${seconds} s ${way} Redis' clock (more than ${boundMs / 1000} s): converge times every delete's grace, the flap window and the event log's age on Redis' clock, so none of them is shortened, but this replica's log lines and the times it records are off by as much; synchronize this host's clock (NTP)`;
}
