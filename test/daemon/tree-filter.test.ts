// What the manifest watcher leaves out of chokidar (src/daemon/watch/tree-filter.ts), on real files: regular files and
// hidden paths out; folders, followed links, hard-linked and mounted-in files in; the mount points read from mountinfo.
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLinkGuard, createTreeFilter, mountPointsWithin } from '../../src/daemon/watch/tree-filter.js';

describe('createTreeFilter and mountPointsWithin', () => {
  let root: string;
  let tree: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'converge-tree-filter-'));
    tree = join(root, 'my tree');
    await mkdir(join(tree, 'team', '.git'), { recursive: true });
    await mkdir(join(tree, '..data-1'));
    await mkdir(join(root, 'outside'));
    await writeFile(join(tree, 'team', 'plain.yaml'), 'n: 1\n');
    await writeFile(join(tree, 'team', 'mounted.yaml'), 'n: 1\n');
    await writeFile(join(tree, '..data-1', 'a.yaml'), 'n: 1\n');
    await writeFile(join(root, 'outside', 'x.yaml'), 'n: 1\n');
    await link(join(root, 'outside', 'x.yaml'), join(tree, 'team', 'hard.yaml'));
    await symlink('plain.yaml', join(tree, 'team', 'linked.yaml'));
    await symlink(join(root, 'outside', 'x.yaml'), join(tree, 'team', 'out.yaml'));
    await symlink('.', join(tree, 'team', 'self'));
    const escaped = (path: string) => path.replaceAll(' ', '\\040');
    await writeFile(
      join(root, 'mountinfo'),
      [
        `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw`,
        `30 22 8:1 /x ${escaped(tree)} rw,relatime - ext4 /dev/vda rw`,
        `31 22 8:1 /x ${escaped(join(tree, 'team', 'mounted.yaml'))} rw,relatime - ext4 /dev/vda rw`,
        `32 22 8:1 /x ${escaped(join(root, 'outside'))} rw,relatime - ext4 /dev/vda rw`,
        '',
      ].join('\n'),
    );
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('reads the mount points strictly inside the tree, spaces unescaped; none without the file', () => {
    expect([...mountPointsWithin(tree, join(root, 'mountinfo'))]).toEqual([join(tree, 'team', 'mounted.yaml')]);
    expect(mountPointsWithin(tree, join(root, 'no-such-mountinfo')).size).toBe(0);
  });

  it('leaves out regular files and hidden paths and the links it does not follow; keeps the rest', () => {
    const skipped: string[] = [];
    const guard = createLinkGuard(tree, (linkPath) => skipped.push(linkPath));
    const leftOut = createTreeFilter({
      dir: tree,
      real: tree,
      guard,
      mountPoints: mountPointsWithin(tree, join(root, 'mountinfo')),
    });
    const verdicts = Object.fromEntries(
      [
        '',
        'team',
        'team/.git',
        'team/plain.yaml',
        '..data-1',
        '..data-1/a.yaml',
        'team/linked.yaml',
        'team/hard.yaml',
        'team/mounted.yaml',
        'team/out.yaml',
        'team/self',
        'team/gone.yaml',
      ].map((rel) => [rel, leftOut(join(tree, rel))]),
    );
    expect(verdicts).toEqual({
      '': false,
      team: false,
      'team/.git': true,
      'team/plain.yaml': true,
      '..data-1': false,
      '..data-1/a.yaml': true,
      'team/linked.yaml': false,
      'team/hard.yaml': false,
      'team/mounted.yaml': false,
      'team/out.yaml': true,
      'team/self': true,
      'team/gone.yaml': false,
    });
    expect(skipped.sort()).toEqual([join(tree, 'team', 'out.yaml'), join(tree, 'team', 'self')]);
  });
});
