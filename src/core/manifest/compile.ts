// The one pass from bytes to resources (pure): variables and overlays, then each file parsed, substituted, patched, validated and converted, then combined.
import { sortDiagnostics, type Diagnostic } from '../diagnostics.js';
import { resourceKey } from '../model.js';
import { collectManifests, type FileResult } from './collect.js';
import {
  blockUnread,
  compileOverlays,
  compileVariables,
  patchesAfter,
  unknownTargets,
  withoutOverlayAnnotation,
  type CompiledOverlays,
  type OverlayInput,
  type VariablesInput,
} from './environment.js';
import type { Layer } from './overlay.js';
import { parseManifestBytes, validateDocument, type ManifestResult, type ParseOptions } from './parse.js';

/** One manifest file as read: its path relative to the manifest directory (forward slashes) and its bytes. */
export interface ManifestBytes {
  file: string;
  bytes: Uint8Array;
}

/** What a compile takes besides the files: the literal-secrets switch, whether to keep each resource's data, the environment. */
export interface CompileOptions {
  allowLiteralSecrets: boolean;
  keepData?: boolean;
  /** Warn of what a create needs that a manifest leaves out (ParseOptions.createWarnings). */
  createWarnings?: boolean;
  /** The variables files, in order (later ones win); absent: none. */
  vars?: readonly VariablesInput[];
  /** The overlay files, overlay by overlay, each in path order; absent: none. */
  overlays?: readonly OverlayInput[];
}

/** The environment compiled: the options every file is parsed with, and the overlays' documents and patches. */
export interface CompiledEnvironment {
  /** Each file's first pass: the switch, the variables, keepData, and no patches (structured-cloneable: a worker thread may take it). */
  parseOptions: ParseOptions;
  overlays: CompiledOverlays;
  /** The overlays' patches of the base, by resource key. */
  patches: ReadonlyMap<string, readonly Layer[]>;
  /** Problems of the variables files and the overlays. */
  diagnostics: Diagnostic[];
}

/** Compiles the variables files, then the overlays with those variables. */
export function compileEnvironment(options: CompileOptions): CompiledEnvironment {
  const vars = options.vars ? compileVariables(options.vars) : undefined;
  const parseOptions: ParseOptions = {
    allowLiteralSecrets: options.allowLiteralSecrets,
    ...(vars ? { variables: vars.variables } : {}),
    ...(options.keepData ? { keepData: true } : {}),
    ...(options.createWarnings ? { createWarnings: true } : {}),
  };
  const overlays = compileOverlays(options.overlays ?? [], parseOptions);
  return {
    parseOptions,
    overlays,
    patches: patchesAfter(overlays.documents, -1),
    diagnostics: [...(vars?.diagnostics ?? []), ...overlays.diagnostics],
  };
}

/** One file's first pass (no overlay patches): what a worker thread runs. */
export function compileFile(file: ManifestBytes, parseOptions: ParseOptions): ManifestResult {
  return parseManifestBytes(file.file, file.bytes, parseOptions);
}

/** The file's result, compiled again with the overlay patches when an overlay patches a resource it declares. */
export function withPatches(
  environment: CompiledEnvironment,
  file: ManifestBytes,
  result: ManifestResult,
): ManifestResult {
  const { patches } = environment;
  if (patches.size === 0) return result;
  const declaresPatched = [...result.resources, ...result.blocked].some((r) =>
    patches.has(resourceKey(r.kind, r.name)),
  );
  return declaresPatched ? parseManifestBytes(file.file, file.bytes, { ...environment.parseOptions, patches }) : result;
}

/**
 * The files' results (each after withPatches) combined with the environment: the resources overlays add, a name
 * declared twice blocked, what an unread overlay may change blocked, every diagnostic sorted. `filesRead` counts the
 * manifest files read, those refused included (an empty directory is a warning); `refused`: how many of them were
 * refused unread (too large, unreadable), each already an error that says why nothing of it is planned, so no warning
 * that "none declares a resource" is added beside it.
 */
