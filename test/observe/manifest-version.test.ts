// The manifest directory's version over real files: .git folders and files written by hand (loose and packed refs,
// detached HEAD, worktrees, the git-sync layout), a real git checkout when git is installed, and the content fallback.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { findGitDir, readGitCommit, readManifestVersion } from '../../src/observe/manifest-version.js';
import { hasGit } from '../helpers/flap.js';

const SHA1 = '3f2a9c1e5b7d9f0a1c2e3b4d5f6a7b8c9d0e1f2a';
const SHA2 = '0123456789abcdef0123456789abcdef01234567';
const DEPLOYMENT =
  'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  source: internal_template\n';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'converge-version-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function write(path: string, text: string): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), text);
}

describe('readGitCommit (no git binary)', () => {
  it('reads HEAD through a loose branch ref, from a folder below the checkout', async () => {
    write('repo/.git/HEAD', 'ref: refs/heads/main\n');
    write('repo/.git/refs/heads/main', `${SHA1}\n`);
    write('repo/apps/web.yaml', DEPLOYMENT);
    expect(await readGitCommit(join(root, 'repo/apps'))).toBe(SHA1);
    expect(await findGitDir(join(root, 'repo/apps'))).toMatch(/repo\/\.git$/);
  });

  it('reads a branch from packed-refs, skipping comments and peeled tags', async () => {
    write('repo/.git/HEAD', 'ref: refs/heads/release\n');
    write(
      'repo/.git/packed-refs',
      `# pack-refs with: peeled fully-peeled sorted\n${SHA2} refs/heads/main\n${SHA1} refs/heads/release\n^${SHA2}\n`,
    );
    expect(await readGitCommit(join(root, 'repo'))).toBe(SHA1);
  });

  it('reads a detached HEAD', async () => {
    write('repo/.git/HEAD', `${SHA2}\n`);
    expect(await readGitCommit(join(root, 'repo'))).toBe(SHA2);
  });

  it('follows a .git file to a worktree git dir, and its commondir for the branch', async () => {
    write('main/.git/HEAD', 'ref: refs/heads/main\n');
    write('main/.git/worktrees/wt/HEAD', 'ref: refs/heads/feature\n');
    write('main/.git/worktrees/wt/commondir', '../..\n');
    write('main/.git/packed-refs', `${SHA2} refs/heads/feature\n`);
    write('wt/.git', `gitdir: ${join(root, 'main/.git/worktrees/wt')}\n`);
    expect(await readGitCommit(join(root, 'wt'))).toBe(SHA2);
  });

  it('reads the git-sync layout: the root is a symbolic link to .worktrees/<sha>, whose .git file is relative', async () => {
    write('git/.git/HEAD', 'ref: refs/heads/main\n');
    write(`git/.git/worktrees/${SHA1}/HEAD`, `${SHA1}\n`);
    write(`git/.git/worktrees/${SHA1}/commondir`, '../..\n');
    write(`git/.worktrees/${SHA1}/.git`, `gitdir: ../../.git/worktrees/${SHA1}\n`);
    write(`git/.worktrees/${SHA1}/manifests/web.yaml`, DEPLOYMENT);
    symlinkSync(`.worktrees/${SHA1}`, join(root, 'git/repo'));
    expect(await readGitCommit(join(root, 'git/repo/manifests'))).toBe(SHA1);
  });

  it('gives no commit for a branch without commits, an unreadable HEAD, or no checkout at all', async () => {
    write('unborn/.git/HEAD', 'ref: refs/heads/main\n');
    expect(await readGitCommit(join(root, 'unborn'))).toBeUndefined();
    write('junk/.git/HEAD', 'not a ref\n');
    expect(await readGitCommit(join(root, 'junk'))).toBeUndefined();
    write('bad/.git', 'nonsense\n');
    expect(await readGitCommit(join(root, 'bad'))).toBeUndefined();
    expect(await readGitCommit(join(root, 'does-not-exist'))).toBeUndefined();
  });
});

