// Turns zod issues into plain problems (path, message, code) with hints; never echoes a secret value.
import type { z } from 'zod';
import { manifestHooksOf } from '../kinds/index.js';
import { closest } from '../did-you-mean.js';

type Issue = z.core.$ZodIssue;

export interface Problem {
  /** Data path of the problem. */
  path: PropertyKey[];
  /** Report at the key of the last path segment, or at its value. */
  at: 'key' | 'value';
  code: string;
  message: string;
}

/** `spec.secrets[0].valueFrom`, `metadata.annotations["converge/suspend"]`. */
export function displayPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(String(segment))) out += `${out ? '.' : ''}${String(segment)}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

function describeValue(input: unknown): string {
  if (input === null) return 'an empty value (null)';
  if (Array.isArray(input)) return 'a list';
  if (typeof input === 'object') return 'a mapping';
  if (typeof input === 'string') return 'a string';
  if (typeof input === 'number') return 'a number';
  if (typeof input === 'boolean') return `${input} (a boolean)`;
  return typeof input;
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
  null: 'null',
};

/** Safe to quote: a short plain string (only used at enum and literal positions, never at secret positions). */
function quoted(input: unknown): string | undefined {
  // eslint-disable-next-line no-control-regex -- a control character is what this test looks for
  if (typeof input !== 'string' || input.length > 64 || /[\u0000-\u001f]/.test(input)) return undefined;
  return JSON.stringify(input);
}

/** Per-parse zod error map: problem texts without the path (the path is added when located). */
export function issueText(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      const input = issue.input;
      if (input === undefined) return 'is required';
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      if (issue.expected === 'int' && typeof input === 'number') return `expected a whole number, got ${input}`;
      if (
        (issue.expected === 'number' || issue.expected === 'int') &&
        typeof input === 'string' &&
        /^-?\d+(\.\d+)?$/.test(input.trim())
      ) {
        return `expected ${expected}, got a string; remove the quotes`;
      }
      if (issue.expected === 'boolean' && typeof input === 'string' && /^(true|false|yes|no|on|off)$/i.test(input)) {
        return 'expected true or false (unquoted), got a string';
      }
      return `expected ${expected}, got ${describeValue(input)}`;
    }
    case 'too_small': {
      const min = String(issue.minimum);
      if (issue.origin === 'string')
        return Number(issue.minimum) === 1 ? 'must not be empty' : `must be at least ${min} characters`;
      if (issue.origin === 'array') return `must have at least ${min} items`;
      const got = typeof issue.input === 'number' ? ` (got ${issue.input})` : '';
      return `must be ${issue.inclusive ? '>=' : '>'} ${min}${got}`;
    }
    case 'too_big': {
      const max = String(issue.maximum);
      if (issue.origin === 'string') return `must be at most ${max} characters`;
      if (issue.origin === 'array') return `must have at most ${max} items`;
      const got = typeof issue.input === 'number' ? ` (got ${issue.input})` : '';
      return `must be ${issue.inclusive ? '<=' : '<'} ${max}${got}`;
    }
    case 'invalid_value': {
      const values = issue.values.map((v) => JSON.stringify(v));
      if (values.length === 1) return `must be ${values[0]}`;
      const got = quoted(issue.input);
      return `${got ?? describeValue(issue.input)} is not one of ${values.join(', ')}`;
    }
    case 'invalid_format':
      if (issue.format === 'uuid' || issue.format === 'guid')
        return 'must be a UUID, e.g. 0b5e4c5e-9c1f-4d3a-8f3e-2a6f1d2c3b4a';
      if (issue.format === 'url') return 'must be an absolute URL';
      return `has the wrong format (${issue.format})`;
    case 'invalid_key':
      return 'has an invalid key';
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------- unknown keys: suggestions and hints

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  valueType?: z.ZodType;
}

function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** Known keys of the object schema at `path` (looking through optional, nullable, arrays, unions). */
export function knownKeysAt(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] {
  let candidates: z.ZodType[] = [schema];
  for (const segment of [...path, undefined]) {
    const unwrapped: z.ZodType[] = [];
    while (candidates.length > 0) {
      const current = candidates.pop()!;
      const def = defOf(current);
      if (def.innerType) candidates.push(def.innerType);
      else if (def.type === 'pipe' && def.in) candidates.push(def.in);
      else if (def.type === 'union' && def.options) candidates.push(...def.options);
      else unwrapped.push(current);
    }
    if (segment === undefined) {
      return unwrapped.flatMap((s) => Object.keys(defOf(s).shape ?? {}));
    }
    const next: z.ZodType[] = [];
    for (const current of unwrapped) {
      const def = defOf(current);
      if (def.type === 'array' && typeof segment === 'number' && def.element) next.push(def.element);
      else if (def.type === 'object' && def.shape?.[String(segment)]) next.push(def.shape[String(segment)]!);
      else if (def.type === 'record' && def.valueType) next.push(def.valueType);
    }
    candidates = next;
  }
  return [];
}

function unknownKeyHint(parent: string, key: string, kind: string | undefined): string | undefined {
  if (key === 'repo_commit_sha')
    return 'repo_commit_sha is read-only (the service reports the built commit); pin a branch or tag with repo_ref';
  if (parent === '' && key === 'name') return 'the name goes under metadata.name';
  if (parent === 'metadata' && key === 'labels')
    return 'converge manifests take metadata.name and metadata.annotations only';
  return manifestHooksOf(kind)?.keyHint(parent, key);
}

function unknownKeyMessage(schema: z.ZodType, path: PropertyKey[], key: string, kind: string | undefined): string {
  const parent = displayPath(path);
  const where = parent ? ` in ${parent}` : '';
  const hint = unknownKeyHint(parent, key, kind);
  if (hint) return `unknown field "${key}"${where}; ${hint}`;
  const known = knownKeysAt(schema, path);
  const guess = closest(key, known);
  if (guess) return `unknown field "${key}"${where}; did you mean "${guess}"?`;
  return `unknown field "${key}"${where}; known fields: ${known.join(', ')}`;
}

// ---------------------------------------------------------------- issues to problems

/** Unions: keep the issues of the branch that matched the value's type (else say what was expected). */
function flatten(issues: readonly Issue[], base: PropertyKey[] = []): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const path = [...base, ...issue.path];
    if (issue.code !== 'invalid_union' || issue.errors.length === 0) {
      out.push({ ...issue, path });
      continue;
    }
    const fitting = issue.errors.find(
      (branch) => !branch.some((i) => i.code === 'invalid_type' && i.path.length === 0),
    );
    if (fitting) {
      out.push(...flatten(fitting, path));
      continue;
    }
    const expected = issue.errors.flatMap((branch) =>
      branch.filter((i) => i.code === 'invalid_type').map((i) => (i as { expected: string }).expected),
    );
    const unique = [...new Set(expected.map((e) => EXPECTED[e] ?? e))];
    out.push({
      code: 'custom',
      path,
      message: `expected ${unique.join(' or ')}, got ${describeValue(issue.input)}`,
      input: undefined,
    });
  }
  return out;
}

function samePath(a: readonly PropertyKey[], b: readonly PropertyKey[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

/** Problems for one document's issues against `schema` (the kind's manifest schema). */
export function problemsFromIssues(issues: readonly Issue[], schema: z.ZodType, kind: string | undefined): Problem[] {
  const flat = flatten(issues);
  const unknownAt = flat.filter((i) => i.code === 'unrecognized_keys').map((i) => i.path);
  const problems: Problem[] = [];
  for (const issue of flat) {
    const path = [...issue.path];
    const codeFor = (p: PropertyKey[]) =>
      p[0] === 'metadata' && p[1] === 'name' && p.length === 2 ? 'E_NAME' : 'E_SCHEMA';
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        problems.push({
          path: [...path, key],
          at: 'key',
          code: 'E_UNKNOWN_FIELD',
          message: unknownKeyMessage(schema, path, key, kind),
        });
      }
      continue;
    }
    const params = (issue as { params?: { at?: 'key'; consequential?: boolean } }).params;
    if (params?.consequential && unknownAt.some((p) => samePath(p, path))) continue;
    if (
      (issue.code === 'invalid_type' || issue.code === 'invalid_value') &&
      issue.input === undefined &&
      path.length > 0
    ) {
      const parent = path.slice(0, -1);
      const where = displayPath(parent);
      problems.push({
        path,
        at: 'value',
        code: 'E_SCHEMA',
        message: `${where ? `${where}: ` : ''}missing required field "${String(path.at(-1))}"`,
      });
      continue;
    }
    const where = displayPath(path);
    problems.push({
      path,
      at: params?.at ?? 'value',
      code: codeFor(path),
      message: where ? `${where}: ${issue.message}` : issue.message,
    });
  }
  return problems;
}
