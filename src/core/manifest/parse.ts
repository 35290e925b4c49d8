// Parses one manifest file (pure): YAML documents to desired resources, blocked resources and diagnostics.
import { Composer, LineCounter, Parser, isScalar, visit, type CST, type Document, type YAMLError } from 'yaml';
import { sortDiagnostics, type Diagnostic, type Severity } from '../diagnostics.js';
import { formatLocation, resourceKey, type BlockedResource, type DesiredResource, type ResourceKind, type SourceLocation } from '../model.js';
import { manifestHooksOf, type LiteralSecret } from '../kinds/index.js';
import { toResource } from './convert.js';
import { closest } from '../did-you-mean.js';
import { issueText, problemsFromIssues } from './issues.js';
import { firstAliasOffset, offsetForPath, positionAt, scalarAt, selfReferencingAlias, tooDeepOffset } from './locate.js';
import { mergeLayers, type Layer, type Locate } from './overlay.js';
import { MANIFEST_KINDS, MANIFEST_SCHEMAS, type DeploymentManifest, type OAuthProviderManifest } from './schema.js';
import { describeSources, NO_VARIABLES, substituteDocument, type Substitution, type Variables } from './variables.js';
import { createWarnings, manifestWarnings } from './warnings.js';
import { yamlProblem } from './yaml-errors.js';

export interface ParseOptions {
  /** Accept literal secret values (`value:`, a string client_secret); otherwise each is an error. */
  allowLiteralSecrets: boolean;
  /** The values ${NAME} takes (default: none, so every ${NAME} without a default is an error). */
  variables?: Variables;
  /** Overlay patches by resource key (kind/name), merged in order over the document declaring that resource. */
  patches?: ReadonlyMap<string, readonly Layer[]>;
  /** Keep each valid resource's manifest data (variables substituted, overlays merged) in ManifestResult.data. */
  keepData?: boolean;
  /**
   * Also warn of what a create needs that a manifest leaves out (`converge validate`, which sees no live state; a plan
   * reads live state and blocks only the create that needs it).
   */
  createWarnings?: boolean;
}

/** What one file (or a whole directory) declares. */
export interface ManifestResult {
  resources: DesiredResource[];
  blocked: BlockedResource[];
  diagnostics: Diagnostic[];
  /** With ParseOptions.keepData: each valid resource's manifest data, by resource key. */
  data?: Map<string, unknown>;
}

/** Files larger than this are refused whole (one diagnostic). */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
/** The E_TOO_LARGE message, for a file refused by its size here or before it is read whole (src/source). */
export const TOO_LARGE_MESSAGE = `file is larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB; a manifest file must be smaller (split it into several files)`;
/** Collections nested deeper than this are refused (a real manifest needs about 10). */
export const MAX_NESTING_DEPTH = 64;
/** Alias expansions allowed per document (the yaml package's guard against "billion laughs"). */
export const MAX_ALIAS_COUNT = 100;

interface FileContext {
  file: string;
  text: string;
  lineCounter: LineCounter;
  options: ParseOptions;
}

function diagnostic(ctx: FileContext, offset: number, code: string, message: string, severity: Severity = 'error'): Diagnostic {
  const { line, column } = positionAt(ctx.lineCounter, offset);
  return { severity, file: ctx.file, line, column, message, code };
}

/** 1-based line and column of a character offset in `text` (for problems found before YAML parsing). */
function positionInText(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** Offset of the first byte that breaks UTF-8, or -1 when `bytes` is valid UTF-8. */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
    }
    if (need === 2 && ((b === 0xe0 && bytes[i + 1]! < 0xa0) || (b === 0xed && bytes[i + 1]! > 0x9f))) return i;
    if (need === 3 && ((b === 0xf0 && bytes[i + 1]! < 0x90) || (b === 0xf4 && bytes[i + 1]! > 0x8f))) return i;
    i += need + 1;
  }
  return -1;
}

/** A control byte no text file holds: every C0 one but tab, line feed, form feed and carriage return; and DEL. */
function isControlByte(byte: number): boolean {
  return (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0c && byte !== 0x0d) || byte === 0x7f;
}

/**
 * The message for text that is not UTF-8 (no NUL, no control byte): most likely saved as Latin-1 or Windows-1252, whose
 * accented letters are single bytes; `byte` is the first that breaks UTF-8, shown as the letter it is in Latin-1.
 */
