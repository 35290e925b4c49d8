// Reads every *.yaml/*.yml under a manifest directory (the I/O half of loading): walks, reads, parses, collects.
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { sortDiagnostics, type Diagnostic, type Severity } from '../core/diagnostics.js';
import { ContentHasher } from '../core/manifest-version.js';
import { UsageError } from '../core/errors.js';
import type { FileResult } from '../core/manifest/collect.js';
import { combineManifests, compileEnvironment, withPatches, type CompiledEnvironment, type ManifestBytes } from '../core/manifest/compile.js';
import type { OverlayInput } from '../core/manifest/environment.js';
import type { ManifestResult, ParseOptions } from '../core/manifest/parse.js';
import { variablesId } from '../core/manifest/variables.js';
import { CompilePool, compileFiles, POOL_MIN_FILES, type OnCompiled } from './compile-pool.js';
import type { UnseenFile } from '../core/declared-files.js';
import { readInputFile, readManifestFile, unseenFolder, unseenLink, type ManifestFile, type UnseenPath } from './read-manifest-file.js';
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
}

/**
 * What each manifest file parsed to, by path, reused while the file's bytes and the parse options are the same.
 * A long-lived process (the daemon) keeps one per directory: a reload after one edit parses one file, not all.
 * The results are shared between loads, so nothing may change them (nothing does: plans and jobs copy).
 */
