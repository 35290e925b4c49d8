// Watches the manifest directory (chokidar) and turns each burst of changes into ONE debounced reconcile trigger.
import { watch as fsWatch, type FSWatcher as NodeFsWatcher } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { watch as chokidarWatch, type FSWatcher } from 'chokidar';
import { createLinkGuard, createTreeFilter, mountPointsWithin } from './tree-filter.js';

/** One burst of file-system activity, reported once its quiet time has passed. */
export interface WatchBurst {
  /** Relevant events seen in the burst. */
  events: number;
  /** Up to MAX_SAMPLE paths (relative to the directory, forward slashes), for logs. */
  sample: string[];
  /**
   * Every distinct path of the burst (relative, forward slashes), up to MAX_PATHS: what a targeted reconcile reads
   * (docs/daemon.md). Beyond that the burst overflows: `paths` stops growing and the change is reconciled in full.
   */
  paths: string[];
  overflow: boolean;
  /** Epoch ms of the first and last event of the burst. */
  firstAt: number;
  lastAt: number;
}

export interface WatchOptions {
  dir: string;
  /** Quiet time after the last event before the burst is reported. */
  debounceMs: number;
  /** A burst that never goes quiet is reported after this long anyway (default max(5 s, 20 x debounce)). */
  maxWaitMs?: number;
  onBurst: (burst: WatchBurst) => void;
  onError?: (error: Error) => void;
  /**
   * A symbolic link that is not followed: it leads out of the tree (the loader does not read there either), or into
   * a folder already watched (the tree itself or a folder in it). Told once per link and target; the loader reports
   * both as manifest warnings, so this is for debug logs.
   */
  onSkippedLink?: (link: string, target: string) => void;
}

export interface ManifestWatcher {
  /** Stops watching; a pending burst is dropped. */
  close(): Promise<void>;
  /** Paths chokidar watches now (tests, debugging). */
  watchedCount(): number;
  /**
   * Resolves once no burst is pending: at once when the directory is quiet, else right after the burst in progress
   * has been reported (its quiet time passed, or the ceiling). A resync waits for it, so it never reads the
   * directory in the middle of an edit burst.
   */
  quiet(): Promise<void>;
}

const MAX_SAMPLE = 5;
/** The paths a burst keeps: far more than a targeted reconcile takes (src/daemon/reconcile/watch-scope.ts), so an overflow is always a full one. */
export const MAX_PATHS = 1_000;

/** Editor scratch files that never hold a manifest (vim swap and probe files, emacs locks and backups). */
const SCRATCH = [/\.sw[a-p]$/i, /\.swx$/i, /~$/, /^\.#/, /^#.*#$/, /^4913$/];

/**
 * Whether an event on `rel` (relative to the manifest directory) can change what the loader reads.
 * Yes: *.yaml/*.yml, paths with no extension (directories, a swapped `current` symlink), and anything under a
 * `..name` entry (Kubernetes' atomic writer: `..data -> ..2026_01_01_...`, renamed into place). No: hidden
 * paths (`.git/...`, `.file.yaml`: the loader skips them), other extensions, editor scratch files.
 */
export function isRelevantPath(rel: string): boolean {
  if (rel === '' || rel === '.') return true;
  const parts = rel.split(/[\\/]+/).filter((p) => p.length > 0);
  if (parts.some((p) => p.startsWith('..'))) return true;
  if (parts.some((p) => p.startsWith('.'))) return false;
  const name = parts[parts.length - 1] ?? '';
  if (SCRATCH.some((re) => re.test(name))) return false;
  if (/\.ya?ml$/i.test(name)) return true;
  return !name.includes('.');
}

/**
 * Trailing-edge debounce with a ceiling: fire() runs `quietMs` after the last poke, or `maxWaitMs` after the
 * first poke of a burst that never goes quiet. One fire() per burst.
 */
export function createDebouncer(quietMs: number, maxWaitMs: number, fire: (burst: WatchBurst) => void) {
  let timer: NodeJS.Timeout | undefined;
  let burst: WatchBurst | undefined;
  const seen = new Set<string>();
  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const done = burst;
    burst = undefined;
    seen.clear();
    if (done) fire(done);
  }
  return {
    poke(path: string, now: number = Date.now()): void {
      if (!burst) burst = { events: 0, sample: [], paths: [], overflow: false, firstAt: now, lastAt: now };
      burst.events++;
      burst.lastAt = now;
      if (burst.sample.length < MAX_SAMPLE && !burst.sample.includes(path)) burst.sample.push(path);
      if (!burst.overflow && !seen.has(path)) {
        seen.add(path);
        if (burst.paths.length < MAX_PATHS) burst.paths.push(path);
        else burst.overflow = true;
      }
      if (timer) clearTimeout(timer);
      const wait = Math.max(0, Math.min(quietMs, burst.firstAt + maxWaitMs - now));
      timer = setTimeout(flush, wait);
    },
    cancel(): void {
      if (timer) clearTimeout(timer);
      timer = undefined;
      burst = undefined;
      seen.clear();
    },
    /** Whether a burst has begun and not been fired yet. */
    pending(): boolean {
      return burst !== undefined;
    },
  };
}

