// Error answers of the emulator: FastAPI-shaped 422 issues from zod failures, and {detail: text} failures.
import type { z } from 'zod';
import type { ValidationIssue } from '../core/wire/schema.js';

/** A failed request as the service answers it: status and the `detail` of the body. */
export interface ApiFailure {
  status: number;
  detail: string | ValidationIssue[];
  headers?: Record<string, string>;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: ApiFailure };

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function fail(status: number, detail: string | ValidationIssue[]): { ok: false; error: ApiFailure } {
  return { ok: false, error: { status, detail } };
}

export function issue(loc: Array<string | number>, msg: string, type = 'value_error'): ValidationIssue {
  return { loc, msg, type };
}

/** 422 with the given issues. */
export function invalid(issues: ValidationIssue[]): { ok: false; error: ApiFailure } {
  return fail(422, issues);
}

const TYPE_NAMES: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  number: ['float_type', 'Input should be a valid number'],
  int: ['int_type', 'Input should be a valid integer'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  array: ['list_type', 'Input should be a valid list'],
  object: ['model_attributes_type', 'Input should be a valid dictionary or object to extract fields from'],
  record: ['dict_type', 'Input should be a valid dictionary'],
};

function quoteList(values: readonly unknown[]): string {
  const quoted = values.map((v) => `'${String(v)}'`);
  if (quoted.length <= 1) return quoted.join('');
  return `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

/**
 * Maps zod issues to the service's 422 items: `loc` starts with where the value came from
 * (body, query, path). Messages never echo the input, so a secret value cannot leak through them.
 */
export function zodIssues(error: z.ZodError, where: 'body' | 'query' | 'path' | 'header'): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const raw of error.issues) {
    const loc: Array<string | number> = [where, ...raw.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
    out.push(...mapIssue(raw, loc));
  }
  return out;
}

function mapIssue(raw: z.core.$ZodIssue, loc: Array<string | number>): ValidationIssue[] {
  const absent = 'input' in raw && raw.input === undefined;
  if (absent && (raw.code === 'invalid_type' || raw.code === 'invalid_value'))
    return [issue(loc, 'Field required', 'missing')];
  switch (raw.code) {
    case 'invalid_type': {
      const [type, msg] = TYPE_NAMES[raw.expected] ?? [
        `${raw.expected}_type`,
        `Input should be a valid ${raw.expected}`,
      ];
      return [issue(loc, msg, type)];
    }
    case 'unrecognized_keys':
      return raw.keys.map((key) => issue([...loc, key], 'Extra inputs are not permitted', 'extra_forbidden'));
    case 'invalid_value':
      return [issue(loc, `Input should be ${quoteList(raw.values)}`, 'enum')];
    case 'too_small': {
      if (raw.origin === 'string') {
        const n = Number(raw.minimum);
        return [issue(loc, `String should have at least ${n} character${n === 1 ? '' : 's'}`, 'string_too_short')];
      }
      if (raw.origin === 'array')
        return [issue(loc, `List should have at least ${Number(raw.minimum)} items`, 'too_short')];
      return raw.inclusive === false
        ? [issue(loc, `Input should be greater than ${Number(raw.minimum)}`, 'greater_than')]
        : [issue(loc, `Input should be greater than or equal to ${Number(raw.minimum)}`, 'greater_than_equal')];
    }
    case 'too_big': {
      if (raw.origin === 'string') {
        const n = Number(raw.maximum);
        return [issue(loc, `String should have at most ${n} character${n === 1 ? '' : 's'}`, 'string_too_long')];
      }
      if (raw.origin === 'array')
        return [issue(loc, `List should have at most ${Number(raw.maximum)} items`, 'too_long')];
      return raw.inclusive === false
        ? [issue(loc, `Input should be less than ${Number(raw.maximum)}`, 'less_than')]
        : [issue(loc, `Input should be less than or equal to ${Number(raw.maximum)}`, 'less_than_equal')];
    }
    case 'invalid_format': {
      if (raw.format === 'uuid' || raw.format === 'guid')
        return [issue(loc, 'Input should be a valid UUID', 'uuid_parsing')];
      if (raw.format === 'regex') return [issue(loc, raw.message, 'string_pattern_mismatch')];
      return [issue(loc, `Input should be a valid ${raw.format}`, `${raw.format}_parsing`)];
    }
    case 'invalid_union': {
      // A nullish field with the wrong type: report the first branch's problem.
      const first = raw.errors[0]?.[0];
      if (first) return mapIssue(first, [...loc, ...first.path.map((p) => (typeof p === 'symbol' ? String(p) : p))]);
      return [issue(loc, 'Input does not match any allowed shape', 'union_tag_invalid')];
    }
    case 'custom': {
      const type = (raw.params as { type?: unknown } | undefined)?.type;
      return [issue(loc, raw.message, typeof type === 'string' ? type : 'value_error')];
    }
    default:
      return [issue(loc, raw.message, 'value_error')];
  }
}

/** A copy of `data` without `keys` in the object at `path` (copied along the path only). */
function withoutKeys(data: unknown, path: readonly PropertyKey[], keys: readonly string[]): unknown {
  if (path.length === 0) {
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
    const out: Record<string, unknown> = { ...(data as Record<string, unknown>) };
    for (const key of keys) delete out[key];
    return out;
  }
  const [head, ...rest] = path;
  if (Array.isArray(data) && typeof head === 'number') {
    const items: readonly unknown[] = data;
    return items.map((item, index) => (index === head ? withoutKeys(item, rest, keys) : item));
  }
  if (typeof data !== 'object' || data === null || typeof head !== 'string') return data;
  const record = data as Record<string, unknown>;
  return { ...record, [head]: withoutKeys(record[head], rest, keys) };
}

/** How many nesting levels of unknown fields a body may carry before the rest is refused (bounds the loop). */
const MAX_UNKNOWN_PASSES = 8;

/**
 * Parses with the schema; answers the 422 issues on failure. A body's unknown fields are ignored, never refused: the
 * real service's framework default, which the official deploy tool relies on (docs/official-tool.md, "What the
 * emulator serves"). The schemas stay strict so that the fields they name keep their types.
 */
export function parseWith<T extends z.ZodType>(
  schema: T,
  data: unknown,
  where: 'body' | 'query' | 'path',
): Result<z.infer<T>> {
  let input = data;
  for (let pass = 0; ; pass += 1) {
    const parsed = schema.safeParse(input, { reportInput: true });
    if (parsed.success) return ok(parsed.data);
    const unknown = parsed.error.issues.filter((i) => i.code === 'unrecognized_keys');
    if (where !== 'body' || unknown.length === 0 || pass >= MAX_UNKNOWN_PASSES)
      return invalid(zodIssues(parsed.error, where));
    for (const found of unknown) input = withoutKeys(input, found.path, (found as { keys: string[] }).keys);
  }
}