function notUtf8Message(byte: number): string {
  const hex = `0x${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  const shown = byte >= 0xa1 ? ` ("${String.fromCharCode(byte)}" in Latin-1)` : '';
  return `file is not valid UTF-8: byte ${hex}${shown} here; it looks like Latin-1 or Windows-1252 text; re-save it as UTF-8 (your editor's encoding setting, or iconv -f WINDOWS-1252 -t UTF-8)`;
}

/** A file read to its documents, not yet validated; `diagnostics`: problems of the whole file (size, encoding, depth). */
interface ReadFile {
  documents: ReadDocument[];
  diagnostics: Diagnostic[];
}

/** Reads a file's raw bytes to documents: refuses huge, binary and non-UTF-8 content with one diagnostic each. */
export function readManifestBytes(file: string, bytes: Uint8Array, options: ParseOptions): ReadFile {
  const refused = (code: string, message: string, line = 1, column = 1): ReadFile => ({ documents: [], diagnostics: [{ severity: 'error', file, line, column, message, code }] });
  if (bytes.length > MAX_MANIFEST_BYTES) return refused('E_TOO_LARGE', TOO_LARGE_MESSAGE);
  const nul = bytes.indexOf(0);
  // The usual file: no NUL, and the native decoder finds it valid UTF-8 (the same rule as invalidUtf8Offset).
  const text = nul < 0 ? decodeValid(bytes) : undefined;
  if (text !== undefined) return readDocuments(file, text, options);
  const bad = invalidUtf8Offset(bytes);
  const first = [nul, bad].filter((o) => o >= 0).sort((a, b) => a - b)[0];
  if (first !== undefined) {
    const prefix = new TextDecoder('utf-8').decode(bytes.subarray(0, first));
    const { line, column } = positionInText(prefix, prefix.length);
    if (nul < 0 && !bytes.some(isControlByte)) {
      return refused('E_ENCODING', notUtf8Message(bytes[first]!), line, column);
    }
    const what = first === nul ? 'holds a NUL byte' : 'is not valid UTF-8 and holds control bytes';
    return refused('E_BINARY', `file ${what}: it looks binary; manifests are UTF-8 YAML text`, line, column);
  }
  return readDocuments(file, new TextDecoder('utf-8').decode(bytes), options);
}

const VALID_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The text of bytes that are valid UTF-8 (a byte order mark dropped, as TextDecoder does); undefined when they are not. */
function decodeValid(bytes: Uint8Array): string | undefined {
  try {
    return VALID_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Parses a file's raw bytes: its resources, the resources it blocks, and every problem as a diagnostic. */
export function parseManifestBytes(file: string, bytes: Uint8Array, options: ParseOptions): ManifestResult {
  const read = readManifestBytes(file, bytes, options);
  const result: ManifestResult = { resources: [], blocked: [], diagnostics: [...read.diagnostics], ...(options.keepData ? { data: new Map<string, unknown>() } : {}) };
  for (const document of read.documents) validateDocument(document, options, result);
  result.diagnostics = sortDiagnostics(result.diagnostics);
  return result;
}

/** Every YAML document of a text already checked for size, NUL and UTF-8 by readManifestBytes. */
function readDocuments(file: string, text: string, options: ParseOptions): ReadFile {
  const lineCounter = new LineCounter();
  const ctx: FileContext = { file, text, lineCounter, options };
  // What parseAllDocuments does, split in two so the token tree can be measured before it is composed.
  const tokens: CST.Token[] = Array.from(new Parser(lineCounter.addNewLine).parse(text));
  const deep = tooDeepOffset(tokens, MAX_NESTING_DEPTH);
  if (deep !== undefined) {
    return { documents: [], diagnostics: [diagnostic(ctx, deep, 'E_DEPTH', `nesting deeper than ${MAX_NESTING_DEPTH} levels; no manifest needs that (the whole file is ignored)`)] };
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
  const offset = name?.offset ?? contentsStart ?? (doc.range?.[0] ?? 0);
  const known = (MANIFEST_KINDS as readonly string[]).includes(kind?.value ?? '') ? (kind!.value as ResourceKind) : undefined;
  return { kind: known, name: name?.value || undefined, location: { file: ctx.file, ...positionAt(ctx.lineCounter, offset) } };
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
    return { problem: diagnostic(ctx, cycle.offset, 'E_ALIAS', `alias *${cycle.anchor} is inside the node its anchor names, which would make the value infinite; write the value out`) };
  }
  try {
    return { value: doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) };
  } catch (error) {
    const message = (error as Error).message;
    if (/Excessive alias count/.test(message)) {
      const offset = firstAliasOffset(doc) ?? (doc.range?.[0] ?? 0);
      return { problem: diagnostic(ctx, offset, 'E_ALIAS', `YAML aliases expand beyond the limit of ${MAX_ALIAS_COUNT} expansions (a "billion laughs"?); write the values out instead of reusing anchors so much`) };
    }
    const unresolved = unresolvedAlias(doc);
    if (unresolved) {
      const name = unresolved.anchor.length <= 60 ? ` *${unresolved.anchor}` : '';
      return { problem: diagnostic(ctx, unresolved.offset, 'E_ALIAS', `alias${name} refers to no anchor defined before it; define the &anchor first`) };
    }
    return { problem: diagnostic(ctx, (doc.range?.[0] ?? 0), 'E_YAML', `document cannot be read: ${message.split('\n')[0]}`) };
  }
}

/** The problem of a document's kind (missing, or not one converge manages, with the closest one), at the kind's value. */
export function kindProblem(locate: Locate, data: Record<string, unknown>): Diagnostic | undefined {
  const kind = data.kind;
  const kinds = MANIFEST_KINDS.join(', ');
  if (kind === undefined) return located(locate(['kind'], 'value'), 'E_SCHEMA', `missing required field "kind" (${kinds})`);
  if (typeof kind === 'string' && (MANIFEST_KINDS as readonly string[]).includes(kind)) return undefined;
  const guess = typeof kind === 'string' ? closest(kind, MANIFEST_KINDS) : undefined;
  const shown = typeof kind === 'string' && kind.length <= 64 ? `"${kind}"` : 'this value';
  const hint = guess ? `did you mean "${guess}"?` : `use one of ${kinds}`;
  return located(locate(['kind'], 'value'), 'E_KIND', `kind: ${shown} is not a kind converge manages; ${hint}`);
}

/** Literal secret values in a document's data, as its kind finds them (the value itself is never repeated in the message). */
function literalSecrets(data: Record<string, unknown>): LiteralSecret[] {
  return manifestHooksOf(data.kind)?.literalSecrets(data) ?? [];
}

/** Literal secret values, unless allowed: each one is an error at the value. */
function literalSecretProblems(locate: Locate, options: ParseOptions, data: Record<string, unknown>): Diagnostic[] {
  if (options.allowLiteralSecrets) return [];
  return literalSecrets(data).map((found) => located(locate(found.path, 'value'), 'E_LITERAL_SECRET', found.message));
}

function located(location: SourceLocation, code: string, message: string, severity: Severity = 'error'): Diagnostic {
  return { severity, ...location, message, code };
}

/** A schema problem at a value a variable set also names the variable and where its value was set. */
type SourceOf = (location: SourceLocation) => string | undefined;

function validate(layer: Layer, options: ParseOptions, diagnostics: Diagnostic[], sourceOf: SourceOf): DeploymentManifest | OAuthProviderManifest | undefined {
  const { data, locate } = layer;
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    const what = Array.isArray(data) ? 'a list' : `a ${typeof data}`;
    diagnostics.push(located(locate([], 'value'), 'E_SCHEMA', `a manifest document must be a mapping with apiVersion, kind, metadata and spec; this one is ${what}`));
    return undefined;
  }
  const record = data as Record<string, unknown>;
  const kindIssue = kindProblem(locate, record);
  if (kindIssue) {
    diagnostics.push(kindIssue);
    return undefined;
  }
  const kind = record.kind as ResourceKind;
  const schema = MANIFEST_SCHEMAS[kind];
  const parsed = schema.safeParse(data, SAFE_PARSE_OPTIONS);
  if (!parsed.success) {
    for (const problem of problemsFromIssues(parsed.error.issues, schema, kind)) {
      const at = locate(problem.path, problem.at);
      const source = problem.at === 'value' ? sourceOf(at) : undefined;
      diagnostics.push(located(at, problem.code, source ? `${problem.message} (${source})` : problem.message));
    }
  }
  diagnostics.push(...literalSecretProblems(locate, options, record));
  if (!parsed.success) return undefined;
  for (const warning of [...manifestWarnings(parsed.data), ...(options.createWarnings ? createWarnings(parsed.data) : [])]) {
    diagnostics.push(located(locate(warning.path, warning.at), warning.code, warning.message, 'warning'));
  }
  return parsed.data;
}

const SAFE_PARSE_OPTIONS = { reportInput: true, error: issueText };

function blockReason(problems: Diagnostic[]): string {
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : '';
  return `invalid manifest: ${formatLocation(first)}: ${first.message}${more}; fix the manifest (converge validate)`;
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
    const problem = yamlProblem(doc, errors[0]!, errors.map((e) => e.code));
    problems.push(diagnostic(ctx, problem.offset, problem.code, problem.message));
  }
  for (const warning of doc.warnings) {
    problems.push(diagnostic(ctx, warning.pos[0], 'E_YAML_WARNING', `YAML: ${warning.message.split('\n')[0]}`, 'warning'));
  }
  let data: unknown;
  const sources = new Map<string, string>();
  if (doc.errors.length === 0 && !isEmptyDocument(doc)) {
    // A file without "${" has no variable to substitute: its tree need not be walked for them.
    const variables = ctx.options.variables ?? NO_VARIABLES;
    const substituted: Substitution = ctx.text.includes('${') ? substituteDocument(doc, ctx.text, variables, MAX_MANIFEST_BYTES) : { problems: [], sources: new Map() };
    for (const problem of substituted.problems) problems.push(diagnostic(ctx, problem.offset, problem.code, problem.message));
    for (const [offset, names] of substituted.sources) {
      const described = describeSources(names, variables);
      if (described) sources.set(formatLocation({ file: ctx.file, ...positionAt(ctx.lineCounter, offset) }), described);
    }
    const read = substituted.problems.length === 0 ? toData(ctx, doc) : undefined;
    if (read && 'problem' in read) problems.push(read.problem);
    else if (read) data = read.value ?? undefined;
  }
  const locate: Locate = (path, at) => ({ file: ctx.file, ...positionAt(ctx.lineCounter, offsetForPath(doc, path, at)) });
  return { header: readHeader(ctx, doc), data, locate, problems, sources };
}

