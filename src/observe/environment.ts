// One environment's inputs (the I/O half): reads the variables files and the overlay directories given with --vars and --overlay.
import { readFileSync } from 'node:fs';
import { resourceKey, type BlockedResource, type ResourceKind, type SourceLocation } from '../core/model.js';
import type { Diagnostic } from '../core/diagnostics.js';
import { OVERLAY_ANNOTATION, type Layer } from '../core/manifest/overlay.js';
import { kindProblem, readManifestBytes, type ParseOptions, type ReadDocument } from '../core/manifest/parse.js';
import { parseVariablesFile, type Variables, type VariableValue } from '../core/manifest/variables.js';

/** A file or folder the user named: its path, and how diagnostics name it (as it was given). */
interface EnvironmentInput {
  path: string;
  label: string;
}

/** The variables files (later ones win) and overlay directories (applied in order) of one environment. */
export interface Environment {
  vars: EnvironmentInput[];
  overlays: EnvironmentInput[];
}

/** What a load read besides the manifest directory, for the content version: a name and the bytes. */
export interface HashedInput {
  name: string;
  bytes: Uint8Array;
}

function note(file: string, code: string, message: string): Diagnostic {
  return { severity: 'error', file, line: 1, column: 1, code, message };
}

/** Reads every variables file, in order; a file that cannot be read or parsed is a diagnostic, never a crash. */
export function readVariables(inputs: readonly EnvironmentInput[]): { variables: Variables; diagnostics: Diagnostic[]; hashed: HashedInput[] } {
  const values = new Map<string, VariableValue>();
  const diagnostics: Diagnostic[] = [];
  const hashed: HashedInput[] = [];
  for (const input of inputs) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(input.path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      diagnostics.push(note(input.label, 'E_VARS_FILE', `variables file cannot be read (${code}); check the path given to --vars (or the setting vars)`));
      continue;
    }
    hashed.push({ name: `vars:${input.label}`, bytes });
    const read = parseVariablesFile(input.label, bytes.toString('utf8'));
    diagnostics.push(...read.diagnostics);
    for (const [name, value] of read.values) values.set(name, value);
  }
  return { variables: { values, files: inputs.map((i) => i.label) }, diagnostics, hashed };
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

/** The metadata.name of an overlay document that failed: from its data, else as written when it holds no variable. */
function nameOf(read: ReadDocument): string | undefined {
  const name = (read.data as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
  if (typeof name === 'string' && name !== '') return name;
  return read.header.name !== undefined && !read.header.name.includes('${') ? read.header.name : undefined;
}

/** Sorts one overlay document into a patch or an add, or a diagnostic (and an unread overlay) when it names no resource. */
function overlayDocument(read: ReadDocument, overlay: number, diagnostics: Diagnostic[], unread: UnreadOverlay[]): OverlayDocument | undefined {
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
    diagnostics.push({ severity: 'error', ...read.locate(['metadata', 'annotations', OVERLAY_ANNOTATION], 'value'), code: 'E_OVERLAY', message: `${OVERLAY_ANNOTATION} takes one value, "add" (a new resource); remove it to patch a resource of the base` });
    return failed(diagnostics.at(-1)!);
  }
  if (!kind || !name) {
    // A kind that is there but wrong is told at the kind, with the closest one; a missing kind or name at the document.
    const data = read.data as Record<string, unknown>;
    const wrongKind = typeof data === 'object' && data !== null && data.kind !== undefined ? kindProblem(read.locate, data) : undefined;
    diagnostics.push(wrongKind ?? { severity: 'error', ...location, code: 'E_OVERLAY', message: 'an overlay document names the resource it changes: kind (Deployment or OAuthProvider) and metadata.name' });
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
export function readOverlayFile(label: string, bytes: Uint8Array, options: ParseOptions, overlay: number, diagnostics: Diagnostic[], unread: UnreadOverlay[]): OverlayDocument[] {
  const read = readManifestBytes(label, bytes, { allowLiteralSecrets: options.allowLiteralSecrets, variables: options.variables });
  diagnostics.push(...read.diagnostics);
  const refused = read.diagnostics.find((d) => d.severity === 'error');
  if (refused) unread.push({ error: refused, name: undefined });
  return read.documents.map((doc) => overlayDocument(doc, overlay, diagnostics, unread)).filter((d): d is OverlayDocument => d !== undefined);
}

/**
 * The resources an unread overlay may change, moved from `resources` to blocked: those of the name it gives, or every
 * one when it gives none that could be read. Its error is the reason, so the plan says which file to fix.
 */
export function blockUnread<R extends { kind: ResourceKind; name: string; location: SourceLocation }>(resources: R[], unread: readonly UnreadOverlay[]): { resources: R[]; blocked: BlockedResource[] } {
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
export function unknownTargets(documents: readonly OverlayDocument[], declared: ReadonlySet<string>, baseLabel: string): Diagnostic[] {
  const problems: Diagnostic[] = [];
  for (const doc of documents) {
    if (doc.add) continue;
    const key = resourceKey(doc.kind, doc.name);
    const added = documents.some((other) => other.add && other.overlay < doc.overlay && resourceKey(other.kind, other.name) === key);
    if (declared.has(key) || added) continue;
    problems.push({
      severity: 'error',
      ...doc.location,
      code: 'E_OVERLAY_TARGET',
      message: `overlay patches ${doc.kind} "${doc.name}", which the base (${baseLabel}) and the overlays before it do not declare; check kind and metadata.name, or annotate the document ${OVERLAY_ANNOTATION}: add to declare a new resource`,
    });
  }
  return problems;
}
