// Loads a manifest directory (the I/O half of loading): reads the files manifest-listing.ts lists, parses, collects.
import { join, resolve } from 'node:path';
import { sortDiagnostics, type Diagnostic } from '../core/diagnostics.js';
import { ContentHasher } from '../core/manifest-version.js';
import { ContentStream } from './content-stream.js';
import { UsageError } from '../core/errors.js';
import type { FileResult } from '../core/manifest/collect.js';
import {
  combineManifests,
  compileEnvironment,
  withPatches,
  type CompiledEnvironment,
  type ManifestBytes,
} from '../core/manifest/compile.js';
import type { OverlayInput } from '../core/manifest/environment.js';
import type { ManifestResult, ParseOptions } from '../core/manifest/parse.js';
import { variablesId } from '../core/manifest/variables.js';
import { CompilePool, compileFiles, type OnCompiled } from './compile-pool.js';
import { POOL_MIN_FILES, type CompileThreads } from './compile-threads.js';
import type { ListingAhead } from './listing-ahead.js';
import type { UnseenFile } from '../core/declared-files.js';
import { readInputFile, readManifestFile } from './read-manifest-file.js';
import { byPath, listManifestFiles, MANIFEST_NAME, type ManifestListing } from './manifest-listing.js';
import { readVariableFiles, type Environment, type HashedInput } from './environment.js';

export interface LoadOptions {
  /** Accept literal secret values (`value:`, a string client_secret); otherwise each is an error. */
  allowLiteralSecrets: boolean;
  /** Parse results of an earlier load of the same directory, reused for files whose bytes have not changed. */
  cache?: ManifestCache;
  /** Variables files and overlay directories (docs/environments.md); absent: none. */
  environment?: Environment;
  /** Keep each valid resource's manifest data in the result's `data` (export --overlay-out); the cache is not used. */
  keepData?: boolean;
  /** Warn of what a create needs that a manifest leaves out (`converge validate`: src/core/manifest/parse.ts ParseOptions). */
  createWarnings?: boolean;
  /**
   * Told each manifest file's first pass as its compile finishes, while the others compile (a file the cache knows is
   * not compiled, and not told): the plan's work on its resources starts then (src/observe/plan-ahead.ts).
   */
  onCompiled?: OnCompiled;
  /**
   * The listing of the directory started before the command's modules loaded (src/cli/commands/validate.ts):
   * loadManifestDir of that directory takes it instead of walking again, and the load's pool takes the compile
   * threads it started.
   */
  ahead?: ListingAhead;
}

/**
 * What each manifest file parsed to, by path, reused while the file's bytes and the parse options are the same.
 * A long-lived process (the daemon) keeps one per directory: a reload after one edit parses one file, not all.
 * The results are shared between loads, so nothing may change them (nothing does: plans and jobs copy).
 */
export class ManifestCache {
  private readonly entries = new Map<string, { bytes: Uint8Array; options: string; result: ManifestResult }>();
  /** What the content id hashes of the files held, kept between ids. */
  private readonly content = new ContentStream();

  get size(): number {
    return this.entries.size;
  }

  get(path: string, bytes: Uint8Array, options: ParseOptions): ManifestResult | undefined {
    const entry = this.entries.get(path);
    if (!entry || entry.options !== optionsKey(options)) return undefined;
    return Buffer.compare(entry.bytes, bytes) === 0 ? entry.result : undefined;
  }

  set(path: string, bytes: Uint8Array, options: ParseOptions, result: ManifestResult): void {
    this.entries.set(path, { bytes, options: optionsKey(options), result });
    this.content.set(path, bytes);
  }

  /**
   * The content id of the files held (ContentHasher over their sorted paths and bytes): after a load of the whole
   * directory without an environment, and the loads of single files since, the same as that directory's read now.
   */
  contentId(): string {
    return this.content.id();
  }

  /** Forgets every file not in `paths` (deleted, renamed away, or now unreadable). */
  retain(paths: ReadonlySet<string>): void {
    for (const path of this.entries.keys()) {
      if (paths.has(path)) continue;
      this.entries.delete(path);
      this.content.delete(path);
    }
  }
}

/** The id of each set of variables read (one per load), so that it is hashed once, not once per file. */
const VARIABLES_IDS = new WeakMap<object, string>();

/** What a file's parse depends on besides its bytes: the literal-secrets switch and the variables. */
function optionsKey(options: ParseOptions): string {
  const variables = options.variables;
  const switches = `${options.allowLiteralSecrets}:${options.createWarnings === true}`;
  if (!variables) return `${switches}:-`;
  let id = VARIABLES_IDS.get(variables);
  if (id === undefined) {
    id = variablesId(variables);
    VARIABLES_IDS.set(variables, id);
  }
  return `${switches}:${id}`;
}

