// Which manifest file declares each resource, and which files of the tree are present but show nothing (pure): what prune needs to tell an emptied or unreadable file from a removed one.
import type { Diagnostic } from './diagnostics.js';
import { EMPTY_FILE_CODE } from './manifest/compile.js';
import { resourceKey, type DesiredResource } from './model.js';

/**
 * A manifest path that is present but whose content converge cannot see: a file that declares nothing (empty, or only
 * comments), or one that could not be read (a symbolic link whose target does not exist, a directory, a FIFO, a file
 * that cannot be opened). What it declared before is unknown, never absent (docs/adopting-and-pruning.md).
 */
export interface UnseenFile {
  /** Path relative to the manifest directory. */
  file: string;
  /** What converge found there, after the path: "declares nothing", "is a directory", ... */
  what: string;
  /** What to do, for the person who reads the reason: restore it, or delete it to remove its resources. */
  fix: string;
  /** True for a file that declares nothing (W_EMPTY_FILE); absent for one that could not be read. */
  empty?: true;
}

/** What to do about a file that is present and declares nothing. */
export const EMPTY_FILE_FIX = 'delete the file to remove its resources, or restore its content';

/** resourceKey -> the manifest file (relative path) that declares it. */
export function declaringFiles(resources: Iterable<DesiredResource>): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of resources) out.set(resourceKey(r.kind, r.name), r.location.file);
  return out;
}

/** The manifest files present that declare nothing (each has a W_EMPTY_FILE warning), sorted. */
export function emptyFiles(diagnostics: readonly Diagnostic[]): UnseenFile[] {
  const files = [...new Set(diagnostics.filter((d) => d.code === EMPTY_FILE_CODE).map((d) => d.file))].sort();
  return files.map((file) => ({ file, what: 'declares nothing', fix: EMPTY_FILE_FIX, empty: true }));
}

/** The files converge cannot see, one entry a path, sorted by path (an empty file and an unreadable one never share a path). */
export function unseenFiles(...lists: ReadonlyArray<readonly UnseenFile[]>): UnseenFile[] {
  const byPath = new Map<string, UnseenFile>();
  for (const list of lists) for (const entry of list) if (!byPath.has(entry.file)) byPath.set(entry.file, entry);
  return [...byPath.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/**
 * The unseen files that may have declared a resource converge applied, given the file its record names (undefined:
 * not known): that file when it is unseen now, every unseen file when the record names none (converge cannot tell
 * which), else none. A resource with any is unknown to prune, never absent.
 */
export function unseenFilesOf(file: string | undefined, unseen: readonly UnseenFile[]): UnseenFile[] {
  if (unseen.length === 0) return [];
  if (file === undefined) return [...unseen];
  return unseen.filter((entry) => entry.file === file);
}
