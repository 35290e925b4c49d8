// The manifest watcher holds one fs.watch a folder, none a regular file: each kind of change of a file still reaches the burst by its path.
// (src/daemon/watch/tree-filter.ts says what the watch leaves out; real files, the real watcher, real inotify.)
import { link, mkdir, rename, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { watchScope, type WatchScope } from '../helpers/watch-scope.js';

/** Every path the test's bursts reported so far. */
function reported(scope: WatchScope): string[] {
  return scope.bursts.flatMap((burst) => burst.paths);
}

/** Waits until a burst reports `path` (relative to the watched directory). */
async function reportedPath(scope: WatchScope, path: string): Promise<void> {
  await until(`a burst naming ${path} (so far: ${JSON.stringify(reported(scope))})`, () =>
    reported(scope).includes(path),
  );
}

/** A tree of `folders` folders of `files` manifests each (team-0/d0.yaml ...), as the bench lays out its files. */
async function writeTree(root: string, folders: number, files: number): Promise<void> {
  for (let f = 0; f < folders; f++) {
    await mkdir(join(root, `team-${f}`));
    for (let i = 0; i < files; i++) await writeFile(join(root, `team-${f}`, `d${i}.yaml`), `n: ${i}\n`);
  }
}

describe.concurrent('the manifest watcher: one watch a folder, every change of a file reported', () => {
  it('holds a watch for each folder and each followed link, none for a regular file', async (t) => {
    const scope = await watchScope(t);
    await writeTree(scope.root, 3, 30);
    await symlink(join('team-0', 'd0.yaml'), join(scope.root, 'linked.yaml'));
    const watcher = await scope.start(scope.root);
    // chokidar's watched entries: the tree in its parent, its 3 folders and the link; none of the 90 files.
    expect(watcher.watchedCount()).toBe(5);
  });

  it('reports a file written in place (the same inode) in a folder', async (t) => {
    const scope = await watchScope(t);
    await writeTree(scope.root, 2, 3);
    const file = join(scope.root, 'team-1', 'd2.yaml');
    const inode = (await stat(file)).ino;
    await scope.start(scope.root);
    await writeFile(file, 'n: 20\n');
    await reportedPath(scope, 'team-1/d2.yaml');
    expect((await stat(file)).ino).toBe(inode);
  });

  it('reports an atomic rename over a file', async (t) => {
    const scope = await watchScope(t);
    await writeTree(scope.root, 2, 3);
    await scope.start(scope.root);
    await writeFile(join(scope.root, 'team-0', 'd1.yaml.next'), 'n: 10\n');
    await rename(join(scope.root, 'team-0', 'd1.yaml.next'), join(scope.root, 'team-0', 'd1.yaml'));
    await reportedPath(scope, 'team-0/d1.yaml');
  });

  it('reports a delete', async (t) => {
    const scope = await watchScope(t);
    await writeTree(scope.root, 2, 3);
    await scope.start(scope.root);
    await unlink(join(scope.root, 'team-1', 'd0.yaml'));
    await reportedPath(scope, 'team-1/d0.yaml');
  });

  it("reports an editor's save (the file renamed to a backup, a new one written, the backup deleted), every time", async (t) => {
    const scope = await watchScope(t);
    await writeTree(scope.root, 1, 3);
    await scope.start(scope.root);
    const file = join(scope.root, 'team-0', 'd1.yaml');
    for (let save = 1; save <= 2; save++) {
      await rename(file, `${file}~`);
      await writeFile(file, `n: ${save}\n`);
      await unlink(`${file}~`);
      await until(`save ${save} reported`, () =>
        scope.bursts.slice(save - 1).some((burst) => burst.paths.includes('team-0/d1.yaml')),
      );
    }
    expect(reported(scope).filter((path) => path === 'team-0/d1.yaml')).toHaveLength(2);
  });

  it('reports a new folder with a file in it made at once (the folder: the full path), then edits of that file by name', async (t) => {
    const scope = await watchScope(t);
    await writeTree(scope.root, 1, 1);
    await scope.start(scope.root);
    await mkdir(join(scope.root, 'new', 'deeper'), { recursive: true });
    await writeFile(join(scope.root, 'new', 'deeper', 'b.yaml'), 'n: 1\n');
    // The folder is named whether or not its file was written before chokidar watched it: a folder in a burst makes the
    // next reconcile a full one (docs/daemon.md, "What stays on the full listing"), which reads the file.
    await reportedPath(scope, 'new');
    await writeFile(join(scope.root, 'new', 'deeper', 'b.yaml'), 'n: 2\n');
    await reportedPath(scope, 'new/deeper/b.yaml');
  });

  it('reports a file made in a folder created after the start', async (t) => {
    const scope = await watchScope(t);
    await writeTree(scope.root, 1, 1);
    await scope.start(scope.root);
    await mkdir(join(scope.root, 'later'));
    await reportedPath(scope, 'later');
    await writeFile(join(scope.root, 'later', 'c.yaml'), 'n: 1\n');
    await reportedPath(scope, 'later/c.yaml');
  });

  it('reports a symbolic link to a file by its own name when its target changes, in place or replaced', async (t) => {
    const scope = await watchScope(t);
    // The target lies in a `..name` folder, as a ConfigMap's files do: nothing in the link's folder changes with it.
    await mkdir(join(scope.root, '..data-1'));
    await writeFile(join(scope.root, '..data-1', 'a.yaml'), 'v: 1\n');
    await mkdir(join(scope.root, 'apps'));
    await symlink(join('..', '..data-1', 'a.yaml'), join(scope.root, 'apps', 'a.yaml'));
    await scope.start(scope.root);
    await writeFile(join(scope.root, '..data-1', 'a.yaml'), 'v: 2\n');
    await reportedPath(scope, 'apps/a.yaml');
    const seen = scope.bursts.length;
    // The target replaced (a new inode), then written in place: the link's watch follows the new target.
    await writeFile(join(scope.root, '..data-1', 'a.yaml.next'), 'v: 3\n');
    await rename(join(scope.root, '..data-1', 'a.yaml.next'), join(scope.root, '..data-1', 'a.yaml'));
    await until('the replaced target reported', () => scope.bursts.length > seen);
    const replaced = scope.bursts.length;
    await writeFile(join(scope.root, '..data-1', 'a.yaml'), 'v: 4\n');
    await until('the replaced target written in place, reported through the link', () =>
      scope.bursts.slice(replaced).some((burst) => burst.paths.includes('apps/a.yaml')),
    );
  });

  it('reports a file of the tree written through a hard link outside it (a name its folder does not see)', async (t) => {
    const scope = await watchScope(t);
    await mkdir(join(scope.root, 'outside'));
    await mkdir(join(scope.root, 'tree', 'team-0'), { recursive: true });
    await writeFile(join(scope.root, 'outside', 'h.yaml'), 'n: 1\n');
    await link(join(scope.root, 'outside', 'h.yaml'), join(scope.root, 'tree', 'team-0', 'h.yaml'));
    await scope.start(join(scope.root, 'tree'));
    await writeFile(join(scope.root, 'outside', 'h.yaml'), 'n: 2\n');
    await reportedPath(scope, 'team-0/h.yaml');
  });
});
