// Which manifest file declares each resource, and which files of the tree declare nothing (pure): what prune needs to tell an emptied file from a removed one.
import type { Diagnostic } from './diagnostics.js';
import { EMPTY_FILE_CODE } from './manifest/compile.js';
import { resourceKey, type DesiredResource } from './model.js';

/** resourceKey -> the manifest file (relative path) that declares it. */
export function declaringFiles(resources: Iterable<DesiredResource>): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of resources) out.set(resourceKey(r.kind, r.name), r.location.file);
  return out;
}

/** The manifest files present that declare nothing (each has a W_EMPTY_FILE warning), sorted. */
export function emptyFiles(diagnostics: readonly Diagnostic[]): string[] {
  return [...new Set(diagnostics.filter((d) => d.code === EMPTY_FILE_CODE).map((d) => d.file))].sort();
}

/**
 * The empty files that may have declared a resource converge applied, given the file its record names (undefined: not
 * known): that file when it is empty now, every empty file when the record names none (converge cannot tell which),
 * else none. A resource with any is unknown to prune, never absent.
 */
export function emptiedFilesOf(file: string | undefined, empty: readonly string[]): string[] {
  if (empty.length === 0) return [];
  if (file === undefined) return [...empty];
  return empty.includes(file) ? [file] : [];
}
