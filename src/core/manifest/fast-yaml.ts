// A fast reader for the plain YAML most manifests are written in; it declines (undefined) anything else, which the yaml package then reads.
//
// The `yaml` package's parser takes about 0.3 ms for a 600-byte manifest, most of a plan's CPU at a few
// thousand files. Manifests are nearly always block mappings and sequences of plain or simply quoted scalars,
// which this reader turns into the same data as `Document.toJS()` in a few microseconds, remembering where each
// value starts. Whatever it is not sure of (anchors, aliases, tags, block scalars, multi-line scalars, escapes,
// duplicate keys, directives, tabs, CR, a BOM, empty documents, nested flow collections...) makes it decline the
// whole file, and the caller reads that file with the yaml package instead. Plain scalars are resolved by the
// yaml package's own core-schema tags, so `0x1F`, `1e3`, `~` or `True` mean exactly what they mean there.
import { isScalar, Schema, type ScalarTag } from 'yaml';

/** One document read: its data (as Document.toJS() gives it) and where each value starts. */
export interface FastDocument {
  data: unknown;
  /** Offset of the first character of the value at `path` (a mapping key or sequence index per step), if present. */
  valueOffset(path: ReadonlyArray<PropertyKey>): number | undefined;
}

interface Positioned {
  offset: number;
  children?: Map<string | number, Positioned>;
}

/** A value read, with where it starts and where its children start. */
type ReadNode = Positioned & { value: unknown };

interface Line {
  /** Columns of leading spaces. */
  indent: number;
  /** Offset in the text of the first character after the indent. */
  offset: number;
  /** The line after its indent, without the line break. */
  content: string;
}

/** Thrown inside the reader to decline a file; never escapes fastParseDocuments. */
const DECLINE = new Error('declined');

function decline(): never {
  throw DECLINE;
}

/** Whether a line (after its indent) is a block sequence item: `- ...`, or a lone `-`. */
function isItem(content: string): boolean {
  return content === '-' || content.startsWith('- ');
}

const MAX_DEPTH = 32;
const KEY = /^([A-Za-z_][A-Za-z0-9_.\/-]*):(?: +|$)/;
/** Keys that the core schema would not read as the plain string written (or that would set a prototype). */
const SPECIAL_KEY = /^(?:~|[Nn]ull|NULL|[Tt]rue|TRUE|[Ff]alse|FALSE|__proto__)$/;
/** Characters that cannot start a plain scalar here (indicators), or start something this reader declines. */
const PLAIN_START_DECLINED = new Set(['-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', "'", '"', '%', '@', '`']);

const SCALAR_TAGS: ScalarTag[] = (new Schema({ merge: true }).tags as ScalarTag[]).filter((tag) => tag.default === true && tag.test !== undefined);
const RESOLVE_OPTIONS = { intAsBigInt: false };

/** A plain scalar's value, resolved exactly as the yaml package's core schema resolves it. */
function resolvePlain(source: string): unknown {
  const tag = SCALAR_TAGS.find((t) => t.test!.test(source));
  if (!tag) return source;
  let failed = false;
  const resolved = tag.resolve(source, () => (failed = true), RESOLVE_OPTIONS);
  if (failed) decline();
  return isScalar(resolved) ? resolved.value : resolved;
}

/** The text of a value before an ` #` comment, without trailing spaces. */
function stripComment(text: string): string {
  const hash = text.indexOf(' #');
  return (hash === -1 ? text : text.slice(0, hash)).trimEnd();
}

/** The quoted scalar opening at text[start] on this line: its value and the offset just past its closing quote. */
function quotedAt(text: string, start: number): { value: string; end: number } {
  const quote = text[start]!;
  let value = '';
  let from = start + 1;
  for (;;) {
    const close = text.indexOf(quote, from);
    if (close === -1) decline(); // a quoted scalar that goes on to the next line
    if (quote === "'" && text[close + 1] === "'") {
      value += text.slice(from, close + 1);
      from = close + 2;
      continue;
    }
    value += text.slice(from, close);
    if (quote === '"' && value.includes('\\')) decline(); // escapes
    return { value, end: close + 1 };
  }
}