export interface ManifestDirResult extends ManifestResult {
  /** Relative paths of the manifest files found and read, sorted. */
  files: string[];
  /** The content version of the files read (their sorted paths and bytes; see ContentHasher). */
  contentId: string;
  /**
   * Manifest paths present whose content could not be read (a dangling link, a directory, a FIFO, a file that cannot
   * be opened), sorted: what each declared before is unknown, never absent (src/core/declared-files.ts).
   */
  unread?: UnseenFile[];
}

/** Reading and parsing yield to the event loop after about this long, so requests in flight are answered meanwhile. */
const YIELD_EVERY_MS = 5;

/**
 * Reads the files of one overlay directory after another (a missing one is a usage mistake, like a missing manifest
 * directory); a file or folder that cannot be read is an unread input, its diagnostic told here.
 */
async function readOverlays(
  environment: Environment | undefined,
  diagnostics: Diagnostic[],
  hashed: HashedInput[],
): Promise<OverlayInput[]> {
  const inputs: OverlayInput[] = [];
  for (const [index, overlay] of (environment?.overlays ?? []).entries()) {
    const listing = await listManifestFiles(overlay.path, 'the overlay directory').catch((error: unknown) => {
      if (error instanceof UsageError)
        throw new UsageError(
          `overlay ${overlay.given ?? overlay.label}: ${error.message.replace('manifest directory', 'directory')} (--overlay, setting overlays)`,
        );
      throw error;
    });
    const fromListing = listing.diagnostics.map((d) => ({ ...d, file: `${overlay.label}/${d.file}` }));
    diagnostics.push(...fromListing);
    inputs.push(...fromListing.filter((d) => d.severity === 'error').map((unread) => ({ overlay: index, unread })));
    for (const file of listing.files) {
      const label = `${overlay.label}/${file.path}`;
      const outcome = readInputFile(file);
      if ('vanished' in outcome) diagnostics.push({ ...outcome.vanished, file: label });
      else if ('diagnostic' in outcome) {
        diagnostics.push({ ...outcome.diagnostic, file: label });
        inputs.push({ overlay: index, unread: { ...outcome.diagnostic, file: label } });
      } else {
        hashed.push({ name: `overlay:${index}:${label}`, bytes: outcome.bytes });
        inputs.push({ overlay: index, file: label, bytes: outcome.bytes });
      }
    }
  }
  return inputs;
}

/**
 * Reads listed files, with the environment's variables and overlays, then compiles the bytes
 * (src/core/manifest/compile.ts), on every core when there are many (src/observe/compile-pool.ts). A file that
 * vanished since listing is a warning, never a crash. Files the cache knows unchanged are not parsed again (a file an
 * overlay patches always is).
 */
export async function readManifestFiles(
  listing: ManifestListing,
  options: LoadOptions,
  early?: CompileThreads,
): Promise<ManifestDirResult> {
  const extra: Diagnostic[] = [...listing.diagnostics];
  const vars = options.environment ? readVariableFiles(options.environment.vars) : undefined;
  const hashed: HashedInput[] = [...(vars?.hashed ?? [])];
  extra.push(...(vars?.diagnostics ?? []));
  const overlays = await readOverlays(options.environment, extra, hashed);
  const environment = compileEnvironment({
    allowLiteralSecrets: options.allowLiteralSecrets,
    ...(options.keepData ? { keepData: true } : {}),
    ...(options.createWarnings ? { createWarnings: true } : {}),
    ...(vars ? { vars: vars.files } : {}),
    ...(overlays.length > 0 ? { overlays } : {}),
  });
  const cache = options.keepData ? undefined : options.cache;
  // Many files and none cached: the pool's threads start now (unless the listing ahead started them), and load while
  // the files are read.
  const pool =
    listing.files.length >= POOL_MIN_FILES && !cache?.size
      ? early
        ? CompilePool.taking(early, environment.parseOptions)
        : CompilePool.start(environment.parseOptions)
      : undefined;
  // Threads started ahead that no pool takes (a cached load) free their core now.
  if (!pool) void early?.close();
  try {
    return await readAndCompile(listing, environment, { cache, pool, extra, hashed, onCompiled: options.onCompiled });
  } finally {
    await Promise.all([pool?.close(), early?.close()]);
  }
}

/** What readManifestFiles hands on: the cache, the pool started early, diagnostics and inputs read so far. */
interface ReadState {
  cache: ManifestCache | undefined;
  pool: CompilePool | undefined;
  extra: Diagnostic[];
  hashed: HashedInput[];
  onCompiled: OnCompiled | undefined;
}