/** The overlay patches of the document's resource, in order (none when it names no resource). */
function patchesOf(read: ReadDocument, options: ParseOptions): readonly Layer[] {
  const { kind, name } = read.header;
  return (kind && name ? options.patches?.get(resourceKey(kind, name)) : undefined) ?? [];
}

/** The document with the overlay patches of its resource merged over it, if any (a document with problems is not patched). */
function patched(read: ReadDocument, options: ParseOptions): Layer {
  const patches = patchesOf(read, options);
  if (patches.length === 0 || read.data === undefined) return read;
  return mergeLayers(read, patches);
}

/** Validates one read document (merged with its overlay patches) into a resource, a blocked resource, or nothing. */
export function validateDocument(read: ReadDocument, options: ParseOptions, result: ManifestResult): void {
  const diagnostics: Diagnostic[] = [...read.problems];
  const { header } = read;
  let manifest: DeploymentManifest | OAuthProviderManifest | undefined;
  const layer = patched(read, options);
  const sourceOf: SourceOf = (at) => {
    const key = formatLocation(at);
    return read.sources.get(key) ?? patchesOf(read, options).map((patch) => patch.sources?.get(key)).find((found) => found !== undefined);
  };
  if (!diagnostics.some((d) => d.severity === 'error') && layer.data !== undefined) manifest = validate(layer, options, diagnostics, sourceOf);
  result.diagnostics.push(...diagnostics);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) {
    if (header.kind && header.name) result.blocked.push({ kind: header.kind, name: header.name, location: header.location, reason: blockReason(errors) });
    return;
  }
  if (!manifest) return;
  result.data?.set(resourceKey(manifest.kind, manifest.metadata.name), layer.data);
  result.resources.push(toResource(manifest, header.location, (path) => layer.locate(path, 'value')));
}