/** A quoted scalar that is all of `text` but spaces and a comment: its value. */
function readQuoted(text: string): string {
  const { value, end } = quotedAt(text, 0);
  const rest = text.slice(end);
  if (rest.trim() !== '' && !/^ +#/.test(rest)) decline();
  return value;
}

/** A plain scalar in block context: the whole of `text` up to a comment. */
function readBlockPlain(text: string): unknown {
  const source = stripComment(text);
  if (source === '' || source.includes(': ') || source.endsWith(':')) decline();
  return resolvePlain(source);
}

/** Reads one-line flow collections (`{ a: 1, b: [x, "y"] }`) of plain and simply quoted scalars. */
class FlowReader {
  private i: number;

  constructor(
    private readonly text: string,
    /** Offset of text[0] in the file. */
    private readonly base: number,
  ) {
    this.i = 0;
  }

  private spaces(): void {
    while (this.text[this.i] === ' ') this.i++;
  }

  /** The collection at the start of the text; what follows it may only be spaces and a comment. */
  top(): ReadNode {
    const node = this.node(0);
    const rest = this.text.slice(this.i);
    if (rest.trim() !== '' && !/^ +#/.test(rest)) decline();
    return node;
  }

  private node(depth: number): ReadNode {
    if (depth > MAX_DEPTH) decline();
    this.spaces();
    const offset = this.base + this.i;
    const c = this.text[this.i];
    if (c === '{') return this.collection('}', offset, depth);
    if (c === '[') return this.collection(']', offset, depth);
    if (c === '"' || c === "'") return { offset, value: this.quoted() };
    return { offset, value: this.plain() };
  }

  private quoted(): string {
    const { value, end } = quotedAt(this.text, this.i);
    this.i = end;
    return value;
  }

  private plain(): unknown {
    const start = this.i;
    while (this.i < this.text.length && !',[]{}'.includes(this.text[this.i]!)) this.i++;
    const source = this.text.slice(start, this.i).trimEnd();
    // `: ` would end a key, ` #` start a comment; `a:b` and `a#b` are plain, as in the yaml package
    if (source === '' || PLAIN_START_DECLINED.has(source[0]!) || /: |:$| #|['"]/.test(source)) decline();
    return resolvePlain(source);
  }

  private key(): string {
    this.spaces();
    const match = /^[A-Za-z_][A-Za-z0-9_.\/-]*: /.exec(this.text.slice(this.i, this.i + 130));
    if (!match) decline();
    const key = match[0].slice(0, -2);
    if (SPECIAL_KEY.test(key)) decline();
    this.i += match[0].length;
    return key;
  }

  private collection(close: '}' | ']', offset: number, depth: number): ReadNode {
    this.i++;
    const children = new Map<string | number, Positioned>();
    const map: Record<string, unknown> = {};
    const list: unknown[] = [];
    this.spaces();
    if (this.text[this.i] === close) {
      this.i++;
      return { offset, children, value: close === '}' ? map : list };
    }
    for (;;) {
      if (close === '}') {
        const key = this.key();
        if (Object.hasOwn(map, key)) decline();
        const child = this.node(depth + 1);
        map[key] = child.value;
        children.set(key, child);
      } else {
        const child = this.node(depth + 1);
        list.push(child.value);
        children.set(list.length - 1, child);
      }
      this.spaces();
      const c = this.text[this.i];
      this.i++;
      if (c === close) break;
      if (c !== ',') decline();
      this.spaces();
      if (this.text[this.i] === close) decline(); // a trailing comma
    }
    return { offset, children, value: close === '}' ? map : list };
  }
}

/** A value written on the same line as its key or dash. */
function readInline(text: string, offset: number): ReadNode {
  const first = text[0]!;
  if (first === '{' || first === '[') return new FlowReader(text, offset).top();
  if (first === '"' || first === "'") return { offset, value: readQuoted(text) };
  // `-1`, `-x`: a plain scalar; a `-` alone or before a space would start a sequence item
  const dashScalar = first === '-' && text.length > 1 && text[1] !== ' ';
  if (PLAIN_START_DECLINED.has(first) && !dashScalar) decline();
  return { offset, value: readBlockPlain(text) };
}

/** Reads block collections from the content lines of one document. */
class BlockReader {
  private index = 0;

  constructor(private readonly lines: Line[]) {}

  done(): boolean {
    return this.index >= this.lines.length;
  }

  private peek(): Line | undefined {
    return this.lines[this.index];
  }

  /** The node whose first line is the next one. */
  node(depth: number): ReadNode {
    if (depth > MAX_DEPTH) decline();
    const line = this.peek()!;
    if (isItem(line.content)) return this.sequence(line.indent, depth);
    if (KEY.test(line.content)) return this.mapping(line.indent, depth);
    decline(); // a document or item that is a bare scalar, or a key this reader does not take
  }

  /** After an inline value, no more-indented line may follow (it would continue the scalar). */
  private endOfInline(indent: number): void {
    const next = this.peek();
    if (next && next.indent > indent) decline();
  }

  /** The value of a key written with nothing after the colon: a nested block, a same-indent sequence, or null. */
  private nestedValue(indent: number, depth: number): ReadNode {
    const next = this.peek();
    if (next && next.indent > indent) return this.node(depth + 1);
    if (next && next.indent === indent && isItem(next.content)) return this.sequence(indent, depth + 1);
    decline(); // `key:` and nothing (null): rare enough to leave to the yaml package
  }

  mapping(indent: number, depth: number): ReadNode {
    const map: Record<string, unknown> = {};
    const children = new Map<string | number, Positioned>();
    const start = this.peek()!.offset;
    for (let line = this.peek(); line && line.indent === indent; line = this.peek()) {
      const match = KEY.exec(line.content);
      if (!match) decline(); // a sequence item or something else at a mapping's indent
      const key = match[1]!;
      if (SPECIAL_KEY.test(key) || Object.hasOwn(map, key)) decline();
      const rest = line.content.slice(match[0].length);
      this.index++;
      let child: ReadNode;
      if (rest === '' || rest.startsWith('#')) {
        child = this.nestedValue(indent, depth);
      } else {
        child = readInline(rest, line.offset + match[0].length);
        this.endOfInline(indent);
      }
      map[key] = child.value;
      children.set(key, child);
    }
    const after = this.peek();
    if (after && after.indent > indent) decline();
    return { offset: start, children, value: map };
  }

  sequence(indent: number, depth: number): ReadNode {
    const list: unknown[] = [];
    const children = new Map<string | number, Positioned>();
    const start = this.peek()!.offset;
    for (let line = this.peek(); line && line.indent === indent && line.content.startsWith('- '); line = this.peek()) {
      const text = line.content.slice(2);
      const pad = text.length - text.trimStart().length;
      const itemText = text.slice(pad);
      const itemOffset = line.offset + 2 + pad;
      if (itemText === '' || itemText.startsWith('#')) decline(); // `- ` with the item on the next lines
      if (isItem(itemText)) decline(); // a sequence nested on the same line
      let child: ReadNode;
      if (KEY.test(itemText)) {
        // `- key: value`: a mapping whose keys sit at the column of this first key
        this.lines[this.index] = { indent: indent + 2 + pad, offset: itemOffset, content: itemText };
        child = this.mapping(indent + 2 + pad, depth + 1);
      } else {
        this.index++;
        child = readInline(itemText, itemOffset);
        this.endOfInline(indent);
      }
      list.push(child.value);
      children.set(list.length - 1, child);
    }
    // A sequence under a key at the key's own indent ends where the mapping's next key begins.
    const after = this.peek();
    if (after && after.indent > indent) decline();
    return { offset: start, children, value: list };
  }
}

function positionedLookup(root: Positioned, path: ReadonlyArray<PropertyKey>): number | undefined {
  let node: Positioned | undefined = root;
  for (const segment of path) {
    if (typeof segment === 'symbol') return undefined;
    node = node.children?.get(segment);
    if (!node) return undefined;
  }
  return node.offset;
}

/** Splits the text into documents of content lines (blank and comment lines dropped). */
function documentsOf(text: string): Line[][] {
  const docs: Line[][] = [];
  let current: Line[] = [];
  let sawMarker = false;
  let offset = 0;
  while (offset <= text.length) {
    let end = text.indexOf('\n', offset);
    if (end === -1) end = text.length;
    const raw = text.slice(offset, end);
    let indent = 0;
    while (raw.charCodeAt(indent) === 32) indent++;
    const content = raw.slice(indent).trimEnd();
    if (content !== '' && !content.startsWith('#')) {
      if (indent === 0 && (content.startsWith('---') || content.startsWith('...') || content.startsWith('%'))) {
        if (!/^---(?: +#.*)?$/.test(content)) decline(); // `--- value`, `...`, directives
        if (current.length > 0) docs.push(current);
        else if (sawMarker) decline(); // an empty document between two markers
        current = [];
        sawMarker = true;
      } else {
        current.push({ indent, offset: offset + indent, content });
      }
    }
    offset = end + 1;
  }
  if (current.length > 0) docs.push(current);
  else if (sawMarker && docs.length === 0) decline();
  return docs;
}

/**
 * The documents of a manifest file, read without the yaml package, or undefined when the text uses anything
 * this reader does not take on (the caller then parses it with the yaml package, which reports any problem).
 */
export function fastParseDocuments(text: string): FastDocument[] | undefined {
  if (text.length === 0 || /[\t\r\uFEFF\0]/.test(text)) return undefined;
  try {
    const docs: FastDocument[] = [];
    for (const lines of documentsOf(text)) {
      if (lines[0]!.indent !== 0) decline();
      const reader = new BlockReader(lines);
      const root = reader.node(0);
      if (!reader.done()) decline();
      docs.push({ data: root.value, valueOffset: (path) => positionedLookup(root, path) });
    }
    return docs.length > 0 ? docs : undefined;
  } catch (error) {
    if (error === DECLINE) return undefined;
    throw error;
  }
}
