// Service log lines as text (pure): one line per entry in the official tool's shape, every secret value masked.
import type { LogEntry } from './wire/schema.js';
import { maskValues } from './mask.js';

/** At most this many lines of a failed build are shown where a failure is reported. */
export const BUILD_LOG_TAIL_LINES = 20;

/** What stands in for a secret value in a shown log line. */
export const MASKED = '********';

/** Control characters (a log line must not move the cursor or ring a bell), except tab. */
// eslint-disable-next-line no-control-regex -- matching control characters is this expression's purpose
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/** A log timestamp as `YYYY-MM-DD HH:MM:SS` (UTC) from ms since the epoch; text as given; '' when absent. */
export function logTimestamp(timestamp: LogEntry['timestamp']): string {
  if (typeof timestamp === 'number' && Number.isFinite(timestamp)) return new Date(timestamp).toISOString().slice(0, 19).replace('T', ' ');
  return typeof timestamp === 'string' ? timestamp : '';
}

/** `[time] [LEVEL] message`, as the official tool prints a log entry, secret values masked and control characters made spaces. */
export function formatLogEntry(entry: LogEntry, mask: readonly string[]): string {
  const message = maskValues(entry.message, mask, MASKED).replace(CONTROL, ' ');
  const time = logTimestamp(entry.timestamp);
  const level = entry.level ? `[${entry.level}] ` : '';
  return time ? `[${time}] ${level}${message}` : `${level}${message}`;
}

/** The last `max` entries of a newest-first page as lines, oldest first (the order a reader expects). */
export function tailLines(newestFirst: readonly LogEntry[], mask: readonly string[], max = BUILD_LOG_TAIL_LINES): string[] {
  return newestFirst.slice(0, max).reverse().map((entry) => formatLogEntry(entry, mask));
}