export function combineManifests(
  environment: CompiledEnvironment,
  files: readonly FileResult[],
  filesRead: number,
  refused = 0,
): ManifestResult {
  const { overlays, parseOptions } = environment;
  const results = [...files];
  const declared = new Set(
    results.flatMap((r) => [...r.resources, ...r.blocked].map((d) => resourceKey(d.kind, d.name))),
  );
  const diagnostics = [
    ...environment.diagnostics,
    ...unknownTargets(overlays.documents, declared, 'the manifest directory'),
    ...files.flatMap(emptyFileNote),
  ];
  for (const doc of overlays.documents.filter((d) => d.add)) {
    const added: ManifestResult = {
      resources: [],
      blocked: [],
      diagnostics: [],
      ...(parseOptions.keepData ? { data: new Map<string, unknown>() } : {}),
    };
    validateDocument(
      withoutOverlayAnnotation(doc.read),
      { ...parseOptions, patches: patchesAfter(overlays.documents, doc.overlay) },
      added,
    );
    results.push({ file: doc.location.file, ...added });
  }
  const all = collectManifests(results);
  const unknown = blockUnread(all.resources, overlays.unread);
  const collected = { ...all, resources: unknown.resources, blocked: [...all.blocked, ...unknown.blocked] };
  const empty = refused > 0 ? undefined : emptyDirectoryNote(filesRead, collected);
  if (empty) diagnostics.push(empty);
  const data = parseOptions.keepData ? new Map(results.flatMap((r) => [...(r.data ?? [])])) : undefined;
  return {
    ...collected,
    diagnostics: sortDiagnostics([...collected.diagnostics, ...diagnostics]),
    ...(data ? { data } : {}),
  };
}

/** The code of a manifest file that declares nothing (empty, or only comments and `---`): prune reads it (src/core/declared-files.ts). */
export const EMPTY_FILE_CODE = 'W_EMPTY_FILE';

/**
 * A manifest file that declares nothing may be one caught while it is written (an editor that truncates first, a slow
 * checkout): a warning, and prune treats what it declared before as unknown.
 */
function emptyFileNote(file: FileResult): Diagnostic[] {
  if (file.resources.length > 0 || file.blocked.length > 0 || file.diagnostics.length > 0) return [];
  return [
    {
      severity: 'warning',
      file: file.file,
      line: 1,
      column: 1,
      code: EMPTY_FILE_CODE,
      message:
        'declares nothing; delete the file to remove its resources (converge never deletes what a file that is present but empty declared before)',
    },
  ];
}

/**
 * A directory without manifests looks like success and plans nothing (a git-sync that has not synced yet, a wrong
 * path): a warning says so.
 */
function emptyDirectoryNote(files: number, collected: ManifestResult): Diagnostic | undefined {
  const note = (message: string): Diagnostic => ({
    severity: 'warning',
    file: '.',
    line: 1,
    column: 1,
    code: 'W_NO_MANIFESTS',
    message,
  });
  if (files === 0) {
    return note(
      'the manifest directory holds no manifest file (*.yaml, *.yml): nothing to plan; is it the right directory, and has it been synced?',
    );
  }
  if (collected.resources.length === 0 && collected.blocked.length === 0 && collected.diagnostics.length === 0) {
    return note(
      `${files} file${files === 1 ? '' : 's'} read, but none declares a resource (kind: Deployment or OAuthProvider): nothing to plan`,
    );
  }
  return undefined;
}

/**
 * The whole pass in one call: the environment, each file, then the combination (`filesRead`: the files read, those
 * whose bytes are not here because they were refused included; default: `files.length`).
 */
export function compileManifests(
  files: readonly ManifestBytes[],
  options: CompileOptions,
  filesRead = files.length,
): ManifestResult {
  const environment = compileEnvironment(options);
  const results = files.map((file) => ({
    file: file.file,
    ...withPatches(environment, file, compileFile(file, environment.parseOptions)),
  }));
  return combineManifests(environment, results, filesRead);
}
