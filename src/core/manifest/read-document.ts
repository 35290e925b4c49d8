// One manifest file's text to its YAML documents, each read to data (variables substituted), not yet validated.
import { Composer, LineCounter, Parser, isScalar, visit, type CST, type Document, type YAMLError } from 'yaml';
import type { Diagnostic, Severity } from '../diagnostics.js';
import { formatLocation, type ResourceKind, type SourceLocation } from '../model.js';
import { manifestText, MAX_MANIFEST_BYTES } from './file-bytes.js';
import {
  firstAliasOffset,
  offsetForPath,
  positionAt,
  scalarAt,
  selfReferencingAlias,
  tooDeepOffset,
} from './locate.js';
import type { Layer, Locate } from './overlay.js';
import { MANIFEST_KINDS } from './schema.js';
import { describeSources, NO_VARIABLES, substituteDocument, type Substitution, type Variables } from './variables.js';
import { yamlProblem } from './yaml-errors.js';

/** What reading a file's documents needs. */
export interface ReadOptions {
  /** The values ${NAME} takes (default: none, so every ${NAME} without a default is an error). */
  variables?: Variables;
}

/** Collections nested deeper than this are refused (a real manifest needs about 10). */
export const MAX_NESTING_DEPTH = 64;
/** Alias expansions allowed per document (the yaml package's guard against "billion laughs"). */
export const MAX_ALIAS_COUNT = 100;

interface FileContext {
  file: string;
  text: string;
  lineCounter: LineCounter;
  options: ReadOptions;
}

function diagnostic(
  ctx: FileContext,
  offset: number,
  code: string,
  message: string,
  severity: Severity = 'error',
): Diagnostic {
  const { line, column } = positionAt(ctx.lineCounter, offset);
  return { severity, file: ctx.file, line, column, message, code };
}

/** A file read to its documents, not yet validated; `diagnostics`: problems of the whole file (size, encoding, depth). */
interface ReadFile {
  documents: ReadDocument[];
  diagnostics: Diagnostic[];
}

/** Reads a file's raw bytes to documents: refuses huge, binary and non-UTF-8 content with one diagnostic each. */
export function readManifestBytes(file: string, bytes: Uint8Array, options: ReadOptions): ReadFile {
  const read = manifestText(file, bytes);
  if ('refused' in read) return { documents: [], diagnostics: [read.refused] };
  return readDocuments(file, read.text, options);
}

/** Every YAML document of a text already checked for size, NUL and UTF-8 by readManifestBytes. */
function readDocuments(file: string, text: string, options: ReadOptions): ReadFile {
  const lineCounter = new LineCounter();
  const ctx: FileContext = { file, text, lineCounter, options };
  // What parseAllDocuments does, split in two so the token tree can be measured before it is composed.
  const tokens: CST.Token[] = Array.from(new Parser(lineCounter.addNewLine).parse(text));
  const deep = tooDeepOffset(tokens, MAX_NESTING_DEPTH);
  if (deep !== undefined) {
    return {
      documents: [],
      diagnostics: [
        diagnostic(
          ctx,
          deep,
          'E_DEPTH',
          `nesting deeper than ${MAX_NESTING_DEPTH} levels; no manifest needs that (the whole file is ignored)`,
        ),
      ],
    };
  }
  const composer = new Composer({ merge: true, uniqueKeys: true, prettyErrors: false });
  const docs = Array.from(composer.compose(tokens)) as Document[];
  return { documents: docs.map((doc) => readDocument(ctx, doc)), diagnostics: [] };
}

/** A document's kind and name as written (known kinds only), and where it is declared. */
interface Header {
  kind?: ResourceKind;
  name?: string;
  location: SourceLocation;
}

/** kind and metadata.name read straight from the AST, so an invalid document can still be named (and blocked). */
function readHeader(ctx: FileContext, doc: Document): Header {
  const kind = scalarAt(doc, ['kind']);
  const name = scalarAt(doc, ['metadata', 'name']);
  const contentsStart = (doc.contents as { range?: number[] } | null)?.range?.[0];
  const offset = name?.offset ?? contentsStart ?? doc.range?.[0] ?? 0;
  const known = (MANIFEST_KINDS as readonly string[]).includes(kind?.value ?? '')
    ? (kind!.value as ResourceKind)
    : undefined;
  return {
    kind: known,
    name: name?.value || undefined,
    location: { file: ctx.file, ...positionAt(ctx.lineCounter, offset) },
  };
}

function isEmptyDocument(doc: Document): boolean {
  const contents = doc.contents;
  return contents === null || (isScalar(contents) && contents.value === null);
}