function toRel(dir: string, path: string): string {
  const rel = relative(dir, path);
  if (rel.startsWith('..' + sep) || rel === '..' || isAbsolute(rel)) return basename(path);
  return rel.split(sep).join('/');
}

async function isLink(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSymbolicLink();
  } catch {
    return false;
  }
}

async function realpathOrNull(path: string): Promise<string | null> {
  try {
    return await realpath(path);
  } catch {
    return null;
  }
}

/**
 * The recursive watch of `dir`, whose real path is `real`: one `fs.watch` a folder (and one a followed link to a file),
 * none for a regular file (createTreeFilter, src/daemon/watch/tree-filter.ts, says what is left out). chokidar's events
 * and its raw fs events go to `onPath`: a folder's raw events name each child that changed (a write in place, a
 * rename over it, a delete), and are the only events of a regular file. Resolves once chokidar is ready.
 */
async function watchTree(
  dir: string,
  real: string,
  onPath: (path: string) => void,
  options: Pick<WatchOptions, 'onSkippedLink'>,
  onError: (error: Error) => void,
): Promise<FSWatcher> {
  const guard = createLinkGuard(real, (link, target) => options.onSkippedLink?.(toRel(dir, link), target));
  const watcher = chokidarWatch(dir, {
    ignoreInitial: true,
    followSymlinks: true,
    persistent: true,
    ignored: createTreeFilter({ dir, real, guard, mountPoints: mountPointsWithin(real) }),
  });
  watcher.on('all', (_event, path) => onPath(path));
  watcher.on('raw', (_event, evPath, details) => {
    const watchedPath = (details as { watchedPath?: string } | undefined)?.watchedPath;
    if (!watchedPath) return;
    const name = typeof evPath === 'string' ? evPath : '';
    const full = !name || basename(watchedPath) === name ? watchedPath : join(watchedPath, name);
    onPath(full);
  });
  watcher.on('error', (error) => onError(error as Error));
  await new Promise<void>((ready) => watcher.once('ready', () => ready()));
  return watcher;
}

/**
 * Entry watches: plain inotify watches of a parent directory filtered to one name, for the manifest directory
 * itself and for every symbolic link on its path (git-sync's `current` above a `deploy/` subfolder). Brings
 * `entries` up to date: watches a path newly wanted, closes the watch of one no longer on the path.
 */
