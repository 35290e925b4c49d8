// The `windows:` list of the config file: each change window checked (its cron through cron-parser, its time zone, its duration), one file:line:column line per mistake.
import { CronExpressionParser } from 'cron-parser';
import type { Document, LineCounter } from 'yaml';
import { z } from 'zod';
import { formatDiagnostic } from './diagnostics.js';
import { parseDuration } from './duration.js';
import { UsageError } from './errors.js';
import { displayPath, issueText } from './manifest/issues.js';
import { offsetForPath, positionAt } from './manifest/locate.js';
import type { ChangeWindow } from './windows.js';

/** Windows in one config file at most. */
const MAX_WINDOWS = 50;

const CRON_HINT =
  'write 5 fields, minute hour day-of-month month day-of-week, e.g. "0 22 * * *" (22:00 every day) or "0 8 * * 1-5"';

/** A 5-field cron expression that cron-parser reads. */
const Schedule = z.string().superRefine((text, ctx) => {
  const fields = text
    .trim()
    .split(/\s+/)
    .filter((f) => f !== '');
  if (fields.length !== 5) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" has ${fields.length} field${fields.length === 1 ? '' : 's'}; ${CRON_HINT}`,
    });
    return;
  }
  try {
    CronExpressionParser.parse(text, { tz: 'UTC', strict: false }).next();
  } catch (error) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is not a cron schedule (${(error as Error).message}); ${CRON_HINT}`,
    });
  }
});

/** A duration with a unit, more than 0. */
const Duration = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const text = String(value);
  try {
    const ms = parseDuration(text, 'duration');
    if (ms >= 1000) return { ms, text: text.trim() };
    ctx.issues.push({
      code: 'custom',
      input: value,
      message: `"${text}" is too short; give at least 1s, e.g. 30m or 2h`,
    });
  } catch {
    ctx.issues.push({
      code: 'custom',
      input: value,
      message: `"${text}" is not a duration; write a number with a unit, e.g. 90m or 2h`,
    });
  }
  return z.NEVER;
});

/** An IANA time zone this runtime knows. */
const TimeZone = z.string().superRefine((zone, ctx) => {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
  } catch {
    ctx.addIssue({
      code: 'custom',
      message: `"${zone}" is not a time zone; give an IANA name, e.g. UTC, Europe/Berlin or America/New_York`,
    });
  }
});

const WindowSchema = z.strictObject({
  kind: z.enum(['deny', 'allow']),
  schedule: Schedule,
  duration: Duration,
  timezone: TimeZone.optional(),
  manual: z.boolean().optional(),
});
const WindowsSchema = z.array(WindowSchema).max(MAX_WINDOWS);

/** One line per problem: `file:line:column: error: windows[1].schedule: ...`. */
function located(
  doc: Document,
  lines: LineCounter,
  file: string,
  path: ReadonlyArray<PropertyKey>,
  message: string,
  at: 'key' | 'value' = 'value',
): string {
  const { line, column } = positionAt(lines, offsetForPath(doc, ['windows', ...path], at));
  return formatDiagnostic({
    severity: 'error',
    file,
    line,
    column,
    message: `${displayPath(['windows', ...path])}: ${message}`,
  });
}

/**
 * The `windows:` list of a parsed config file (docs/rollouts.md, "Change windows"). Throws UsageError with one
 * `file:line:column` line per problem: an unknown key, a missing one, a bad kind, cron, duration or time zone.
 */
export function windowsFromConfig(doc: Document, lines: LineCounter, file: string): ChangeWindow[] {
  const root: unknown = doc.toJS();
  const list = typeof root === 'object' && root !== null && 'windows' in root ? root.windows : undefined;
  if (list === undefined || list === null) return [];
  const parsed = WindowsSchema.safeParse(list, { error: (issue) => issueText(issue) });
  if (!parsed.success) {
    const problems: string[] = [];
    for (const issue of parsed.error.issues.slice(0, 20)) {
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys)
          problems.push(
            located(
              doc,
              lines,
              file,
              [...issue.path, key],
              `unknown key "${key}"; known: kind, schedule, duration, timezone, manual`,
              'key',
            ),
          );
      } else {
        problems.push(located(doc, lines, file, issue.path, issue.message));
      }
    }
    throw new UsageError(problems.join('\n'));
  }
  return parsed.data.map((entry) => ({
    kind: entry.kind,
    schedule: entry.schedule.trim(),
    durationMs: entry.duration.ms,
    duration: entry.duration.text,
    timezone: entry.timezone ?? 'UTC',
    manual: entry.manual ?? false,
  }));
}