/** Reads the listed files' bytes, compiles those the cache does not know, and combines every result with the environment. */
async function readAndCompile(
  listing: ManifestListing,
  environment: CompiledEnvironment,
  { cache, pool, extra, hashed, onCompiled }: ReadState,
): Promise<ManifestDirResult> {
  const read: string[] = [];
  const unread: UnseenFile[] = [...listing.unread];
  let refused = 0;
  const content = new ContentHasher();
  const files: Array<ManifestBytes & { result?: ManifestResult }> = [];
  let lastYield = performance.now();
  for (const file of listing.files) {
    if (performance.now() - lastYield > YIELD_EVERY_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      lastYield = performance.now();
    }
    const outcome = readManifestFile(file);
    if ('vanished' in outcome) {
      extra.push(outcome.vanished);
      continue;
    }
    read.push(file.path);
    if ('unseen' in outcome) {
      extra.push(outcome.unseen.diagnostic);
      unread.push(outcome.unseen.unread);
      refused += 1;
      continue;
    }
    if ('diagnostic' in outcome) {
      extra.push(outcome.diagnostic);
      refused += 1;
      continue;
    }
    content.add(file.path, outcome.bytes);
    const cached = cache?.get(file.path, outcome.bytes, environment.parseOptions);
    files.push({ file: file.path, bytes: outcome.bytes, ...(cached ? { result: cached } : {}) });
  }
  const pending = files.filter((file) => !file.result);
  const compiled = await compileFiles(pending, environment.parseOptions, pool, onCompiled);
  pending.forEach((file, index) => {
    file.result = compiled[index]!;
    // A file converge failed to compile (E_COMPILE: a thread failed) is compiled again next time, not remembered.
    if (!file.result.diagnostics.some((d) => d.code === 'E_COMPILE'))
      cache?.set(file.file, file.bytes, environment.parseOptions, file.result);
  });
  const results: FileResult[] = files.map((file) => ({
    file: file.file,
    ...withPatches(environment, file, file.result!),
  }));
  cache?.retain(new Set(results.map((result) => result.file)));
  for (const input of hashed) content.add(input.name, input.bytes);
  const compiledAll = combineManifests(environment, results, read.length, refused);
  const result: ManifestDirResult = {
    ...compiledAll,
    diagnostics: sortDiagnostics([...compiledAll.diagnostics, ...extra]),
    files: read,
    contentId: content.id(),
  };
  if (unread.length > 0) result.unread = unread.sort((a, b) => byPath(a.file, b.file));
  return result;
}

/** Loads a manifest directory: every manifest, every problem as a diagnostic. Throws UsageError if `dir` is not a directory. */
export async function loadManifestDir(dir: string, options: LoadOptions): Promise<ManifestDirResult> {
  const ahead = options.ahead?.dir === resolve(dir) ? options.ahead : undefined;
  if (!ahead) return readManifestFiles(await listManifestFiles(dir), options);
  return readManifestFiles(await ahead.listing, options, ahead.threads());
}

/**
 * Reads and compiles only `paths` (relative to `dir`, no environment) through `cache`, whose other entries stay: the
 * load of a targeted reconcile (src/daemon/cycle/targeted.ts). Undefined when one of them is not a manifest file that
 * reads (gone, a folder, a link, refused): the whole directory is loaded instead. Combined among themselves only, so
 * the caller checks their names against the other files'; the content id is the whole directory's, from the cache.
 */
export async function loadChangedManifests(
  dir: string,
  paths: readonly string[],
  options: { allowLiteralSecrets: boolean; cache: ManifestCache },
): Promise<ManifestDirResult | undefined> {
  const root = resolve(dir);
  const environment = compileEnvironment({ allowLiteralSecrets: options.allowLiteralSecrets });
  const files: Array<ManifestBytes & { result?: ManifestResult }> = [];
  for (const path of [...paths].sort(byPath)) {
    if (!MANIFEST_NAME.test(path) || path.split('/').some((part) => part.startsWith('.'))) return undefined;
    const outcome = readManifestFile({ path, absolute: join(root, ...path.split('/')) });
    if (!('bytes' in outcome)) return undefined;
    const cached = options.cache.get(path, outcome.bytes, environment.parseOptions);
    files.push({ file: path, bytes: outcome.bytes, ...(cached ? { result: cached } : {}) });
  }
  const pending = files.filter((file) => !file.result);
  const compiled = await compileFiles(pending, environment.parseOptions);
  pending.forEach((file, index) => (file.result = compiled[index]!));
  // A file that fails to compile is loaded with the whole directory, which then decides it: the cache keeps the good ones only.
  if (files.some((file) => file.result!.diagnostics.some((d) => d.severity === 'error'))) return undefined;
  for (const file of pending) options.cache.set(file.file, file.bytes, environment.parseOptions, file.result!);
  const results: FileResult[] = files.map((file) => ({
    file: file.file,
    ...withPatches(environment, file, file.result!),
  }));
  const combined = combineManifests(environment, results, files.length, 0);
  return {
    ...combined,
    diagnostics: sortDiagnostics(combined.diagnostics),
    files: files.map((f) => f.file),
    contentId: options.cache.contentId(),
  };
}
