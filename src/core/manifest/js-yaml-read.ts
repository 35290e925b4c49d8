// Reads manifest files with js-yaml's core schema and notes where each value starts; declines (undefined) any file the yaml package might read otherwise.
//
// The yaml package takes about 0.3 ms for a 600-byte manifest; js-yaml about a tenth of that. A file read here
// must give exactly what the yaml package gives (same data, same positions, no diagnostic), so this declines
// the whole file, and the caller reads it with the yaml package instead, as soon as it holds:
// - a tag, an anchor or an alias (a node starting with `!`, `&` or `*`), or a block scalar (`|`, `>`);
// - a scalar or a flow collection written over more than one line, or followed by `#` with no space before it;
// - a plain scalar the yaml package's core schema reads differently (`0b1`, `1_000`, `+.5`...: js-yaml's core
//   schema takes more number forms), a key that is not a string as written (`1:`, `~:`, `{a: 1}:`), a merge key
//   `<<`, a `__proto__` key, or a key of over 1,000 characters;
// - a directive, `...`, anything but a comment after `---` on its line, a BOM, a tab or a CR;
// - a document that is not a mapping (an empty document, a scalar, a list), a key with no value, nesting
//   deeper than MAX_DEPTH, and anything js-yaml throws or warns about (duplicate keys, bad indentation...).
// Positions come from js-yaml's own reading, through its `listener` option: no second parse.
import { CORE_SCHEMA, loadAll, YAMLException, type LoadOptions, type State } from 'js-yaml';
import { isScalar, Schema, type ScalarTag } from 'yaml';

/** One document read: its data (as the yaml package's Document.toJS() gives it) and where each value starts. */
export interface ReadDocument {
  data: unknown;
  /** Offset of the first character of the value at `path` (a mapping key or sequence index per step), if present. */
  valueOffset(path: ReadonlyArray<PropertyKey>): number | undefined;
  /** Offset of the first character of the mapping key that names the last step of `path`, if present. */
  keyOffset(path: ReadonlyArray<PropertyKey>): number | undefined;
}

/** A node js-yaml composed: where its content starts and ends, what it read, and its child nodes in order. */
interface ReadNode {
  start: number;
  end: number;
  kind: string | null;
  result: unknown;
  children: ReadNode[];
}

/** The children of a node that has none (shared, never written to). */
const NO_CHILDREN: ReadNode[] = [];

/** Thrown inside the reader to decline a file; never escapes readDocuments. */
const DECLINE = new Error('declined');

function decline(): never {
  throw DECLINE;
}

