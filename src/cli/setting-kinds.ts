// The kinds of setting (text, whole number, duration, switch, ...): how each reads its raw value, and the registry of
// each setting's source (flag, environment variable, config-file key).
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';
import { UsageError } from '../core/errors.js';
import type { WaveLimit } from '../core/waves.js';

/** Where one setting comes from (flag, environment variable, config-file key) and how --help shows it. */
interface SourceFields {
  flag: string;
  env: string;
  key: string;
  placeholder?: string;
  description: string;
  /** The words the setting may be (oneOf): what shell completion offers for its flag. */
  choices?: readonly string[];
}

/** A setting's source, and its flag's parseArgs type (which the setting's kind decides). */
export interface SettingSource extends SourceFields {
  /** A boolean setting is a switch; a list is a flag given once per value; every other takes a value. */
  flagType: 'string' | 'boolean' | 'list';
}

/** Each setting's schema is registered here with its source; `sourceOf` looks it up. */
const SOURCES = z.registry<SettingSource>();

/** The source a setting's schema was registered with. */
export function sourceOf(schema: z.ZodType): SettingSource | undefined {
  return SOURCES.get(schema);
}

/**
 * A setting's raw value: the first of flag, environment variable and config file that holds one, and
 * `origin`, the name errors print (`--concurrency`, `CONVERGE_CONCURRENCY`, `FILE: concurrency`).
 */
function candidate(source: SourceFields) {
  return z.object(
    { value: z.union([z.string(), z.number(), z.boolean()]), origin: z.string() },
    {
      error: (issue) =>
        issue.input === undefined ? `setting ${source.key} has no value; set --${source.flag}` : undefined,
    },
  );
}

type RawValue = string | number | boolean;

/**
 * Reads a raw value with `read`, which throws UsageError naming the origin (as parseDuration does);
 * the error becomes the schema's issue.
 */
function readWith<T>(source: SourceFields, read: (value: RawValue, origin: string) => T) {
  return candidate(source).transform(({ value, origin }, ctx) => {
    try {
      return read(value, origin);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      ctx.issues.push({ code: 'custom', input: value, message: error.message });
      return z.NEVER;
    }
  });
}

/** Registers a setting's schema with its source. */
function register<S extends z.ZodType>(schema: S, source: SourceFields, flagType: SettingSource['flagType']): S {
  SOURCES.add(schema, { ...source, flagType });
  return schema;
}

/** Text; required. */
export function text(source: SourceFields) {
  return register(readWith(source, String), source, 'string');
}

/** Text that may be absent: then undefined. */
export function optionalText(source: SourceFields) {
  return register(
    candidate(source)
      .optional()
      .transform((found) => (found === undefined ? undefined : String(found.value))),
    source,
    'string',
  );
}

/** A whole number from `min` to `max`. */
export function wholeNumber(source: SourceFields, min = 0, max = Number.MAX_SAFE_INTEGER) {
  const read = (value: RawValue, origin: string): number => {
    const text = String(value);
    if (!/^\d+$/.test(text)) throw new UsageError(`${origin}: "${text}" is not a whole number`);
    const number = Number(text);
    if (number < min) throw new UsageError(`${origin}: ${text} is too small; give at least ${min}`);
    if (number > max) throw new UsageError(`${origin}: ${text} is too large; give at most ${max}`);
    return number;
  };
  return register(readWith(source, read), source, 'string');
}

/** A limit of a wave's writes in flight: a count (at least 1) or a percentage of the wave (1% to 100%); absent: none. */
export function waveLimit(source: SourceFields) {
  const read = (value: RawValue, origin: string): WaveLimit => {
    const text = String(value).trim();
    const match = /^(\d+)(%?)$/.exec(text);
    const number = match ? Number(match[1]) : Number.NaN;
    if (!match || number < 1 || (match[2] === '%' && number > 100)) {
      throw new UsageError(
        `${origin}: "${text}" is not a count or a percentage of the wave; give e.g. 2 or 25% (at least 1, at most 100%)`,
      );
    }
    return match[2] === '%' ? { percent: number } : { count: number };
  };
  return register(
    candidate(source)
      .optional()
      .transform((found, ctx) => {
        if (found === undefined) return undefined;
        try {
          return read(found.value, found.origin);
        } catch (error) {
          if (!(error instanceof UsageError)) throw error;
          ctx.issues.push({ code: 'custom', input: found.value, message: error.message });
          return z.NEVER;
        }
      }),
    source,
    'string',
  );
}

/** A TCP port: 1 to 65535, or 0 for any free port. */
export function port(source: SourceFields) {
  const read = (value: RawValue, origin: string): number => {
    const text = String(value);
    if (!/^\d+$/.test(text) || Number(text) > 65_535)
      throw new UsageError(`${origin}: "${text}" is not a port; give 1 to 65535 (0: any free port)`);
    return Number(text);
  };
  return register(readWith(source, read), source, 'string');
}

/** A duration with a unit (300ms, 5s, 5m), in milliseconds, at least `minMs`. */
export function duration(source: SourceFields, minMs = 0) {
  const read = (value: RawValue, origin: string): number => {
    const ms = parseDuration(String(value), origin);
    if (ms < minMs)
      throw new UsageError(`${origin}: "${String(value)}" is too short; give at least ${formatMs(minMs)}`);
    return ms;
  };
  return register(readWith(source, read), source, 'string');
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** A switch: true, yes, on or 1; false, no, off or 0; false when absent. */
export function onOff(source: SourceFields) {
  const read = (value: RawValue, origin: string): boolean => {
    if (typeof value === 'boolean') return value;
    const text = String(value);
    if (/^(1|true|yes|on)$/i.test(text)) return true;
    if (/^(0|false|no|off)$/i.test(text)) return false;
    throw new UsageError(`${origin}: "${text}" is not a boolean; use true or false`);
  };
  return register(readWith(source, read).default(false), source, 'boolean');
}

/** One of `choices`. */
export function oneOf<const C extends readonly string[]>(choices: C, source: SourceFields) {
  const read = (value: RawValue, origin: string): C[number] => {
    const text = String(value);
    const choice = choices.find((c) => c === text);
    if (choice === undefined) throw new UsageError(`${origin}: "${text}" is not one of ${choices.join(', ')}`);
    return choice;
  };
  return register(readWith(source, read), { ...source, choices }, 'string');
}

/**
 * Paths, in order: the flag given once per path, the environment variable's comma-separated paths, or a list in the
 * config file; none: an empty list. Relative paths are relative to the working directory.
 */
export function pathList(source: SourceFields) {
  return register(
    z
      .object({ value: z.union([z.string(), z.array(z.string())]), origin: z.string() })
      .optional()
      .transform((found) => {
        if (found === undefined) return [];
        const values = Array.isArray(found.value) ? found.value : found.value.split(',');
        return values.map((value) => value.trim()).filter((value) => value !== '');
      }),
    source,
    'list',
  );
}