describe('readManifestVersion', () => {
  it('falls back to the content id of the files read, which changes with an edit', async () => {
    write('plain/web.yaml', DEPLOYMENT);
    const first = await loadManifestDir(join(root, 'plain'), { allowLiteralSecrets: false });
    const version = await readManifestVersion(join(root, 'plain'), first.contentId, new Date('2026-01-01T00:00:00Z'));
    expect(version).toEqual({ kind: 'content', id: first.contentId, readAt: '2026-01-01T00:00:00.000Z' });
    expect(version.id).toMatch(/^[0-9a-f]{12}$/);
    expect((await loadManifestDir(join(root, 'plain'), { allowLiteralSecrets: false })).contentId).toBe(
      first.contentId,
    );
    write('plain/web.yaml', DEPLOYMENT.replace('web', 'web2'));
    expect((await loadManifestDir(join(root, 'plain'), { allowLiteralSecrets: false })).contentId).not.toBe(
      first.contentId,
    );
  });

  it.skipIf(!hasGit())(
    'reads the commit of a real git checkout and of a real git worktree (skipped when git is not installed)',
    async () => {
      const repo = join(root, 'real');
      mkdirSync(repo);
      const git = (...args: string[]): string =>
        execFileSync(
          'git',
          ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args],
          { cwd: repo, encoding: 'utf8' },
        ).trim();
      git('init', '-q');
      writeFileSync(join(repo, 'web.yaml'), DEPLOYMENT);
      git('add', '.');
      git('commit', '-q', '-m', 'one');
      const one = git('rev-parse', 'HEAD');
      expect((await readManifestVersion(repo, 'unused')).id).toBe(one);
      writeFileSync(join(repo, 'web.yaml'), DEPLOYMENT.replace('web', 'web2'));
      git('commit', '-q', '-am', 'two');
      git('pack-refs', '--all');
      const two = git('rev-parse', 'HEAD');
      expect(await readManifestVersion(repo, 'unused')).toMatchObject({ kind: 'git', id: two });
      git('worktree', 'add', '-q', '--detach', join(root, 'wt'), one);
      expect(await readGitCommit(join(root, 'wt'))).toBe(one);
    },
  );

  it.skipIf(!hasGit())(
    'marks a commit under edits not committed (edited, staged, new, deleted), and only under the files read (skipped when git is not installed)',
    async () => {
      const repo = join(root, 'dirty');
      mkdirSync(join(repo, 'apps'), { recursive: true });
      mkdirSync(join(repo, 'vars'));
      const git = (...args: string[]): string =>
        execFileSync(
          'git',
          ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args],
          { cwd: repo, encoding: 'utf8' },
        ).trim();
      git('init', '-q');
      writeFileSync(join(repo, 'apps/web.yaml'), DEPLOYMENT);
      writeFileSync(join(repo, 'vars/dev.yaml'), 'ENV: dev\n');
      writeFileSync(join(repo, 'README.md'), 'notes\n');
      git('add', '.');
      git('commit', '-q', '-m', 'one');
      const head = git('rev-parse', 'HEAD');
      const apps = join(repo, 'apps');
      const vars = [join(repo, 'vars/dev.yaml')];
      const version = () => readManifestVersion(apps, 'unused', new Date('2026-01-01T00:00:00Z'), vars);
      expect(await version()).toEqual({ kind: 'git', id: head, readAt: '2026-01-01T00:00:00.000Z' });
      writeFileSync(join(repo, 'README.md'), 'other notes\n');
      expect(await version()).toEqual({ kind: 'git', id: head, readAt: '2026-01-01T00:00:00.000Z' });
      writeFileSync(join(apps, 'web.yaml'), DEPLOYMENT.replace('web', 'web2'));
      expect(await version()).toEqual({ kind: 'git', id: head, uncommitted: true, readAt: '2026-01-01T00:00:00.000Z' });
      git('add', 'apps/web.yaml');
      expect(await version()).toMatchObject({ id: head, uncommitted: true });
      git('commit', '-q', '-m', 'two');
      const two = git('rev-parse', 'HEAD');
      expect(await version()).toEqual({ kind: 'git', id: two, readAt: '2026-01-01T00:00:00.000Z' });
      writeFileSync(join(apps, 'new.yaml'), DEPLOYMENT.replace('web', 'new'));
      expect(await version()).toMatchObject({ id: two, uncommitted: true });
      rmSync(join(apps, 'new.yaml'));
      expect((await version()).uncommitted).toBeUndefined();
      rmSync(join(apps, 'web.yaml'));
      expect(await version()).toMatchObject({ id: two, uncommitted: true });
      git('checkout', '-q', '--', 'apps/web.yaml');
      writeFileSync(join(repo, 'vars/dev.yaml'), 'ENV: dev2\n');
      expect(await version()).toMatchObject({ id: two, uncommitted: true });
      expect((await readManifestVersion(apps, 'unused')).uncommitted).toBeUndefined();
    },
  );

  it('covers variables files and overlays: the commit only when they are in the same checkout, else the content id of all', async () => {
    write('repo/.git/HEAD', `${SHA1}\n`);
    write('repo/base/web.yaml', DEPLOYMENT.replace('name: web', 'name: web-${ENV}'));
    write('repo/vars/dev.yaml', 'ENV: dev\n');
    write('outside/dev.yaml', 'ENV: dev\n');
    const inside = [join(root, 'repo/vars/dev.yaml')];
    expect(await readManifestVersion(join(root, 'repo/base'), 'aaaaaaaaaaaa', new Date(), inside)).toMatchObject({
      kind: 'git',
      id: SHA1,
    });
    const outside = { vars: [{ path: join(root, 'outside/dev.yaml'), label: 'dev.yaml' }], overlays: [] };
    const loaded = await loadManifestDir(join(root, 'repo/base'), { allowLiteralSecrets: false, environment: outside });
    expect(
      await readManifestVersion(join(root, 'repo/base'), loaded.contentId, new Date(), [outside.vars[0]!.path]),
    ).toMatchObject({ kind: 'content', id: loaded.contentId });
    write('outside/dev.yaml', 'ENV: dev2\n');
    expect(
      (await loadManifestDir(join(root, 'repo/base'), { allowLiteralSecrets: false, environment: outside })).contentId,
    ).not.toBe(loaded.contentId);
  });
});
