// Combines per-file results (pure): a kind/name declared twice is reported at every declaration and blocked.
import { sortDiagnostics, type Diagnostic } from '../diagnostics.js';
import {
  formatLocation,
  resourceKey,
  type BlockedResource,
  type DesiredResource,
  type SourceLocation,
} from '../model.js';
import type { ManifestResult } from './parse.js';

/** One file's result, with the file's relative path (results are ordered by it). */
export interface FileResult extends ManifestResult {
  file: string;
}

function compareFiles(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareLocations(a: SourceLocation, b: SourceLocation): number {
  return compareFiles(a.file, b.file) || a.line - b.line || a.column - b.column;
}

/** Merges file results in path order; a name declared more than once blocks every declaration of it. */
export function collectManifests(files: FileResult[]): ManifestResult {
  const ordered = [...files].sort((a, b) => compareFiles(a.file, b.file));
  const declared = new Map<
    string,
    Array<{ location: SourceLocation; resource?: DesiredResource; blocked?: BlockedResource }>
  >();
  for (const file of ordered) {
    for (const resource of file.resources) {
      const key = resourceKey(resource.kind, resource.name);
      declared.set(key, [...(declared.get(key) ?? []), { location: resource.location, resource }]);
    }
    for (const blocked of file.blocked) {
      const key = resourceKey(blocked.kind, blocked.name);
      declared.set(key, [...(declared.get(key) ?? []), { location: blocked.location, blocked }]);
    }
  }
  const resources: DesiredResource[] = [];
  const blocked: BlockedResource[] = [];
  const diagnostics: Diagnostic[] = ordered.flatMap((f) => f.diagnostics);
  for (const [key, entries] of declared) {
    if (entries.length === 1) {
      const only = entries[0]!;
      if (only.resource) resources.push(only.resource);
      if (only.blocked) blocked.push(only.blocked);
      continue;
    }
    const [kind, ...rest] = key.split('/');
    const name = rest.join('/');
    const places = entries.map((e) => formatLocation(e.location));
    entries.forEach((entry, index) => {
      const others = places.filter((_, i) => i !== index);
      diagnostics.push({
        severity: 'error',
        ...entry.location,
        code: 'E_DUPLICATE',
        message: `${kind} "${name}" is declared ${entries.length} times (also at ${others.join(', ')}); names must be unique across the manifest directory: keep one`,
      });
    });
    // One blocked entry per name (plan pairs by name), located at the first declaration, listing them all.
    blocked.push({
      kind: kind as BlockedResource['kind'],
      name,
      location: entries[0]!.location,
      reason: `${kind} "${name}" is declared ${entries.length} times (${places.join(', ')}); keep one declaration`,
    });
  }
  resources.sort((a, b) => compareLocations(a.location, b.location));
  blocked.sort((a, b) => compareLocations(a.location, b.location));
  return { resources, blocked, diagnostics: sortDiagnostics(diagnostics) };
}
