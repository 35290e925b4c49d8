// What `converge validate` reads: one manifest directory, or the manifest files given (as a pre-commit hook passes them).
import { lstatSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { UsageError } from '../core/errors.js';
import { loadManifestDir, readManifestFiles, type LoadOptions, type ManifestDirResult } from '../observe/manifests.js';
import { normalizedPath, shownFrom, type ShownPath } from './paths.js';

/** The files validate reads and how its text names them. */
export interface ValidateInput {
  /** The manifest directory (absolute) when one was given, else undefined: the files given, named as given. */
  dir?: string;
  /** Names a loaded file's path as the text output shows it (from the working directory). */
  shown: ShownPath;
  load(options: LoadOptions): Promise<ManifestDirResult>;
}

const MANIFEST_NAME = /\.ya?ml$/i;

/** What a given path is: a directory, a file (or anything else that is not a directory), or nothing. */
function kindOf(path: string): 'directory' | 'file' | 'missing' {
  try {
    return statSync(path).isDirectory() ? 'directory' : 'file';
  } catch {
    // A symbolic link whose target is gone is there, and read (and refused) as a manifest file.
    try {
      lstatSync(path);
      return 'file';
    } catch {
      return 'missing';
    }
  }
}

/**
 * One directory: the whole tree, as plan reads it. Else each argument must be a manifest file (`*.yaml`, `*.yml`): they
 * are read as if they were the whole directory, so a name declared twice among them is an error, and each is named
 * as given (normalized). A directory among files, or two directories, is one line (docs/commands.md, "converge validate").
 */
export function validateInput(
  given: readonly string[],
  cwd: string,
  overlays: readonly string[],
  context?: string,
): ValidateInput {
  const kinds = given.map((path) => kindOf(resolve(cwd, path)));
  if (context !== undefined) return filesInDirectory(given, kinds, cwd, context);
  // One path that is a directory, or missing and not named like a manifest: a directory (a missing one says so).
  if (given.length === 1 && (kinds[0] === 'directory' || (kinds[0] === 'missing' && !MANIFEST_NAME.test(given[0]!)))) {
    const dir = resolve(cwd, given[0]!);
    return { dir, shown: shownFrom(given[0]!), load: (options) => loadManifestDir(dir, options) };
  }
  const folder = given.find((_, i) => kinds[i] === 'directory');
  if (folder !== undefined)
    throw new UsageError(`${folder} is a directory: give one manifest directory, or manifest files, not both`);
  const missing = given.find((_, i) => kinds[i] === 'missing');
  if (missing !== undefined)
    throw new UsageError(`${missing} does not exist; give a manifest directory or manifest files (*.yaml, *.yml)`);
  const other = given.find((path) => !MANIFEST_NAME.test(path));
  if (other !== undefined)
    throw new UsageError(
      `${other} is not a manifest file (*.yaml, *.yml); give only manifest files, or their directory`,
    );
  // Overlays patch resources by name across the whole directory: checked against a few files, every other name would be unknown.
  if (overlays.length > 0)
    throw new UsageError('--overlay needs the whole manifest directory: give the directory instead of files');
  const labels = [...new Set(given.map(normalizedPath))].sort();
  const files = labels.map((label) => ({ path: label, absolute: resolve(cwd, label), link: true }));
  return {
    shown: (file) => file,
    load: (options) => readManifestFiles({ files, diagnostics: [], unread: [] }, options),
  };
}

/**
 * `FILE... --dir DIR`: the files given, checked in their manifest directory's context. The whole directory is read (as
 * plan reads it, overlays included), so a rule that spans it holds (a name another file also declares is E_DUPLICATE);
 * what is reported is the given files' own: their resources, and the diagnostics at them (or at no manifest file of
 * the directory: a variables or overlay file). Text names files from the working directory (DIR as typed plus the
 * path in it), JSON relative to DIR, as for `validate DIR`.
 */
function filesInDirectory(
  given: readonly string[],
  kinds: ReadonlyArray<ReturnType<typeof kindOf>>,
  cwd: string,
  context: string,
): ValidateInput {
  const dir = resolve(cwd, context);
  if (kindOf(dir) !== 'directory')
    throw new UsageError(`--dir ${context} is not a directory; give the manifest directory the files belong to`);
  const wanted = new Set<string>();
  given.forEach((path, i) => {
    if (kinds[i] === 'directory')
      throw new UsageError(`${path} is a directory: with --dir, give manifest files of ${context}`);
    if (kinds[i] === 'missing')
      throw new UsageError(`${path} does not exist; give manifest files (*.yaml, *.yml) of ${context}`);
    if (!MANIFEST_NAME.test(path))
      throw new UsageError(`${path} is not a manifest file (*.yaml, *.yml); give only manifest files of ${context}`);
    const inside = relative(dir, resolve(cwd, path));
    if (inside.startsWith('..') || isAbsolute(inside))
      throw new UsageError(`${path} is not in --dir ${context}; give files of that manifest directory`);
    wanted.add(inside.split(sep).join('/'));
  });
  return {
    dir,
    shown: shownFrom(context),
    load: async (options) => onlyFiles(await loadManifestDir(dir, options), wanted),
  };
}

/** What `result` holds of the files `wanted`: their resources, and the diagnostics at them or at no manifest file of it. */
function onlyFiles(result: ManifestDirResult, wanted: ReadonlySet<string>): ManifestDirResult {
  const manifestFiles = new Set(result.files);
  const at = (file: string): boolean => wanted.has(file) || !manifestFiles.has(file);
  return {
    ...result,
    files: result.files.filter((file) => wanted.has(file)),
    resources: result.resources.filter((r) => wanted.has(r.location.file)),
    blocked: result.blocked.filter((b) => wanted.has(b.location.file)),
    diagnostics: result.diagnostics.filter((d) => at(d.file)),
  };
}
