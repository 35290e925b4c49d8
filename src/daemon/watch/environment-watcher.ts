// Watches everything a load reads: the manifest directory, each overlay directory, and each variables file (chokidar).
import { basename, dirname, resolve } from 'node:path';
import { watch as chokidarWatch, type FSWatcher } from 'chokidar';
import type { Environment } from '../../observe/environment.js';
import { createDebouncer, watchManifestDir, type ManifestWatcher, type WatchOptions } from './watcher.js';

interface EnvironmentWatchOptions extends WatchOptions {
  environment?: Environment | undefined;
}

/**
 * Watches the folders holding the variables files, one level deep, for events on those files' names (an editor's
 * save, a rename into place) or on a `..name` entry (Kubernetes' atomic writer swaps `..data` under a mounted file).
 */
async function watchVariablesFiles(paths: readonly string[], options: WatchOptions): Promise<ManifestWatcher> {
  const maxWait = options.maxWaitMs ?? Math.max(5_000, options.debounceMs * 20);
  const quietWaiters: Array<() => void> = [];
  const debouncer = createDebouncer(options.debounceMs, maxWait, (burst) => {
    options.onBurst(burst);
    for (const release of quietWaiters.splice(0)) release();
  });
  const byFolder = new Map<string, Set<string>>();
  for (const path of paths.map((p) => resolve(p))) {
    const names = byFolder.get(dirname(path)) ?? new Set<string>();
    names.add(basename(path));
    byFolder.set(dirname(path), names);
  }
  const watchers: FSWatcher[] = [];
  for (const [folder, names] of byFolder) {
    const relevant = (path: string): boolean => {
      const name = basename(path);
      return path === folder || names.has(name) || name.startsWith('..');
    };
    const watcher = chokidarWatch(folder, {
      ignoreInitial: true,
      depth: 0,
      persistent: true,
      ignored: (path: string) => !relevant(path),
    });
    watcher.on('all', (_event, path) => {
      if (path !== folder) debouncer.poke(basename(path));
    });
    watcher.on('error', (error) => options.onError?.(error as Error));
    await new Promise<void>((ready) => watcher.once('ready', () => ready()));
    watchers.push(watcher);
  }
  return {
    async close() {
      debouncer.cancel();
      for (const release of quietWaiters.splice(0)) release();
      await Promise.all(watchers.map((w) => w.close()));
    },
    quiet() {
      if (!debouncer.pending()) return Promise.resolve();
      return new Promise<void>((release) => quietWaiters.push(release));
    },
    watchedCount() {
      return watchers.reduce((n, w) => n + Object.values(w.getWatched()).reduce((m, items) => m + items.length, 0), 0);
    },
  };
}

/** One watcher over the manifest directory and an environment's overlays and variables files: any change is a burst. */
export async function watchEnvironment(options: EnvironmentWatchOptions): Promise<ManifestWatcher> {
  const { environment, ...base } = options;
  const watchers: ManifestWatcher[] = [await watchManifestDir(base)];
  try {
    for (const overlay of environment?.overlays ?? [])
      watchers.push(await watchManifestDir({ ...base, dir: overlay.path }));
    if (environment && environment.vars.length > 0)
      watchers.push(
        await watchVariablesFiles(
          environment.vars.map((v) => v.path),
          base,
        ),
      );
  } catch (error) {
    await Promise.all(watchers.map((w) => w.close()));
    throw error;
  }
  if (watchers.length === 1) return watchers[0]!;
  return {
    async close() {
      await Promise.all(watchers.map((w) => w.close()));
    },
    async quiet() {
      await Promise.all(watchers.map((w) => w.quiet()));
    },
    watchedCount() {
      return watchers.reduce((n, w) => n + w.watchedCount(), 0);
    },
  };
}
