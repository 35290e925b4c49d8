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
  if (typeof timestamp === 'number' && Number.isFinite(timestamp))
    return new Date(timestamp).toISOString().slice(0, 19).replace('T', ' ');
  return typeof timestamp === 'string' ? timestamp : '';
}

/** `[time] [LEVEL] message`, as the official tool prints a log entry, secret values masked and control characters made spaces. */
export function formatLogEntry(entry: LogEntry, mask: readonly string[]): string {
  const message = maskValues(entry.message, mask, MASKED).replace(CONTROL, ' ');
  const time = logTimestamp(entry.timestamp);
  const level = entry.level ? `[${entry.level}] ` : '';
  return time ? `[${time}] ${level}${message}` : `${level}${message}`;
}

/** A shown log line keeps at most this many characters (4 KiB of ASCII); the rest is cut, and the cut said. */
export const MAX_LOG_LINE_CHARS = 4_096;

/** `line` cut to MAX_LOG_LINE_CHARS with a marker saying how long it was (masked before: never half a secret). */
export function capLine(line: string): string {
  if (line.length <= MAX_LOG_LINE_CHARS) return line;
  const [length, kept] = [line.length, MAX_LOG_LINE_CHARS].map((n) => n.toLocaleString('en-US'));
  return `${line.slice(0, MAX_LOG_LINE_CHARS)} … [line cut: ${length} characters, the first ${kept} kept]`;
}

/** The last `max` entries of a newest-first page as lines, oldest first (the order a reader expects), each capped. */
export function tailLines(
  newestFirst: readonly LogEntry[],
  mask: readonly string[],
  max = BUILD_LOG_TAIL_LINES,
): string[] {
  return newestFirst
    .slice(0, max)
    .reverse()
    .map((entry) => capLine(formatLogEntry(entry, mask)));
}