export class ManifestCache {
  private readonly entries = new Map<string, { bytes: Uint8Array; options: string; result: ManifestResult }>();

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
  }

  /**
   * The content id of the files held (ContentHasher over their sorted paths and bytes): after a load of the whole
   * directory without an environment, and the loads of single files since, the same as that directory's read now.
   */
  contentId(): string {
    const content = new ContentHasher();
    for (const path of [...this.entries.keys()].sort(byPath)) content.add(path, this.entries.get(path)!.bytes);
    return content.id();
  }

  /** Forgets every file not in `paths` (deleted, renamed away, or now unreadable). */
  retain(paths: ReadonlySet<string>): void {
    for (const path of this.entries.keys()) if (!paths.has(path)) this.entries.delete(path);
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

export interface ManifestListing {
  files: ManifestFile[];
  /** Skipped links and unreadable folders. */
  diagnostics: Diagnostic[];
  /** Manifest names that are no file to read: a symbolic link whose target does not exist or that loops, a directory. */
  unread: UnseenFile[];
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

const MANIFEST_NAME = /\.ya?ml$/i;

function errnoCode(error: unknown): string {
  return (error as NodeJS.ErrnoException)?.code ?? 'error';
}

function relativePath(root: string, absolute: string): string {
  const rel = relative(root, absolute);
  return (rel === '' ? '.' : rel).split(sep).join('/');
}

function note(file: string, code: string, message: string, severity: Severity): Diagnostic {
  return { severity, file, line: 1, column: 1, code, message };
}

function byName(a: Dirent, b: Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function byPath(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The manifest directory itself must exist and be a directory: anything else is a usage mistake. */
async function checkRoot(dir: string): Promise<string> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new UsageError(`${dir} is not a directory; give the folder that holds the manifests`);
    return await realpath(dir);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = errnoCode(error);
    if (code === 'ENOENT') throw new UsageError(`manifest directory ${dir} does not exist`);
    throw new UsageError(`manifest directory ${dir} cannot be read (${code})`, { cause: error });
  }
}

/** Whether the real path `path` is `root` or inside it. */
function inside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Lists manifest files, sorted, recursively. Hidden names (starting with ".") are skipped; symbolic links
 * whose target resolves inside the directory are followed (so Kubernetes ConfigMap mounts, whose visible files link
 * into ..data, work), one whose target resolves outside it is a warning and not followed (reads stay in the tree),
 * and a link back into a folder already walked is reported once and skipped, never followed in circles.
 * `what` names the directory in those warnings ("the manifest directory", "the overlay directory").
 */
export async function listManifestFiles(dir: string, what = 'the manifest directory'): Promise<ManifestListing> {
  const rootReal = await checkRoot(dir);
  const root = resolve(dir);
  const files: ManifestFile[] = [];
  const diagnostics: Diagnostic[] = [];
  const unread: UnseenFile[] = [];
  const found = (entry: UnseenPath): void => {
    diagnostics.push(entry.diagnostic);
    unread.push(entry.unread);
  };
  const visited = new Set<string>([rootReal]);

  async function walk(folder: string): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (error) {
      const code = errnoCode(error);
      const rel = relativePath(root, folder);
      if (code === 'ENOENT') diagnostics.push(note(rel, 'E_FILE_VANISHED', 'folder disappeared while being read; skipped', 'warning'));
      else diagnostics.push(note(rel, 'E_FILE_READ', `folder cannot be read (${code}); its manifests are not loaded`, 'error'));
      return;
    }
    for (const entry of entries.sort(byName)) {
      if (entry.name.startsWith('.')) continue;
      const absolute = join(folder, entry.name);
      const rel = relativePath(root, absolute);
      let isDirectory = entry.isDirectory();
      // Anything else named like a manifest (a FIFO, a device) is listed, and refused when read.
      let isFile = !isDirectory && !entry.isSymbolicLink();
      if (entry.isSymbolicLink()) {
        try {
          const target = await stat(absolute);
          isDirectory = target.isDirectory();
          isFile = !isDirectory;
          const real = await realpath(absolute);
          if (!inside(real, rootReal)) {
            if (isDirectory || MANIFEST_NAME.test(entry.name)) diagnostics.push(note(rel, 'W_LINK_OUTSIDE', outsideMessage(real, what), 'warning'));
            continue;
          }
        } catch (error) {
          const code = errnoCode(error);
          // A manifest's name that leads nowhere is unknown, never absent: what it declared before is not deleted.
          if (MANIFEST_NAME.test(entry.name)) found(unseenLink(rel, code));
          else if (code === 'ELOOP') diagnostics.push(note(rel, 'E_SYMLINK_LOOP', 'symbolic link loop (the link resolves to itself); skipped', 'warning'));
          continue;
        }
      }
      if (isDirectory) {
        if (MANIFEST_NAME.test(entry.name)) found(unseenFolder(rel));
        let real: string;
        try {
          real = await realpath(absolute);
        } catch {
          continue;
        }
        if (visited.has(real)) {
          const seen = relativePath(rootReal, real);
          const where = seen.startsWith('..') ? real : seen;
          diagnostics.push(note(rel, 'E_SYMLINK_LOOP', `leads to ${where}, a folder already read (a symbolic link loop or a second link to it); skipped`, 'warning'));
          continue;
        }
        visited.add(real);
        await walk(absolute);
      } else if (isFile && MANIFEST_NAME.test(entry.name)) {
        files.push({ path: rel, absolute, ...(entry.isSymbolicLink() ? { link: true } : {}) });
      }
    }
  }

  await walk(root);
  files.sort((a, b) => byPath(a.path, b.path));
  unread.sort((a, b) => byPath(a.file, b.file));
  return { files, diagnostics, unread };
}

/** The warning for a symbolic link not followed because its target lies outside the directory read. */
function outsideMessage(real: string, what: string): string {
  return `symbolic link to ${real}, outside ${what}: not followed, nothing declared there is planned; copy the files into ${what}, or give that folder itself`;
}

/** Reading and parsing yield to the event loop after about this long, so requests in flight are answered meanwhile. */
const YIELD_EVERY_MS = 5;

/**
 * Reads the files of one overlay directory after another (a missing one is a usage mistake, like a missing manifest
 * directory); a file or folder that cannot be read is an unread input, its diagnostic told here.
 */
async function readOverlays(environment: Environment | undefined, diagnostics: Diagnostic[], hashed: HashedInput[]): Promise<OverlayInput[]> {
  const inputs: OverlayInput[] = [];
  for (const [index, overlay] of (environment?.overlays ?? []).entries()) {
    const listing = await listManifestFiles(overlay.path, 'the overlay directory').catch((error: unknown) => {
      if (error instanceof UsageError) throw new UsageError(`overlay ${overlay.given ?? overlay.label}: ${error.message.replace('manifest directory', 'directory')} (--overlay, setting overlays)`);
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
export async function readManifestFiles(listing: ManifestListing, options: LoadOptions): Promise<ManifestDirResult> {
  const extra: Diagnostic[] = [...listing.diagnostics];
  const vars = options.environment ? readVariableFiles(options.environment.vars) : undefined;
  const hashed: HashedInput[] = [...(vars?.hashed ?? [])];
  extra.push(...(vars?.diagnostics ?? []));
  const overlays = await readOverlays(options.environment, extra, hashed);
  const environment = compileEnvironment({ allowLiteralSecrets: options.allowLiteralSecrets, ...(options.keepData ? { keepData: true } : {}), ...(options.createWarnings ? { createWarnings: true } : {}), ...(vars ? { vars: vars.files } : {}), ...(overlays.length > 0 ? { overlays } : {}) });
  const cache = options.keepData ? undefined : options.cache;
  // Many files and none cached: the pool's threads start now, and load while the files are read.
  const pool = listing.files.length >= POOL_MIN_FILES && !cache?.size ? CompilePool.start(environment.parseOptions) : undefined;
  try {
    return await readAndCompile(listing, environment, { cache, pool, extra, hashed, onCompiled: options.onCompiled });
  } finally {
    await pool?.close();
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
async function readAndCompile(listing: ManifestListing, environment: CompiledEnvironment, { cache, pool, extra, hashed, onCompiled }: ReadState): Promise<ManifestDirResult> {
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
    if (!file.result.diagnostics.some((d) => d.code === 'E_COMPILE')) cache?.set(file.file, file.bytes, environment.parseOptions, file.result);
  });
  const results: FileResult[] = files.map((file) => ({ file: file.file, ...withPatches(environment, file, file.result!) }));
  cache?.retain(new Set(results.map((result) => result.file)));
  for (const input of hashed) content.add(input.name, input.bytes);
  const compiledAll = combineManifests(environment, results, read.length, refused);
  const result: ManifestDirResult = { ...compiledAll, diagnostics: sortDiagnostics([...compiledAll.diagnostics, ...extra]), files: read, contentId: content.id() };
  if (unread.length > 0) result.unread = unread.sort((a, b) => byPath(a.file, b.file));
  return result;
}

/** Loads a manifest directory: every manifest, every problem as a diagnostic. Throws UsageError if `dir` is not a directory. */
export async function loadManifestDir(dir: string, options: LoadOptions): Promise<ManifestDirResult> {
  return readManifestFiles(await listManifestFiles(dir), options);
}

/**
 * Reads and compiles only `paths` (relative to `dir`, no environment) through `cache`, whose other entries stay: the
 * load of a targeted reconcile (src/daemon/cycle/targeted.ts). Undefined when one of them is not a manifest file that
 * reads (gone, a folder, a link, refused): the whole directory is loaded instead. Combined among themselves only, so
 * the caller checks their names against the other files'; the content id is the whole directory's, from the cache.
 */
export async function loadChangedManifests(dir: string, paths: readonly string[], options: { allowLiteralSecrets: boolean; cache: ManifestCache }): Promise<ManifestDirResult | undefined> {
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
  const compiled = await compileFiles(pending, environment.parseOptions, undefined);
  pending.forEach((file, index) => (file.result = compiled[index]!));
  // A file that fails to compile is loaded with the whole directory, which then decides it: the cache keeps the good ones only.
  if (files.some((file) => file.result!.diagnostics.some((d) => d.severity === 'error'))) return undefined;
  for (const file of pending) options.cache.set(file.file, file.bytes, environment.parseOptions, file.result!);
  const results: FileResult[] = files.map((file) => ({ file: file.file, ...withPatches(environment, file, file.result!) }));
  const combined = combineManifests(environment, results, files.length, 0);
  return { ...combined, diagnostics: sortDiagnostics(combined.diagnostics), files: files.map((f) => f.file), contentId: options.cache.contentId() };
}
