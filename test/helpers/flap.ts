// Helpers of the flap-guard tests: whether a git binary is here, a git repository of manifests, and the PATCHes of one deployment that set max_scale.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RequestLogEntry } from '../../src/emulator/server.js';
import { internalDockerYaml } from './manifests.js';

/** Whether a `git` binary runs on this machine (the tests that build real checkouts are skipped without it). */
export function hasGit(): boolean {
  try {
    execFileSync('git', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** PATCHes of deployment `id` that set max_scale to `value` (converge's writes carry the manifest's value). */
export function patchesSetting(log: RequestLogEntry[], id: string, value: number): number {
  return log.filter(
    (e) =>
      e.method === 'PATCH' &&
      e.deploymentId === id &&
      (e.body as { source_config?: { resource_spec?: { max_scale?: number } } })?.source_config?.resource_spec
        ?.max_scale === value,
  ).length;
}

/** A git repository in a temporary folder whose `manifests/` holds one internal_docker deployment per name. */
export interface ManifestRepo {
  repo: string;
  /** The manifest directory (`manifests/` in the repository). */
  dir: string;
  /** Runs git in the repository (a test identity, no detached-head advice); its trimmed stdout. */
  git(...args: string[]): string;
  /** Writes every deployment with `maxScale`, commits, and returns the commit. */
  commitAt(maxScale: number, message: string): Promise<string>;
}

/** A new, empty repository (`git init` done, no commit) for the deployments `names`; `label` names its folder. */
export async function manifestRepo(label: string, names: readonly string[]): Promise<ManifestRepo> {
  const repo = await mkdtemp(join(tmpdir(), `converge-${label}-`));
  const dir = join(repo, 'manifests');
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'advice.detachedHead=false', ...args],
      { cwd: repo, stdio: 'pipe' },
    )
      .toString()
      .trim();
  git('init', '-q', '-b', 'main');
  return {
    repo,
    dir,
    git,
    async commitAt(maxScale, message) {
      await mkdir(dir, { recursive: true });
      for (const name of names) await writeFile(join(dir, `${name}.yaml`), internalDockerYaml(name, maxScale));
      git('add', '-A');
      git('commit', '-qm', message);
      return git('rev-parse', 'HEAD');
    },
  };
}
