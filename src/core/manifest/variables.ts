// Manifest variables (pure): reads variables files and substitutes ${NAME} and ${NAME:-default} in a YAML document's values.
import { createHash } from 'node:crypto';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, Scalar, type Document, type Node } from 'yaml';
import type { Diagnostic } from '../diagnostics.js';
import { positionAt } from './locate.js';

export type VariableValue = string | number;

/** The variables of one environment: their values (later files win) and the files read, in order. */
export interface Variables {
  values: ReadonlyMap<string, VariableValue>;
  files: readonly string[];
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
export function parseVariablesFile(file: string, text: string): { values: Map<string, VariableValue>; diagnostics: Diagnostic[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const values = new Map<string, VariableValue>();
  const diagnostics: Diagnostic[] = [];
  const problem = (offset: number, message: string): void => {
    diagnostics.push({ severity: 'error', file, ...positionAt(lineCounter, offset), code: 'E_VARS_FILE', message });
  };
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    problem(first.pos[0], `variables file cannot be read: ${first.message.split('\n')[0]}`);
    return { values, diagnostics };
  }
  const contents = doc.contents;
  if (contents === null || (isScalar(contents) && contents.value === null)) return { values, diagnostics };
  if (!isMap(contents)) {
    problem(contents.range?.[0] ?? 0, 'a variables file is a mapping of names to values (NAME: value), one per line');
    return { values, diagnostics };
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
    if (!isScalar(value) || (typeof value.value !== 'string' && typeof value.value !== 'number') || (typeof value.value === 'number' && !Number.isFinite(value.value))) {
      problem(valueOffset, `variable ${name}: a value is a string or a number (quote anything else, e.g. "true"); secrets are never variables`);
      continue;
    }
    values.set(name, value.value);
  }
  return { values, diagnostics };
}

/** A variables problem found while substituting, at a character offset of the manifest text. */
interface SubstitutionProblem {
  offset: number;
  code: 'E_VARIABLE_UNSET' | 'E_VARIABLE_SYNTAX' | 'E_VARIABLE_PLACE';
  message: string;
}

type ExpandOutcome = { value: VariableValue } | { problem: { index: number; code: SubstitutionProblem['code']; message: string } };

function filesRead(variables: Variables): string {
  return variables.files.length === 0 ? 'no variables file given: use --vars FILE or the setting vars' : `variables files read: ${variables.files.join(', ')}`;
}

/** Substitutes every reference of one string value; `typed`: a value that is exactly one reference takes its type. */
function expand(text: string, variables: Variables, typed: boolean): ExpandOutcome {
  let out = '';
  let only: VariableValue | undefined;
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
      return { problem: { index: at, code: 'E_VARIABLE_SYNTAX', message: 'a "${" starts a variable: write ${NAME} or ${NAME:-default} (NAME: letters, digits, _), or $${ for a literal ${' } };
    }
    const [whole, name, fallback] = match;
    let value = variables.values.get(name!);
    if (value === undefined && fallback !== undefined) value = typed && NUMBER.test(fallback) ? Number(fallback) : fallback;
    if (value === undefined) {
      return { problem: { index: at, code: 'E_VARIABLE_UNSET', message: `variable ${name} is not set (${filesRead(variables)}); set it in a variables file or write \${${name}:-default}` } };
    }
    if (at === 0 && whole.length === text.length) only = value;
    out += text.slice(i, at) + String(value);
    i = at + whole.length;
  }
  if (i === 0) return { value: text };
  if (typed && only !== undefined) return { value: only };
  return { value: out + text.slice(i) };
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
  if (path.length === 1 && (path[0] === 'kind' || path[0] === 'apiVersion')) return `${String(path[0])} may not use variables; write it out`;
  const secretValue = path.length === 4 && path[0] === 'spec' && path[1] === 'secrets' && typeof path[2] === 'number' && path[3] === 'value';
  const clientSecret = path.length === 2 && path[0] === 'spec' && path[1] === 'client_secret';
  if (secretValue || clientSecret) {
    return 'variables never carry secret values: write valueFrom: { env: NAME } or { file: PATH } (a variable may name them, e.g. env: ${SECRET_ENV})';
  }
  return undefined;
}

/**
 * Substitutes the variables in every value of a document, in place (nodes keep their ranges, so positions stay those
 * of the file). Keys are never substituted. A plain scalar that is exactly one reference takes the variable's type.
 */
export function substituteDocument(doc: Document, fileText: string, variables: Variables): SubstitutionProblem[] {
  const problems: SubstitutionProblem[] = [];
  const walk = (node: unknown, path: PropertyKey[]): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? pair.key.value : undefined;
        walk(pair.value, [...path, typeof key === 'string' || typeof key === 'number' ? key : '?']);
      }
      return;
    }
    if (isSeq(node)) {
      node.items.forEach((item, index) => walk(item, [...path, index]));
      return;
    }
    if (!isScalar(node) || typeof node.value !== 'string' || !node.value.includes('${')) return;
    const value = node.value;
    const misplaced = placeProblem(path);
    const firstReference = value.search(/(?<!\$)\$\{/);
    if (misplaced && firstReference !== -1) {
      problems.push({ offset: referenceOffset(fileText, node, value, firstReference), code: 'E_VARIABLE_PLACE', message: misplaced });
      return;
    }
    const outcome = expand(value, variables, node.type === Scalar.PLAIN);
    if ('problem' in outcome) {
      problems.push({ offset: referenceOffset(fileText, node, value, outcome.problem.index), code: outcome.problem.code, message: outcome.problem.message });
      return;
    }
    node.value = outcome.value;
  };
  walk(doc.contents, []);
  return problems;
}

/** `value` with every `${` in its strings written `$${`, so that reading it back gives the same strings (export). */
export function escapeVariables<T>(value: T): T {
  if (typeof value === 'string') return value.replaceAll('${', () => '$${') as T;
  if (Array.isArray(value)) return value.map((item: unknown) => escapeVariables(item)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, escapeVariables(item)])) as T;
  return value;
}