/** Nodes nested deeper than this (keys count as a level) are left to the yaml package, which refuses depth over 64. */
const MAX_DEPTH = 40;
/** The yaml package refuses an implicit key whose `:` is over 1,024 characters from its start. */
const MAX_KEY_SPAN = 1000;
/** Characters no text js-yaml and the yaml package surely read alike may hold. */
const DECLINED_CHARACTERS = /[\t\r\uFEFF]/;
/** A directive, a document end marker, or anything but a comment after a document start marker (js-yaml reads `---x` as one). */
const DECLINED_LINES = /^(?:%|\.\.\.|---(?!$| +(?:#|$)))/m;

const YAML_CORE_TAGS: ScalarTag[] = (new Schema({ merge: true }).tags as ScalarTag[]).filter((tag) => tag.default === true && tag.test !== undefined);
/** Any of the yaml package's core tests: a plain scalar that matches none is a string there. */
const YAML_CORE_TEST = new RegExp(YAML_CORE_TAGS.map((tag) => `(?:${tag.test!.source})`).join('|'));
const RESOLVE_OPTIONS = { intAsBigInt: false };

/** A plain scalar's value as the yaml package's core schema resolves it. */
function yamlCoreValue(source: string): unknown {
  if (!YAML_CORE_TEST.test(source)) return source;
  const tag = YAML_CORE_TAGS.find((t) => t.test!.test(source))!;
  let failed = false;
  const resolved = tag.resolve(source, () => (failed = true), RESOLVE_OPTIONS);
  if (failed) decline();
  return isScalar(resolved) ? resolved.value : resolved;
}

/** The offset of the first character at or after `offset` that is not a space, a line break or part of a comment. */
function contentStart(text: string, offset: number): number {
  let i = offset;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a) i++;
    else if (c === 0x23) {
      const eol = text.indexOf('\n', i);
      if (eol === -1) return text.length;
      i = eol + 1;
    } else return i;
  }
}

/** The end of a plain scalar's text: js-yaml may have passed spaces and line breaks after it before the node closed. */
function plainEnd(text: string, start: number, end: number): number {
  let i = end;
  while (i > start && (text.charCodeAt(i - 1) === 0x20 || text.charCodeAt(i - 1) === 0x0a)) i--;
  return i;
}

/** Checks a node js-yaml has just composed, before it is kept; declines what the yaml package might read otherwise. */
function checkNode(text: string, node: ReadNode): void {
  const first = text.charCodeAt(node.start);
  // properties (tag `!`, anchor `&`), an alias `*`, a block scalar `|` `>`
  if (first === 0x21 || first === 0x26 || first === 0x2a || first === 0x7c || first === 0x3e) decline();
  if (node.kind === null) return;
  const scalar = node.kind === 'scalar';
  // A quoted scalar (`"`, `'`) or a flow collection (`{`, `[`) ends at its closing character.
  if (scalar ? first === 0x22 || first === 0x27 : first === 0x7b || first === 0x5b) {
    const lineBreak = text.indexOf('\n', node.start);
    if ((lineBreak !== -1 && lineBreak < node.end) || text.charCodeAt(node.end) === 0x23) decline();
    return;
  }
  if (!scalar) return;
  // A plain scalar: exactly the text written (one line, so nothing folded), resolved to the same value by the yaml package.
  const end = plainEnd(text, node.start, node.end);
  const value = node.result;
  if (typeof value === 'string') {
    if (value.length !== end - node.start || !text.startsWith(value, node.start) || yamlCoreValue(value) !== value) decline();
  } else if (!Object.is(yamlCoreValue(text.slice(node.start, end)), value)) decline();
}

/** Builds the tree of composed nodes from js-yaml's open and close events, checking each node as it closes. */
function nodeTracker(text: string): { roots: ReadNode[]; listener: (event: 'open' | 'close', state: State) => void } {
  const roots: ReadNode[] = [];
  const opens: number[] = [];
  const childLists: ReadNode[][] = [roots];
  const listener = (event: 'open' | 'close', state: State): void => {
    if (event === 'open') {
      if (opens.length >= MAX_DEPTH) decline();
      opens.push(state.position);
      childLists.push(NO_CHILDREN);
      return;
    }
    const open = opens.pop()!;
    const children = childLists.pop()!;
    const kind = (state.kind as string | null) ?? null;
    const node: ReadNode = { start: contentStart(text, open), end: state.position, kind, result: state.result, children: NO_CHILDREN };
    checkNode(text, node);
    // An empty node: a key that was not one (the loop's end), or a missing value (then the counts below differ).
    if (kind === null) return;
    // A value js-yaml read through a nested call that kept its result (`- x`, `- {a: 1}`): one node, not two.
    if (kind !== 'scalar') node.children = children.length === 1 && children[0]!.result === state.result ? children[0]!.children : children;
    const siblings = childLists.length - 1;
    if (childLists[siblings] === NO_CHILDREN) childLists[siblings] = [node];
    else childLists[siblings]!.push(node);
  };
  return { roots, listener };
}

/** Checks that the nodes of a collection are its keys and values (or items), in order; declines otherwise. */
function checkTree(node: ReadNode): void {
  const value = node.result;
  const children = node.children;
  if (node.kind === 'scalar') return;
  if (Array.isArray(value)) {
    if (node.kind !== 'sequence' || children.length !== value.length) decline();
    for (let i = 0; i < value.length; i++) {
      if (!Object.is(children[i]!.result, value[i])) decline();
      checkTree(children[i]!);
    }
    return;
  }
  if (node.kind !== 'mapping' || !value || typeof value !== 'object') decline();
  const keys = Object.keys(value);
  if (children.length !== keys.length * 2) decline();
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const keyNode = children[i * 2]!;
    const valueNode = children[i * 2 + 1]!;
    if (keyNode.kind !== 'scalar' || keyNode.result !== key || key === '<<' || key === '__proto__') decline();
    if (keyNode.end - keyNode.start > MAX_KEY_SPAN) decline();
    if (!Object.is(valueNode.result, (value as Record<string, unknown>)[key])) decline();
    checkTree(valueNode);
  }
}

function offsetAt(root: ReadNode, path: ReadonlyArray<PropertyKey>, at: 'key' | 'value' = 'value'): number | undefined {
  let node: ReadNode | undefined = root;
  let key: ReadNode | undefined;
  for (const segment of path) {
    key = undefined;
    if (!node || node.kind === 'scalar') return undefined;
    if (node.kind === 'sequence') {
      node = typeof segment === 'number' ? node.children[segment] : undefined;
      continue;
    }
    const children: ReadNode[] = node.children;
    const index = children.findIndex((child, i) => i % 2 === 0 && child.result === segment);
    key = index === -1 ? undefined : children[index];
    node = index === -1 ? undefined : children[index + 1];
  }
  return at === 'key' ? key?.start : node?.start;
}

/**
 * The documents of a manifest file as js-yaml reads them with its core schema, or undefined when the text holds
 * anything the yaml package might read otherwise or report on (the caller then parses it with the yaml package).
 */
export function readDocuments(text: string): ReadDocument[] | undefined {
  if (text.length === 0 || DECLINED_CHARACTERS.test(text) || DECLINED_LINES.test(text)) return undefined;
  const { roots, listener } = nodeTracker(text);
  const options: LoadOptions = { schema: CORE_SCHEMA, listener, onWarning: decline };
  try {
    const docs = loadAll(text, null, options);
    if (docs.length === 0 || docs.length !== roots.length) return undefined;
    return docs.map((data, i) => {
      const root = roots[i]!;
      if (root.result !== data || root.kind !== 'mapping' || Array.isArray(data)) decline();
      checkTree(root);
      return { data, valueOffset: (path) => offsetAt(root, path), keyOffset: (path) => offsetAt(root, path, 'key') };
    });
  } catch (error) {
    // js-yaml's errors and warnings, and every decline: the yaml package reads the file and reports any problem.
    if (error === DECLINE || error instanceof YAMLException) return undefined;
    throw error;
  }
}