async function watchEntries(
  dir: string,
  entries: Map<string, NodeFsWatcher>,
  closed: () => boolean,
  poke: (rel: string) => void,
  onError: (error: Error) => void,
): Promise<void> {
  const wanted = new Set<string>([dir]);
  for (let path = dirname(dir); path !== dirname(path); path = dirname(path)) {
    if (await isLink(path)) wanted.add(path);
  }
  for (const [path, watcher] of entries) {
    if (!wanted.has(path)) {
      watcher.close();
      entries.delete(path);
    }
  }
  for (const path of wanted) {
    if (entries.has(path) || closed()) continue;
    try {
      const watcher = fsWatch(dirname(path), { persistent: true }, (_event, name) => {
        if (name === null || name === basename(path)) poke(path === dir ? '.' : toRel(dir, path));
      });
      watcher.on('error', (error) => onError(error));
      entries.set(path, watcher);
    } catch (error) {
      // A parent that does not exist (yet) cannot be watched; the nearest existing one is covered by its own entry.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') onError(error as Error);
    }
  }
}

/**
 * Watches `dir` recursively, never following a symbolic link out of the tree nor into a folder watched already (see
 * createLinkGuard, src/daemon/watch/tree-filter.ts). Besides chokidar's events it listens to raw fs events, so a
 * change of a regular file (reported by its folder's watch) and an atomic rename over an existing name (`..data`, an
 * editor's save) always count. The parent directory is
 * watched too, so a `dir` that is itself a swapped symlink (git-sync's `--link`), or that appears later, is
 * picked up: the recursive watch is restarted whenever the directory's real path changes.
 */
export async function watchManifestDir(options: WatchOptions): Promise<ManifestWatcher> {
  const dir = resolve(options.dir);
  const maxWait = options.maxWaitMs ?? Math.max(5_000, options.debounceMs * 20);
  const onError = options.onError ?? (() => undefined);
  let closed = false;
  let inner: FSWatcher | undefined;
  let innerReal: string | null = null;
  let restarting: Promise<void> = Promise.resolve();

  /** Bursts fired whose report has not been made yet (the watch is re-pointed first). */
  let reporting = 0;
  const quietWaiters: Array<() => void> = [];
  function releaseQuiet(force = false): void {
    if (!force && (reporting > 0 || debouncer.pending())) return;
    for (const resolveQuiet of quietWaiters.splice(0)) resolveQuiet();
  }
  const debouncer = createDebouncer(options.debounceMs, maxWait, (burst) => {
    reporting += 1;
    // Re-point the recursive watch first when the directory was swapped, then report the burst.
    restarting = restarting
      .then(ensureInner)
      .catch((error: Error) => onError(error))
      .then(() => {
        reporting -= 1;
        if (!closed) options.onBurst(burst);
        releaseQuiet();
      });
  });

  function relevant(path: string): void {
    if (closed) return;
    const rel = toRel(dir, path);
    if (isRelevantPath(rel)) debouncer.poke(rel);
  }

  async function ensureInner(): Promise<void> {
    if (closed) return;
    await watchEntries(
      dir,
      entries,
      () => closed,
      (rel) => debouncer.poke(rel),
      onError,
    );
    const real = await realpathOrNull(dir);
    if (inner && real === innerReal) return;
    const old = inner;
    inner = undefined;
    innerReal = null;
    if (old) await old.close();
    if (!real || closed) return;
    inner = await watchTree(dir, real, relevant, options, onError);
    innerReal = real;
  }

  // Entry watches: the manifest directory itself and every symbolic link on its path (see watchEntries).
  const entries = new Map<string, NodeFsWatcher>();

  await ensureInner();

  return {
    async close() {
      closed = true;
      debouncer.cancel();
      releaseQuiet(true);
      for (const watcher of entries.values()) watcher.close();
      entries.clear();
      await restarting.catch(() => undefined);
      await inner?.close();
      inner = undefined;
    },
    quiet() {
      if (closed || (reporting === 0 && !debouncer.pending())) return Promise.resolve();
      return new Promise<void>((resolveQuiet) => quietWaiters.push(resolveQuiet));
    },
    watchedCount() {
      if (!inner) return 0;
      return Object.values(inner.getWatched()).reduce((n, items) => n + items.length, 0);
    },
  };
}
