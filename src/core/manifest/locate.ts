// YAML source positions: maps a data path to the node (or key) it came from, and measures CST nesting depth.
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  visit,
  type CST,
  type Document,
  type LineCounter,
  type Node,
} from 'yaml';

export interface Position {
  line: number;
  column: number;
}

/** 1-based line and column of a character offset. */
export function positionAt(lineCounter: LineCounter, offset: number): Position {
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}

interface Located {
  /** The node at the full path, when the path exists in the source. */
  node?: Node;
  /** The key node of the last path segment, when that segment is a mapping key present in the source. */
  key?: Node;
  /** The deepest existing container on the path and the key node it sits under (for "missing field" problems). */
  container: Node | null;
  containerKey?: Node;
}

function resolveAlias(doc: Document, node: unknown): unknown {
  let current = node;
  for (let hops = 0; isAlias(current) && hops < 32; hops++) current = current.resolve(doc);
  return current;
}

function keyText(key: unknown): string | undefined {
  if (!isScalar(key)) return undefined;
  // A merge key (`<<` with merge keys on) holds a symbol; its source is what was written.
  return typeof key.value === 'symbol' ? key.source : String(key.value);
}

/** The pair holding `segment` in a mapping, looking through `<<` merge keys like toJS does. */
function findPair(
  doc: Document,
  map: unknown,
  segment: string,
  seen = new Set<unknown>(),
): { key: Node; value: unknown } | undefined {
  if (!isMap(map) || seen.has(map)) return undefined;
  seen.add(map);
  for (const pair of map.items) {
    if (isPair(pair) && keyText(pair.key) === segment) return { key: pair.key as Node, value: pair.value };
  }
  for (const pair of map.items) {
    if (!isPair(pair) || keyText(pair.key) !== '<<') continue;
    const sources = isSeq(pair.value) ? pair.value.items : [pair.value];
    for (const source of sources) {
      const found = findPair(doc, resolveAlias(doc, source), segment, seen);
      if (found) return found;
    }
  }
  return undefined;
}

/** Walks `path` through the document's AST, following aliases and merge keys. */
export function locatePath(doc: Document, path: ReadonlyArray<PropertyKey>): Located {
  let current: unknown = resolveAlias(doc, doc.contents);
  let container: Node | null = (current as Node | null) ?? null;
  let containerKey: Node | undefined;
  let key: Node | undefined;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    let next: unknown;
    key = undefined;
    if (isSeq(current) && typeof segment === 'number') {
      next = current.items[segment];
    } else if (isMap(current)) {
      const pair = findPair(doc, current, String(segment));
      if (pair) {
        key = pair.key;
        next = pair.value;
      }
    }
    if (next === undefined || next === null) {
      if (key && i === path.length - 1) return { key, container, containerKey };
      return { container, containerKey };
    }
    containerKey = key;
    current = resolveAlias(doc, next);
    if (i < path.length - 1) container = current as Node;
  }
  return { node: current as Node, key, container, containerKey };
}

/** Start offset of a node, or undefined. */
export function nodeStart(node: Node | null | undefined): number | undefined {
  return node?.range?.[0];
}

/** Offset to report for a problem at `path`: the key (when `at` is 'key'), else the value, else the nearest parent key. */
export function offsetForPath(doc: Document, path: ReadonlyArray<PropertyKey>, at: 'key' | 'value'): number {
  const found = locatePath(doc, path);
  const empty = isScalar(found.node) && found.node.value === null && found.node.source === '';
  const candidates = at === 'key' || empty ? [found.key, found.node] : [found.node, found.key];
  for (const node of [...candidates, found.containerKey, found.container]) {
    const start = nodeStart(node);
    if (start !== undefined) return start;
  }
  return doc.range?.[0] ?? 0;
}

/** A string scalar at `path`, with its offset, read straight from the AST (works on documents that fail validation). */
export function scalarAt(doc: Document, path: string[]): { value: string; offset: number } | undefined {
  const { node } = locatePath(doc, path);
  if (!isScalar(node) || typeof node.value !== 'string') return undefined;
  const offset = nodeStart(node);
  return offset === undefined ? undefined : { value: node.value, offset };
}

/** The first alias node of a document (where an alias-expansion problem is reported). */
export function firstAliasOffset(doc: Document): number | undefined {
  let offset: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      offset = node.range?.[0];
      return visit.BREAK;
    },
  });
  return offset;
}

/** An alias inside the node its anchor names would make the value infinite: returns that alias. */
export function selfReferencingAlias(doc: Document): { offset: number; anchor: string } | undefined {
  let found: { offset: number; anchor: string } | undefined;
  visit(doc, {
    Alias(_key, node) {
      const target = node.resolve(doc) as Node | undefined;
      const start = node.range?.[0];
      const range = target?.range;
      if (start === undefined || !range) return undefined;
      if (range[0] <= start && start < range[2]) {
        found = { offset: start, anchor: node.source };
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/**
 * The offset of the first collection nested deeper than `max` in a CST token stream, or undefined.
 * Iterative, so a hostile document cannot overflow the stack here.
 */
export function tooDeepOffset(tokens: CST.Token[], max: number): number | undefined {
  const stack: Array<{ token: CST.Token; depth: number }> = tokens.map((token) => ({ token, depth: 0 }));
  let first: number | undefined;
  while (stack.length > 0) {
    const { token, depth } = stack.pop()!;
    switch (token.type) {
      case 'document':
        if (token.value) stack.push({ token: token.value, depth });
        break;
      case 'block-map':
      case 'block-seq':
      case 'flow-collection': {
        const inner = depth + 1;
        if (inner > max) {
          if (first === undefined || token.offset < first) first = token.offset;
          break;
        }
        for (const item of token.items) {
          const entry = item as { key?: CST.Token | null; value?: CST.Token };
          if (entry.key) stack.push({ token: entry.key, depth: inner });
          if (entry.value) stack.push({ token: entry.value, depth: inner });
        }
        break;
      }
      default:
        break;
    }
  }
  return first;
}
