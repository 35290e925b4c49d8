// Manifest variables (pure): reads variables files and substitutes ${NAME} and ${NAME:-default} in a YAML document's values.
import { createHash } from 'node:crypto';
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  Scalar,
  type Document,
  type Node,
} from 'yaml';
import type { Diagnostic } from '../diagnostics.js';
import { formatLocation, type SourceLocation } from '../model.js';
import { positionAt } from './locate.js';

export type VariableValue = string | number;

/** The variables of one environment: their values (later files win) and the files read, in order. */
export interface Variables {
  values: ReadonlyMap<string, VariableValue>;
  /** Where each value was set (the file that won, at the value), for diagnostics about a substituted value. */
  origins?: ReadonlyMap<string, SourceLocation>;
  files: readonly string[];
  /** Variables files given but not read (each has its own error). */
  unread?: readonly string[];
}

/** No variables file given: every ${NAME} without a default is an error. */
export const NO_VARIABLES: Variables = { values: new Map(), files: [] };

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `${NAME}` or `${NAME:-default}` (the default holds no `}`), at the start of the text searched. */
const REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/;
/** A plain number as a default is written: it takes the number's type when the value is exactly the reference. */
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

/** A short id of the values (for caches keyed on what a file parses to). */
export function variablesId(variables: Variables): string {
  const hash = createHash('sha256');
  for (const [name, value] of [...variables.values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    hash.update(`${name}\0${typeof value}\0${String(value)}\0`);
  }
  return hash.digest('hex').slice(0, 16);
}

/** Reads one variables file: a YAML mapping of names to strings or numbers. Every problem is a diagnostic in that file. */
export function parseVariablesFile(
  file: string,
  text: string,
): { values: Map<string, VariableValue>; origins: Map<string, SourceLocation>; diagnostics: Diagnostic[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const values = new Map<string, VariableValue>();
  const origins = new Map<string, SourceLocation>();
  const diagnostics: Diagnostic[] = [];
  const problem = (offset: number, message: string): void => {
    diagnostics.push({ severity: 'error', file, ...positionAt(lineCounter, offset), code: 'E_VARS_FILE', message });
  };
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    problem(first.pos[0], `variables file cannot be read: ${first.message.split('\n')[0]}`);
    return { values, origins, diagnostics };
  }
  const contents = doc.contents;
  if (contents === null || (isScalar(contents) && contents.value === null)) return { values, origins, diagnostics };
  if (!isMap(contents)) {
    problem(contents.range?.[0] ?? 0, 'a variables file is a mapping of names to values (NAME: value), one per line');
    return { values, origins, diagnostics };
  }
  for (const pair of contents.items) {
    const key = pair.key as Node | null;
    const offset = key?.range?.[0] ?? 0;
    const name = isScalar(key) ? key.value : undefined;
    if (typeof name !== 'string' || !NAME.test(name)) {
      problem(offset, 'a variable name is letters, digits and _, not starting with a digit (e.g. MAX_SCALE)');
      continue;
    }
    const value = pair.value as Node | null;
    const valueOffset = value?.range?.[0] ?? offset;
    if (
      !isScalar(value) ||
      (typeof value.value !== 'string' && typeof value.value !== 'number') ||
      (typeof value.value === 'number' && !Number.isFinite(value.value))
    ) {
      problem(
        valueOffset,
        `variable ${name}: a value is a string or a number (quote anything else, e.g. "true"); secrets are never variables`,
      );
      continue;
    }
    values.set(name, value.value);
    origins.set(name, { file, ...positionAt(lineCounter, valueOffset) });
  }
  return { values, origins, diagnostics };
}

/** A variables problem found while substituting, at a character offset of the manifest text. */
interface SubstitutionProblem {
  offset: number;
  code: 'E_VARIABLE_UNSET' | 'E_VARIABLE_SYNTAX' | 'E_VARIABLE_PLACE' | 'E_VARIABLE_EXPANSION';
  message: string;
}

/** What substituting a document gave: its problems, and the variables set by a file that each value took. */
export interface Substitution {
  problems: SubstitutionProblem[];
  /** By the start offset of a substituted value: the variables (set in a variables file) it took. */
  sources: Map<number, string[]>;
}

/** The characters a document may grow to once substituted (its own text counts), and how many it has now. */
interface Budget {
  limit: number;
  size: number;
}

type ExpandOutcome =
  | { value: VariableValue; used: string[] }
  | { problem: { index: number; code: SubstitutionProblem['code']; message: string } };

function filesRead(variables: Variables): string {
  const unread = variables.unread?.length ? `; not read: ${variables.unread.join(', ')} (see its error)` : '';
  if (variables.files.length === 0)
    return unread ? `no variables file read${unread}` : 'no variables file given: use --vars FILE or the setting vars';
  return `variables files read: ${variables.files.join(', ')}${unread}`;
}

function mebibytes(chars: number): string {
  const mib = chars / 1024 / 1024;
  return Number.isInteger(mib) ? `${mib} MiB` : `${chars} characters`;
}

function tooLarge(name: string, limit: number): string {
  return `variable ${name} makes this document larger than ${mebibytes(limit)} once substituted (the manifest size cap); the resource is blocked: use a smaller value, or reference it fewer times`;
}

/**
 * Substitutes every reference of one string value; `typed`: a value that is exactly one reference takes its type. The
 * growth of each reference is counted against `budget` before the longer string is built, so a large value used many
 * times is refused at the reference that crosses the cap, never held in memory whole.
 */
function expand(text: string, variables: Variables, typed: boolean, budget: Budget): ExpandOutcome {
  let out = '';
  let only: VariableValue | undefined;
  const used: string[] = [];
  let i = 0;
  while (i < text.length) {
    const at = text.indexOf('${', i);
    if (at === -1) break;
    if (at > 0 && text[at - 1] === '$') {
      out += text.slice(i, at - 1) + '${';
      i = at + 2;
      continue;
    }
    const match = REFERENCE.exec(text.slice(at));
    if (!match) {
      return {
        problem: {
          index: at,
          code: 'E_VARIABLE_SYNTAX',
          message:
            'a "${" starts a variable: write ${NAME} or ${NAME:-default} (NAME: letters, digits, _), or $${ for a literal ${',
        },
      };
    }
    const [whole, name, fallback] = match;
    let value = variables.values.get(name!);
    if (value !== undefined && variables.origins?.has(name!)) used.push(name!);
    if (value === undefined && fallback !== undefined)
      value = typed && NUMBER.test(fallback) ? Number(fallback) : fallback;
    if (value === undefined) {
      return {
        problem: {
          index: at,
          code: 'E_VARIABLE_UNSET',
          message: `variable ${name} is not set (${filesRead(variables)}); set it in a variables file or write \${${name}:-default}`,
        },
      };
    }
    const replacement = String(value);
    budget.size += replacement.length - whole.length;
    if (budget.size > budget.limit)
      return { problem: { index: at, code: 'E_VARIABLE_EXPANSION', message: tooLarge(name!, budget.limit) } };
    if (at === 0 && whole.length === text.length) only = value;
    out += text.slice(i, at) + replacement;
    i = at + whole.length;
  }
  if (i === 0) return { value: text, used };
  if (typed && only !== undefined) return { value: only, used };
  return { value: out + text.slice(i), used };
}

/** The offset in the file of the `${` at `index` of a scalar's value: the same occurrence of `${` in its source text. */
function referenceOffset(fileText: string, node: Scalar, value: string, index: number): number {
  const start = node.range?.[0] ?? 0;
  const end = node.range?.[1] ?? start;
  let nth = 0;
  for (let k = value.indexOf('${'); k !== -1 && k < index; k = value.indexOf('${', k + 1)) nth++;
  let found = fileText.indexOf('${', start);
  for (; found !== -1 && found < end && nth > 0; nth--) found = fileText.indexOf('${', found + 1);
  return found !== -1 && found < end ? found : start;
}

/** Where a variable may not stand: `kind` and `apiVersion`, and a literal secret value (variables never carry secrets). */
function placeProblem(path: ReadonlyArray<PropertyKey>): string | undefined {
  if (path.length === 1 && (path[0] === 'kind' || path[0] === 'apiVersion'))
    return `${String(path[0])} may not use variables; write it out`;
  const secretValue =
    path.length === 4 &&
    path[0] === 'spec' &&
    path[1] === 'secrets' &&
    typeof path[2] === 'number' &&
    path[3] === 'value';
  const clientSecret = path.length === 2 && path[0] === 'spec' && path[1] === 'client_secret';
  if (secretValue || clientSecret) {
    return 'variables never carry secret values: write valueFrom: { env: NAME } or { file: PATH } (a variable may name them, e.g. env: ${SECRET_ENV})';
  }
  return undefined;
}

/**
 * Substitutes the variables in every value of a document, in place (nodes keep their ranges, so positions stay those
 * of the file). Keys are never substituted. A plain scalar that is exactly one reference takes the variable's type.
 * The document may grow to `maxChars` characters (its own text included): the reference that would cross it is a
 * problem (E_VARIABLE_EXPANSION) and substitution stops there. An alias repeats what its anchor grew by, so it counts.
 */
export function substituteDocument(
  doc: Document,
  fileText: string,
  variables: Variables,
  maxChars: number,
): Substitution {
  const problems: SubstitutionProblem[] = [];
  const sources = new Map<number, string[]>();
  const budget: Budget = { limit: maxChars, size: (doc.range?.[2] ?? fileText.length) - (doc.range?.[0] ?? 0) };
  /** What each anchored node grew by, for the aliases to it. */
  const grownBy = new Map<unknown, number>();
  let stopped = false;
  const fail = (problem: SubstitutionProblem): number => {
    problems.push(problem);
    if (problem.code === 'E_VARIABLE_EXPANSION') stopped = true;
    return 0;
  };
  const walk = (node: unknown, path: PropertyKey[]): number => {
    if (stopped) return 0;
    let grown = 0;
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? pair.key.value : undefined;
        grown += walk(pair.value, [...path, typeof key === 'string' || typeof key === 'number' ? key : '?']);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => (grown += walk(item, [...path, index])));
    } else if (isAlias(node)) {
      grown = grownBy.get(node.resolve(doc)) ?? 0;
      budget.size += grown;
      if (grown > 0 && budget.size > budget.limit)
        return fail({
          offset: node.range?.[0] ?? 0,
          code: 'E_VARIABLE_EXPANSION',
          message: `alias *${node.source} repeats variable values and makes this document larger than ${mebibytes(budget.limit)} once substituted (the manifest size cap); the resource is blocked: write the value once`,
        });
    } else if (isScalar(node) && typeof node.value === 'string' && node.value.includes('${')) {
      grown = substituteScalar(node, path);
    }
    if (grown > 0 && (node as { anchor?: string } | null)?.anchor) grownBy.set(node, grown);
    return grown;
  };
  /** Substitutes one scalar in place; returns how many characters it grew by. */
  const substituteScalar = (node: Scalar, path: PropertyKey[]): number => {
    const value = node.value as string;
    const misplaced = placeProblem(path);
    const firstReference = value.search(/(?<!\$)\$\{/);
    if (misplaced && firstReference !== -1)
      return fail({
        offset: referenceOffset(fileText, node, value, firstReference),
        code: 'E_VARIABLE_PLACE',
        message: misplaced,
      });
    const before = budget.size;
    const outcome = expand(value, variables, node.type === Scalar.PLAIN, budget);
    if ('problem' in outcome)
      return fail({
        offset: referenceOffset(fileText, node, value, outcome.problem.index),
        code: outcome.problem.code,
        message: outcome.problem.message,
      });
    node.value = outcome.value;
    if (outcome.used.length > 0) sources.set(node.range?.[0] ?? 0, outcome.used);
    return Math.max(0, budget.size - before);
  };
  walk(doc.contents, []);
  return { problems, sources };
}

/** "MAX_SCALE (set in vars/dev.yaml:3:12)" for each variable a value took, or undefined when none came from a file. */
export function describeSources(
  names: readonly string[] | undefined,
  variables: Variables | undefined,
): string | undefined {
  const described = (names ?? []).flatMap((name) => {
    const origin = variables?.origins?.get(name);
    return origin ? [`${name}, set at ${formatLocation(origin)}`] : [];
  });
  return described.length === 0 ? undefined : `the value of variable ${described.join('; ')}`;
}

/** `value` with every `${` in its strings written `$${`, so that reading it back gives the same strings (export). */
export function escapeVariables<T>(value: T): T {
  if (typeof value === 'string') return value.replaceAll('${', () => '$${') as T;
  if (Array.isArray(value)) return value.map((item: unknown) => escapeVariables(item)) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, escapeVariables(item)])) as T;
  return value;
}
