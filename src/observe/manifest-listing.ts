// Lists the manifest files under a directory: walks it, follows the links that stay inside, and words what it skips.
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type { Diagnostic, Severity } from '../core/diagnostics.js';
import { UsageError } from '../core/errors.js';
import type { UnseenFile } from '../core/declared-files.js';
import { unseenFolder, unseenLink, type ManifestFile, type UnseenPath } from './read-manifest-file.js';

export interface ManifestListing {
  files: ManifestFile[];
  /** Skipped links and unreadable folders. */
  diagnostics: Diagnostic[];
  /** Manifest names that are no file to read: a link whose target does not exist or that loops, a directory. */
  unread: UnseenFile[];
}

export const MANIFEST_NAME = /\.ya?ml$/i;

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

export function byPath(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The manifest directory itself must exist and be a directory: anything else is a usage mistake. */
async function checkRoot(dir: string): Promise<string> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory())
      throw new UsageError(`${dir} is not a directory; give the folder that holds the manifests`);
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

/** One walk of a directory: where it started, what it found so far, and the folders it has read. */
interface Walk extends ManifestListing {
  root: string;
  rootReal: string;
  what: string;
  /** Told the count of manifest files found so far, after each one (src/observe/listing-ahead.ts). */
  onFound: ((count: number) => void) | undefined;
  visited: Set<string>;
}

/**
 * Lists manifest files, sorted, recursively. Hidden names (starting with ".") are skipped; symbolic links
 * whose target resolves inside the directory are followed (so Kubernetes ConfigMap mounts, whose visible files link
 * into ..data, work), one whose target resolves outside it is a warning and not followed (reads stay in the tree),
 * and a link back into a folder already walked is reported once and skipped, never followed in circles.
 * `what` names the directory in those warnings ("the manifest directory", "the overlay directory").
 */
export async function listManifestFiles(
  dir: string,
  what = 'the manifest directory',
  onFound?: (count: number) => void,
): Promise<ManifestListing> {
  const rootReal = await checkRoot(dir);
  const walk: Walk = {
    root: resolve(dir),
    rootReal,
    what,
    onFound,
    files: [],
    diagnostics: [],
    unread: [],
    visited: new Set([rootReal]),
  };
  await walkFolder(walk, walk.root);
  const { files, diagnostics, unread } = walk;
  files.sort((a, b) => byPath(a.path, b.path));
  unread.sort((a, b) => byPath(a.file, b.file));
  return { files, diagnostics, unread };
}

/** A path that is no manifest to read: its warning, and its entry for prune. */
function found(walk: Walk, entry: UnseenPath): void {
  walk.diagnostics.push(entry.diagnostic);
  walk.unread.push(entry.unread);
}

/** Reads one folder's entries, lists its manifest files, walks its folders (a folder that cannot be read is told). */
async function walkFolder(walk: Walk, folder: string): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (error) {
    const code = errnoCode(error);
    const rel = relativePath(walk.root, folder);
    if (code === 'ENOENT')
      walk.diagnostics.push(note(rel, 'E_FILE_VANISHED', 'folder disappeared while being read; skipped', 'warning'));
    else
      walk.diagnostics.push(
        note(rel, 'E_FILE_READ', `folder cannot be read (${code}); its manifests are not loaded`, 'error'),
      );
    return;
  }
  for (const entry of entries.sort(byName)) {
    if (entry.name.startsWith('.')) continue;
    const absolute = join(folder, entry.name);
    const rel = relativePath(walk.root, absolute);
    const isDirectory = entry.isDirectory();
    // Anything else named like a manifest (a FIFO, a device) is listed, and refused when read.
    const type = entry.isSymbolicLink()
      ? await followLink(walk, entry, absolute, rel)
      : { isDirectory, isFile: !isDirectory };
    if (!type) continue;
    if (type.isDirectory) await enterFolder(walk, entry, absolute, rel);
    else if (type.isFile && MANIFEST_NAME.test(entry.name)) {
      walk.files.push({ path: rel, absolute, ...(entry.isSymbolicLink() ? { link: true } : {}) });
      walk.onFound?.(walk.files.length);
    }
  }
}

/** What a symbolic link leads to, or undefined when it is not followed (outside the directory, dangling, a loop). */
async function followLink(
  walk: Walk,
  entry: Dirent,
  absolute: string,
  rel: string,
): Promise<{ isDirectory: boolean; isFile: boolean } | undefined> {
  try {
    const target = await stat(absolute);
    const isDirectory = target.isDirectory();
    const real = await realpath(absolute);
    if (!inside(real, walk.rootReal)) {
      if (isDirectory || MANIFEST_NAME.test(entry.name))
        walk.diagnostics.push(note(rel, 'W_LINK_OUTSIDE', outsideMessage(real, walk.what), 'warning'));
      return undefined;
    }
    return { isDirectory, isFile: !isDirectory };
  } catch (error) {
    const code = errnoCode(error);
    // A manifest's name that leads nowhere is unknown, never absent: what it declared before is not deleted.
    if (MANIFEST_NAME.test(entry.name)) found(walk, unseenLink(rel, code));
    else if (code === 'ELOOP')
      walk.diagnostics.push(
        note(rel, 'E_SYMLINK_LOOP', 'symbolic link loop (the link resolves to itself); skipped', 'warning'),
      );
    return undefined;
  }
}

/** Walks a folder not read yet; a second way into one already read is told once and skipped. */
async function enterFolder(walk: Walk, entry: Dirent, absolute: string, rel: string): Promise<void> {
  if (MANIFEST_NAME.test(entry.name)) found(walk, unseenFolder(rel));
  let real: string;
  try {
    real = await realpath(absolute);
  } catch {
    return;
  }
  if (walk.visited.has(real)) {
    const seen = relativePath(walk.rootReal, real);
    const where = seen.startsWith('..') ? real : seen;
    walk.diagnostics.push(
      note(
        rel,
        'E_SYMLINK_LOOP',
        `leads to ${where}, a folder already read (a symbolic link loop or a second link to it); skipped`,
        'warning',
      ),
    );
    return;
  }
  walk.visited.add(real);
  await walkFolder(walk, absolute);
}

/** The warning for a symbolic link not followed because its target lies outside the directory read. */
function outsideMessage(real: string, what: string): string {
  return `symbolic link to ${real}, outside ${what}: not followed, nothing declared there is planned; copy the files into ${what}, or give that folder itself`;
}
