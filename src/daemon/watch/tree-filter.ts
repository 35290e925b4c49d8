// What the manifest directory's recursive watch leaves out of chokidar: hidden paths, links it must not follow, and regular files its folder's watch reports.
import { lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';

/** Whether `path` is `base` or inside it. */
function within(path: string, base: string): boolean {
  return path === base || path.startsWith(base.endsWith(sep) ? base : base + sep);
}

/**
 * Decides which symbolic links the recursive watch follows, by the link's real path: a link whose target lies outside
 * the tree is never followed (the loader does not read there either: reads and watches stay in the tree); a link to a
 * folder inside the tree, or to the tree itself, is skipped too (that folder is watched already), so a loop of links
 * costs one check, never a watch that grows without end. Links to files inside the tree are followed (an edit through
 * them still counts).
 */
export function createLinkGuard(rootReal: string, onSkipped: (link: string, target: string) => void) {
  const told = new Set<string>();
  function skip(link: string, target: string): true {
    const key = `${link}\0${target}`;
    if (!told.has(key)) {
      told.add(key);
      onSkipped(link, target);
    }
    return true;
  }
  return {
    /** True when the symbolic link at `path` must not be followed (or resolves to nothing usable). */
    skipsLink(path: string): boolean {
      let real: string;
      let isDirectory: boolean;
      try {
        real = realpathSync(path);
        isDirectory = statSync(real).isDirectory();
      } catch (error) {
        // ELOOP: the link resolves to itself; anything else: a broken link, which has nothing to watch.
        return (error as NodeJS.ErrnoException).code === 'ELOOP' ? skip(path, path) : false;
      }
      if (!within(real, rootReal)) return skip(path, real);
      return isDirectory ? skip(path, real) : false;
    },
  };
}

/** Decodes the octal escapes of a /proc/self/mountinfo field (`\040` is a space). */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * The mount points inside `rootReal` (real paths), read once from /proc/self/mountinfo (its fifth field); none where
 * the file does not exist (not Linux). A file mounted on its own (`docker run -v ./a.yaml:/manifests/a.yaml`) is
 * reported by no watch of its folder, not even for a write through its path in the tree.
 */
export function mountPointsWithin(rootReal: string, mountinfo = '/proc/self/mountinfo'): Set<string> {
  let text: string;
  try {
    text = readFileSync(mountinfo, 'utf8');
  } catch {
    return new Set();
  }
  const points = new Set<string>();
  for (const line of text.split('\n')) {
    const field = line.split(' ')[4];
    if (field === undefined) continue;
    const point = unescapeMountField(field);
    if (point !== rootReal && within(point, rootReal)) points.add(point);
  }
  return points;
}

/** What the tree's watch needs to decide what it leaves out. */
export interface TreeFilterOptions {
  /** The directory as chokidar is given it, and its real path. */
  dir: string;
  real: string;
  guard: ReturnType<typeof createLinkGuard>;
  /** Mount points inside the tree (real paths): see mountPointsWithin. */
  mountPoints: ReadonlySet<string>;
}

/**
 * chokidar's `ignored` for the tree's watch, with one lstat a path. Left out: hidden paths (`.git`, `.file.yaml`: the
 * loader skips them; a `..name` stays in), the symbolic links the guard does not follow, and every regular file its
 * folder's watch reports: an inotify watch of a folder names each child that is created, written, renamed over,
 * renamed away or deleted, and watchTree (src/daemon/watch/watcher.ts) turns those raw events into paths, so such a
 * file needs no `fs.watch` of its own. A regular file with more than one name (a hard link: a write through a name
 * elsewhere is reported to no folder of the tree) or mounted on its own keeps its own watch, as a followed symbolic
 * link to a file does (its target may change with no event in the link's folder). Folders are watched.
 */
export function createTreeFilter(options: TreeFilterOptions): (path: string) => boolean {
  const { dir, real, guard, mountPoints } = options;
  return (path) => {
    const rel = relative(dir, path);
    if (rel === '' || rel.startsWith('..' + sep) || isAbsolute(rel)) return false;
    if (rel.split(sep).some((p) => p.startsWith('.') && !p.startsWith('..'))) return true;
    let entry: ReturnType<typeof lstatSync>;
    try {
      entry = lstatSync(path);
    } catch {
      return false;
    }
    if (entry.isSymbolicLink()) return guard.skipsLink(path);
    if (!entry.isFile()) return false;
    return entry.nlink === 1 && !mountPoints.has(join(real, rel));
  };
}
