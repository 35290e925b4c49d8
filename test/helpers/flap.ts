// Helpers of the flap-guard tests: whether a git binary is here, and the PATCHes of one deployment that set max_scale.
import { execFileSync } from 'node:child_process';
import type { RequestLogEntry } from '../../src/emulator/server.js';

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
  return log.filter((e) => e.method === 'PATCH' && e.deploymentId === id && (e.body as { source_config?: { resource_spec?: { max_scale?: number } } })?.source_config?.resource_spec?.max_scale === value).length;
}
