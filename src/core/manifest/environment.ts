// One environment compiled from its bytes (pure): variables files to the values ${NAME} takes, overlay files to patches.
import { resourceKey, type BlockedResource, type ResourceKind, type SourceLocation } from '../model.js';
import type { Diagnostic } from '../diagnostics.js';
import { didYouMean } from '../did-you-mean.js';
import { OVERLAY_ANNOTATION, type Layer } from './overlay.js';
import { kindProblem, type ParseOptions } from './parse.js';
import { readManifestBytes, type ReadDocument } from './read-document.js';
import { parseVariablesFile, type Variables, type VariableValue } from './variables.js';

/** A variables file as read: its bytes, or unread (the reader has told why, as a diagnostic of its own). */
export type VariablesInput = { file: string; bytes: Uint8Array } | { file: string; unread: true };

/**
 * A file of an overlay directory as read (`overlay`: the directory's index; overlays apply in order): its bytes, or
 * what kept it (or a folder of the overlay) from being read, a diagnostic the reader has told already.
 */
export type OverlayInput =
  { overlay: number; file: string; bytes: Uint8Array } | { overlay: number; unread: Diagnostic };

/** The variables files, in order (a later file's value wins): the values, where each was set, and every problem. */
export function compileVariables(inputs: readonly VariablesInput[]): {
  variables: Variables;
  diagnostics: Diagnostic[];
} {
  const values = new Map<string, VariableValue>();
  const origins = new Map<string, SourceLocation>();
  const diagnostics: Diagnostic[] = [];
  const read: string[] = [];
  const unread: string[] = [];
  for (const input of inputs) {
    if ('unread' in input) {
      unread.push(input.file);
      continue;
    }
    read.push(input.file);
    // ignoreBOM keeps a byte order mark in the text, as the yaml package expects it (positions count it).
    const parsed = parseVariablesFile(input.file, new TextDecoder('utf-8', { ignoreBOM: true }).decode(input.bytes));
    diagnostics.push(...parsed.diagnostics);
    for (const [name, value] of parsed.values) values.set(name, value);
    for (const [name, origin] of parsed.origins) origins.set(name, origin);
  }
  return { variables: { values, origins, files: read, unread }, diagnostics };
}

/** One document of an overlay: a patch of a base resource, or (annotated converge/overlay: add) a new resource. */
export interface OverlayDocument {
  kind: ResourceKind;
  name: string;
  /** Index of its overlay directory (overlays apply in order). */
  overlay: number;
  location: SourceLocation;
  read: ReadDocument;
  add: boolean;
}

/**
 * An overlay file or document that could not be read: what it changes is unknown, so the resources it may change are
 * blocked (docs/environments.md), never written from the base alone.
 */
export interface UnreadOverlay {
  /** Its first error. */
  error: Diagnostic;
  /** The metadata.name it gives, when that could be read (only resources of that name are unknown); else every one is. */
  name: string | undefined;
}

/** The overlays compiled: their documents, what could not be read of them, and every problem found compiling them. */
export interface CompiledOverlays {
  documents: OverlayDocument[];
  unread: UnreadOverlay[];
  diagnostics: Diagnostic[];
}

/** Every overlay input, in order, compiled with the variables substituted (`options`: the literal-secrets switch and the variables). */
export function compileOverlays(inputs: readonly OverlayInput[], options: ParseOptions): CompiledOverlays {
  const out: CompiledOverlays = { documents: [], unread: [], diagnostics: [] };
  for (const input of inputs) {
    if ('unread' in input) out.unread.push({ error: input.unread, name: undefined });
    else
      out.documents.push(
        ...compileOverlayFile(input.file, input.bytes, options, input.overlay, out.diagnostics, out.unread),
      );
  }
  return out;
}

function annotationOf(data: unknown): unknown {
  const metadata = (data as { metadata?: { annotations?: Record<string, unknown> } } | undefined)?.metadata;
  return metadata?.annotations?.[OVERLAY_ANNOTATION];
}

/** The document without the overlay annotation (an instruction to converge, not part of the resource), its problems told already. */
export function withoutOverlayAnnotation(read: ReadDocument): ReadDocument {
  const data = read.data as { metadata: { annotations: Record<string, unknown> } };
  const annotations = { ...data.metadata.annotations };
  delete annotations[OVERLAY_ANNOTATION];
  const metadata: Record<string, unknown> = { ...data.metadata, annotations };
  if (Object.keys(annotations).length === 0) delete metadata.annotations;
  return { ...read, data: { ...data, metadata }, problems: [] };
}

