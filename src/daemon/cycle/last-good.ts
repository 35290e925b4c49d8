// "Last good version stays in force": resources of a manifest file that stopped parsing are held, not changed or orphaned.
import type { Diagnostic } from '../../core/diagnostics.js';
import { resourceKey, type BlockedResource, type DesiredResource, type ResourceKind } from '../../core/model.js';

/** What one load of the manifest directory produced (the loader's result). */
export interface LoadedManifests {
  resources: readonly DesiredResource[];
  blocked: readonly BlockedResource[];
  diagnostics: readonly Diagnostic[];
  /** Relative paths of the manifest files read. */
  files: readonly string[];
}

/** A resource whose file has errors now, with the last version that loaded; kept in force, never applied or orphaned. */
export interface HeldResource {
  key: string;
  kind: ResourceKind;
  name: string;
  file: string;
  /** The file's first error (file:line:column: message). */
  error: string;
  lastGood: DesiredResource;
}

export interface HoldResult {
  /** Blocked entries to add to the plan input for held resources the loader could not name (a file that no longer parses). */
  extraBlocked: BlockedResource[];
  /** Every held resource (named by the loader as blocked, or not named at all). */
  held: HeldResource[];
}

function where(d: Diagnostic): string {
  return `${d.file}:${d.line}:${d.column}: ${d.message}`;
}

/**
 * Remembers, per manifest file, which resources it declared the last time it loaded without errors, and the
 * last valid desired state of each resource. Each load is folded in with observe().
 */
export class LastGoodManifests {
  private readonly lastGood = new Map<string, DesiredResource>();
  private readonly byFile = new Map<string, Set<string>>();

  /** The last valid desired state of a resource, if it ever loaded. */
  get(key: string): DesiredResource | undefined {
    return this.lastGood.get(key);
  }

  observe(loaded: LoadedManifests): HoldResult {
    const firstError = new Map<string, Diagnostic>();
    for (const d of loaded.diagnostics) {
      if (d.severity === 'error' && !firstError.has(d.file)) firstError.set(d.file, d);
    }
    const validByFile = new Map<string, Set<string>>();
    const declared = new Set<string>();
    for (const r of loaded.resources) {
      const key = resourceKey(r.kind, r.name);
      declared.add(key);
      let keys = validByFile.get(r.location.file);
      if (!keys) validByFile.set(r.location.file, (keys = new Set()));
      keys.add(key);
    }
    const blockedKeys = new Map<string, BlockedResource>();
    for (const b of loaded.blocked) {
      const key = resourceKey(b.kind, b.name);
      declared.add(key);
      blockedKeys.set(key, b);
    }

    const extraBlocked: BlockedResource[] = [];
    const held: HeldResource[] = [];
    const heldKeys = new Set<string>();
    for (const [file, error] of firstError) {
      for (const key of this.byFile.get(file) ?? []) {
        const last = this.lastGood.get(key);
        if (!last || validByFile.get(file)?.has(key) || heldKeys.has(key)) continue;
        if (declared.has(key) && !blockedKeys.has(key)) continue; // moved to another file that loads: not held
        heldKeys.add(key);
        const reason = `${where(error)}; the last good version of this resource stays in force until the file is fixed`;
        held.push({ key, kind: last.kind, name: last.name, file, error: where(error), lastGood: last });
        if (!blockedKeys.has(key))
          extraBlocked.push({ kind: last.kind, name: last.name, location: { ...last.location }, reason });
      }
    }

    // Fold this load in: valid resources become the last good ones; a file with errors keeps its old list too.
    for (const r of loaded.resources) this.lastGood.set(resourceKey(r.kind, r.name), r);
    const present = new Set([...loaded.files, ...firstError.keys()]);
    for (const file of [...this.byFile.keys()]) if (!present.has(file)) this.byFile.delete(file);
    for (const file of present) {
      const now = new Set(validByFile.get(file) ?? []);
      if (firstError.has(file)) {
        for (const key of this.byFile.get(file) ?? []) if (heldKeys.has(key)) now.add(key);
        for (const [key, b] of blockedKeys) if (b.location.file === file && this.lastGood.has(key)) now.add(key);
      }
      if (now.size > 0) this.byFile.set(file, now);
      else this.byFile.delete(file);
    }
    const remembered = new Set<string>();
    for (const keys of this.byFile.values()) for (const key of keys) remembered.add(key);
    for (const key of [...this.lastGood.keys()]) if (!remembered.has(key)) this.lastGood.delete(key);
    return { extraBlocked, held };
  }

  /** Folds in a load of some files only, every one without errors (a targeted reconcile): the other files stay as they were. */
  observeValidFiles(files: readonly string[], resources: readonly DesiredResource[]): void {
    for (const file of files) this.byFile.delete(file);
    for (const r of resources) {
      const key = resourceKey(r.kind, r.name);
      this.lastGood.set(key, r);
      const keys = this.byFile.get(r.location.file) ?? new Set<string>();
      this.byFile.set(r.location.file, keys.add(key));
    }
  }
}
