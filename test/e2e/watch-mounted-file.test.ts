// A manifest mounted on its own into the tree (`docker run -v ./a.yaml:/manifests/team/a.yaml`): its folder's watch
// reports none of its changes, so the watcher keeps a watch of its own for it (src/daemon/watch/tree-filter.ts). A real
// bind mount in a mount namespace of the watcher's process alone (`unshare -m`, as root); skipped where there is none.
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir, until } from './helpers.js';

/** Whether this machine lets a child have its own mount namespace and bind-mount a file there. */
function canMount(): boolean {
  try {
    execFileSync('unshare', ['-m', '--propagation', 'private', 'mount', '--bind', '/dev/null', '/dev/null'], {
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
}

const BUILD = process.env.CONVERGE_TEST_DIST ?? join(ROOT, 'dist');
const CHILD = join(ROOT, 'test', 'helpers', 'watch-child.mjs');

describe('the manifest watcher and a file mounted on its own', () => {
  it.skipIf(!canMount())('reports a write to the mounted file by its path in the tree', async () => {
    const root = await tempDir('watch-mount');
    await mkdir(join(root, 'host'));
    await mkdir(join(root, 'tree', 'team'), { recursive: true });
    await writeFile(join(root, 'host', 'a.yaml'), 'v: 1\n');
    await writeFile(join(root, 'tree', 'team', 'a.yaml'), 'mounted over\n');
    await writeFile(join(root, 'tree', 'team', 'b.yaml'), 'v: 1\n');
    const child = spawn(
      'unshare',
      [
        ...['-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" "$2" && exec "$3" "$4" "$5" "$6"', 'sh'],
        ...[join(root, 'host', 'a.yaml'), join(root, 'tree', 'team', 'a.yaml')],
        ...[process.execPath, CHILD, BUILD, join(root, 'tree')],
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines: Array<{ watching?: number; paths?: string[]; error?: string }> = [];
    createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line) as (typeof lines)[0]));
    const exited = new Promise((done) => child.once('exit', done));
    try {
      await until('the watcher in its namespace watching', () => lines.some((l) => l.watching !== undefined), 30_000);
      // Written where the mount comes from: the same inode as tree/team/a.yaml in the watcher's namespace.
      await writeFile(join(root, 'host', 'a.yaml'), 'v: 2\n');
      await until('a burst naming team/a.yaml', () => lines.some((l) => l.paths?.includes('team/a.yaml')), 15_000);
      // A plain file beside it is reported by its folder's watch, as ever.
      await writeFile(join(root, 'tree', 'team', 'b.yaml'), 'v: 2\n');
      await until('a burst naming team/b.yaml', () => lines.some((l) => l.paths?.includes('team/b.yaml')), 15_000);
      expect(lines.filter((l) => l.error !== undefined)).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await rm(root, { recursive: true, force: true });
    }
  });
});
