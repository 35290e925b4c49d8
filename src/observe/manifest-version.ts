// The version of a manifest directory: the git commit checked out there (read from .git, no git binary; `git status`, when installed, for edits not committed), else a content hash.
import { spawn } from 'node:child_process';
import { readFile, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { ManifestVersion } from '../core/manifest-version.js';

/** A full object name: sha1 (40 hex) or sha256 (64 hex). */
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

async function kindOf(path: string): Promise<'dir' | 'file' | undefined> {
  try {
    const info = await stat(path);
    return info.isDirectory() ? 'dir' : info.isFile() ? 'file' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The git directory of the checkout that holds `dir`: the nearest `.git` walking up from its real path (a git-sync
 * root is a symbolic link to `.worktrees/<sha>`, whose `.git` is a file). A `.git` file says `gitdir: PATH` (a
 * worktree, a submodule, git-sync), relative to the folder that holds it.
 */
export async function findGitDir(dir: string): Promise<string | undefined> {
  let at: string;
  try {
    at = await realpath(dir);
  } catch {
    return undefined;
  }
  for (;;) {
    const candidate = join(at, '.git');
    const kind = await kindOf(candidate);
    if (kind === 'dir') return candidate;
    if (kind === 'file') {
      const match = /^gitdir:\s*(.+?)\s*$/m.exec((await readText(candidate)) ?? '');
      if (!match) return undefined;
      return isAbsolute(match[1]!) ? match[1]! : resolve(at, match[1]!);
    }
    const up = dirname(at);
    if (up === at) return undefined;
    at = up;
  }
}

/** The commit a ref names: its loose file (in the worktree's git dir, then the common one), else packed-refs. */
async function resolveRef(gitDir: string, ref: string): Promise<string | undefined> {
  const common = (await readText(join(gitDir, 'commondir')))?.trim();
  const commonDir = common ? resolve(gitDir, common) : gitDir;
  for (const base of new Set([gitDir, commonDir])) {
    const loose = (await readText(join(base, ref)))?.trim();
    if (loose && OBJECT_ID.test(loose)) return loose;
    if (loose?.startsWith('ref: ')) return resolveRef(gitDir, loose.slice(5).trim());
  }
  const packed = (await readText(join(commonDir, 'packed-refs'))) ?? '';
  for (const line of packed.split('\n')) {
    if (line.startsWith('#') || line.startsWith('^')) continue;
    const [id, name] = line.trim().split(' ');
    if (name === ref && id && OBJECT_ID.test(id)) return id;
  }
  return undefined;
}

/**
 * The commit checked out in the git checkout that holds `dir` (HEAD, detached or through a branch), or undefined:
 * not in git, a branch with no commit yet, or a git directory that cannot be read.
 */
export async function readGitCommit(dir: string): Promise<string | undefined> {
  const gitDir = await findGitDir(dir);
  if (!gitDir) return undefined;
  const head = (await readText(join(gitDir, 'HEAD')))?.trim();
  if (!head) return undefined;
  if (OBJECT_ID.test(head)) return head;
  if (!head.startsWith('ref: ')) return undefined;
  return resolveRef(gitDir, head.slice(5).trim());
}

/** Longest `git status` may take; past it the version is the commit alone (a huge checkout, a stuck filesystem). */
const STATUS_TIMEOUT_MS = 10_000;

/** The environment without git's own variables: a GIT_DIR or GIT_INDEX_FILE set by a hook must not point git elsewhere. */
function withoutGitVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('GIT_')));
}

/**
 * Whether the files under `paths` (relative to `dir`, or absolute) differ from the commit checked out there:
 * `git status` run in `dir` (staged, unstaged, new and deleted files; files git ignores are not counted), with
 * optional locks off so that it never writes the index. Undefined when it cannot tell: no git binary, a checkout git
 * refuses (owned by another user), a failure or a timeout; the version is then the commit alone, as without git.
 */
function uncommittedChanges(dir: string, paths: readonly string[]): Promise<boolean | undefined> {
  const args = [
    '--no-optional-locks',
    'status',
    '--porcelain',
    '-z',
    '--untracked-files=all',
    '--ignore-submodules',
    '--',
    ...paths,
  ];
  return new Promise((settle) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('git', args, {
        cwd: dir,
        env: withoutGitVariables(process.env),
        stdio: ['ignore', 'pipe', 'ignore'],
        timeout: STATUS_TIMEOUT_MS,
      });
    } catch {
      settle(undefined);
      return;
    }
    // One byte of output is one changed path: enough to answer, so git is not read further.
    child.stdout!.once('data', () => {
      settle(true);
      child.kill();
    });
    child.once('error', () => settle(undefined));
    child.once('close', (code) => settle(code === 0 ? false : undefined));
  });
}

/**
 * The version of the manifests in `dir`: its git commit, else `contentId` (ContentHasher over the files read). With
 * variables files and overlay directories (`others`), the commit names the version only when every one of them is in
 * the same git checkout as `dir`; else the content id does (it covers their bytes too). A commit under which any of
 * them differs from what is committed is marked `uncommitted`.
 */
export async function readManifestVersion(
  dir: string,
  contentId: string,
  now = new Date(),
  others: readonly string[] = [],
): Promise<ManifestVersion> {
  const commit = await readGitCommit(dir);
  const content: ManifestVersion = { kind: 'content', id: contentId, readAt: now.toISOString() };
  if (!commit) return content;
  if (others.length > 0) {
    const gitDir = await findGitDir(dir);
    const theirs = await Promise.all(
      others.map((path) => findGitDir(dirname(path)).then((found) => (found ? realpathOr(found) : undefined))),
    );
    const ours = gitDir ? await realpathOr(gitDir) : undefined;
    if (theirs.some((found) => found === undefined || found !== ours)) return content;
  }
  const uncommitted = await uncommittedChanges(dir, ['.', ...(await Promise.all(others.map(realpathOr)))]);
  return { kind: 'git', id: commit, ...(uncommitted === true ? { uncommitted } : {}), readAt: now.toISOString() };
}

async function realpathOr(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}