/** The metadata.name of an overlay document that failed: from its data, else as written when it holds no variable. */
function nameOf(read: ReadDocument): string | undefined {
  const name = (read.data as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
  if (typeof name === 'string' && name !== '') return name;
  return read.header.name !== undefined && !read.header.name.includes('${') ? read.header.name : undefined;
}

/** Sorts one overlay document into a patch or an add, or a diagnostic (and an unread overlay) when it names no resource. */
function overlayDocument(
  read: ReadDocument,
  overlay: number,
  diagnostics: Diagnostic[],
  unread: UnreadOverlay[],
): OverlayDocument | undefined {
  diagnostics.push(...read.problems);
  const failed = (error: Diagnostic): undefined => {
    unread.push({ error, name: nameOf(read) });
    return undefined;
  };
  const problem = read.problems.find((p) => p.severity === 'error');
  if (problem) return failed(problem);
  if (read.data === undefined) return undefined;
  const { kind, name, location } = read.header;
  const annotation = annotationOf(read.data);
  if (annotation !== undefined && annotation !== 'add') {
    diagnostics.push({
      severity: 'error',
      ...read.locate(['metadata', 'annotations', OVERLAY_ANNOTATION], 'value'),
      code: 'E_OVERLAY',
      message: `${OVERLAY_ANNOTATION} takes one value, "add" (a new resource); remove it to patch a resource of the base`,
    });
    return failed(diagnostics.at(-1)!);
  }
  if (!kind || !name) {
    // A kind that is there but wrong is told at the kind, with the closest one; a missing kind or name at the document.
    const data = read.data as Record<string, unknown>;
    const wrongKind =
      typeof data === 'object' && data !== null && data.kind !== undefined ? kindProblem(read.locate, data) : undefined;
    diagnostics.push(
      wrongKind ?? {
        severity: 'error',
        ...location,
        code: 'E_OVERLAY',
        message:
          'an overlay document names the resource it changes: kind (Deployment or OAuthProvider) and metadata.name',
      },
    );
    return failed(diagnostics.at(-1)!);
  }
  return { kind, name, overlay, location, read, add: annotation === 'add' };
}

/** The patches by resource key from the overlays after `after` (an add in overlay i is patched by overlays i+1...). */
export function patchesAfter(documents: readonly OverlayDocument[], after: number): Map<string, Layer[]> {
  const patches = new Map<string, Layer[]>();
  for (const doc of documents) {
    if (doc.add || doc.overlay <= after) continue;
    const key = resourceKey(doc.kind, doc.name);
    patches.set(key, [...(patches.get(key) ?? []), doc.read]);
  }
  return patches;
}

/** Reads the documents of one overlay file with the variables substituted; what cannot be read goes to `unread`. */
function compileOverlayFile(
  label: string,
  bytes: Uint8Array,
  options: ParseOptions,
  overlay: number,
  diagnostics: Diagnostic[],
  unread: UnreadOverlay[],
): OverlayDocument[] {
  const read = readManifestBytes(label, bytes, { variables: options.variables });
  diagnostics.push(...read.diagnostics);
  const refused = read.diagnostics.find((d) => d.severity === 'error');
  if (refused) unread.push({ error: refused, name: undefined });
  return read.documents
    .map((doc) => overlayDocument(doc, overlay, diagnostics, unread))
    .filter((d): d is OverlayDocument => d !== undefined);
}

/**
 * The resources an unread overlay may change, moved from `resources` to blocked: those of the name it gives, or every
 * one when it gives none that could be read. Its error is the reason, so the plan says which file to fix.
 */
export function blockUnread<R extends { kind: ResourceKind; name: string; location: SourceLocation }>(
  resources: R[],
  unread: readonly UnreadOverlay[],
): { resources: R[]; blocked: BlockedResource[] } {
  if (unread.length === 0) return { resources, blocked: [] };
  const kept: R[] = [];
  const blocked: BlockedResource[] = [];
  for (const resource of resources) {
    const cause = unread.find((u) => u.name === undefined || u.name === resource.name);
    if (!cause) {
      kept.push(resource);
      continue;
    }
    const { file, line, column, message } = cause.error;
    const reason = `the overlay ${file}:${line}:${column} could not be read (${message}); what it changes of this resource is unknown, so it is not written until that file is fixed`;
    blocked.push({ kind: resource.kind, name: resource.name, location: resource.location, reason });
  }
  return { resources: kept, blocked };
}

/** A patch whose resource neither the base nor an earlier overlay declares: an error at the patch (a typo must not create nothing). */
export function unknownTargets(
  documents: readonly OverlayDocument[],
  declared: ReadonlySet<string>,
  baseLabel: string,
): Diagnostic[] {
  const problems: Diagnostic[] = [];
  for (const doc of documents) {
    if (doc.add) continue;
    const key = resourceKey(doc.kind, doc.name);
    const added = documents.some(
      (other) => other.add && other.overlay < doc.overlay && resourceKey(other.kind, other.name) === key,
    );
    if (declared.has(key) || added) continue;
    const prefix = resourceKey(doc.kind, '');
    const sameKind = [
      ...[...declared].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)),
      ...documents
        .filter((other) => other.add && other.overlay < doc.overlay && other.kind === doc.kind)
        .map((other) => other.name),
    ];
    problems.push({
      severity: 'error',
      ...doc.location,
      code: 'E_OVERLAY_TARGET',
      message: `overlay patches ${doc.kind} "${doc.name}", which the base (${baseLabel}) and the overlays before it do not declare${didYouMean(doc.name, sameKind)}; check kind and metadata.name, or annotate the document ${OVERLAY_ANNOTATION}: add to declare a new resource`,
    });
  }
  return problems;
}
