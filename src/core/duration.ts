// Durations written with a unit (300ms, 5s, 5m, 1h), as docs/contracts.md §2 requires.
import { UsageError } from './errors.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Parses `300ms`, `5s`, `1.5m`, `2h` into milliseconds; throws UsageError naming the setting otherwise. */
export function parseDuration(text: string, setting = 'duration'): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(String(text));
  if (!match) {
    throw new UsageError(
      `${setting}: "${text}" is not a duration; write a number with a unit, e.g. 300ms, 5s, 5m or 1h`,
    );
  }
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}