function unresolvedAlias(doc: Document): { offset: number; anchor: string } | undefined {
  let found: { offset: number; anchor: string } | undefined;
  visit(doc, {
    Alias(_key, node) {
      const range = node.range;
      if (node.resolve(doc) !== undefined || !range) return undefined;
      found = { offset: range[0], anchor: node.source };
      return visit.BREAK;
    },
  });
  return found;
}

/** The document as plain data, or a diagnostic when aliases make that unsafe or impossible. */
function toData(ctx: FileContext, doc: Document): { value: unknown } | { problem: Diagnostic } {
  // An alias is written `*name`: a file without a `*` has none, and its tree need not be walked for them.
  const cycle = ctx.text.includes('*') ? selfReferencingAlias(doc) : undefined;
  if (cycle) {
    return {
      problem: diagnostic(
        ctx,
        cycle.offset,
        'E_ALIAS',
        `alias *${cycle.anchor} is inside the node its anchor names, which would make the value infinite; write the value out`,
      ),
    };
  }
  try {
    return { value: doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) };
  } catch (error) {
    const message = (error as Error).message;
    if (/Excessive alias count/.test(message)) {
      const offset = firstAliasOffset(doc) ?? doc.range?.[0] ?? 0;
      return {
        problem: diagnostic(
          ctx,
          offset,
          'E_ALIAS',
          `YAML aliases expand beyond the limit of ${MAX_ALIAS_COUNT} expansions (a "billion laughs"?); write the values out instead of reusing anchors so much`,
        ),
      };
    }
    const unresolved = unresolvedAlias(doc);
    if (unresolved) {
      const name = unresolved.anchor.length <= 60 ? ` *${unresolved.anchor}` : '';
      return {
        problem: diagnostic(
          ctx,
          unresolved.offset,
          'E_ALIAS',
          `alias${name} refers to no anchor defined before it; define the &anchor first`,
        ),
      };
    }
    return {
      problem: diagnostic(ctx, doc.range?.[0] ?? 0, 'E_YAML', `document cannot be read: ${message.split('\n')[0]}`),
    };
  }
}

/** One YAML document read to data (variables substituted), not yet validated. */
export interface ReadDocument extends Layer {
  header: Header;
  /** By location (file:line:column) of a value a variables file set: which variables, set where (describeSources). */
  sources: ReadonlyMap<string, string>;
  /** Problems found reading it (YAML, aliases, variables); with an error among them, `data` is undefined. */
  problems: Diagnostic[];
}

/** Reads one document: YAML problems, then the variables substituted in place, then its data. */
function readDocument(ctx: FileContext, doc: Document): ReadDocument {
  const problems: Diagnostic[] = [];
  const byOffset = new Map<number, YAMLError[]>();
  for (const error of doc.errors) byOffset.set(error.pos[0], [...(byOffset.get(error.pos[0]) ?? []), error]);
  for (const errors of byOffset.values()) {
    const problem = yamlProblem(
      doc,
      errors[0]!,
      errors.map((e) => e.code),
    );
    problems.push(diagnostic(ctx, problem.offset, problem.code, problem.message));
  }
  for (const warning of doc.warnings) {
    problems.push(
      diagnostic(ctx, warning.pos[0], 'E_YAML_WARNING', `YAML: ${warning.message.split('\n')[0]}`, 'warning'),
    );
  }
  let data: unknown;
  const sources = new Map<string, string>();
  if (doc.errors.length === 0 && !isEmptyDocument(doc)) {
    // A file without "${" has no variable to substitute: its tree need not be walked for them.
    const variables = ctx.options.variables ?? NO_VARIABLES;
    const substituted: Substitution = ctx.text.includes('${')
      ? substituteDocument(doc, ctx.text, variables, MAX_MANIFEST_BYTES)
      : { problems: [], sources: new Map() };
    for (const problem of substituted.problems)
      problems.push(diagnostic(ctx, problem.offset, problem.code, problem.message));
    for (const [offset, names] of substituted.sources) {
      const described = describeSources(names, variables);
      if (described) sources.set(formatLocation({ file: ctx.file, ...positionAt(ctx.lineCounter, offset) }), described);
    }
    const read = substituted.problems.length === 0 ? toData(ctx, doc) : undefined;
    if (read && 'problem' in read) problems.push(read.problem);
    else if (read) data = read.value ?? undefined;
  }
  const locate: Locate = (path, at) => ({
    file: ctx.file,
    ...positionAt(ctx.lineCounter, offsetForPath(doc, path, at)),
  });
  return { header: readHeader(ctx, doc), data, locate, problems, sources };
}
