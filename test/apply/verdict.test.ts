// apply's verdict about its own change: a failed build that stands from earlier manifests, on a resource this apply does
// not write, is a warning (exit 0, or 1 with --strict); a re-run of the manifests whose build failed still exits 1.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli, writes } from '../helpers/apply.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

interface ApplyJson {
  converged: boolean;
  warnings: Array<{ key: string; message: string }>;
}

describe('converge apply: a failure that stands from earlier manifests', () => {
  let emulator: RunningEmulator;
  let dir: { dir: string; remove(): Promise<void> };
  const prefix = testPrefix('apply-verdict');

  beforeAll(async () => {
    emulator = await startEmulator({ buildMs: 0, buildFail: /^flaky$/ });
    dir = await manifestDir({
      'flaky.yaml': deploymentYaml('flaky', externalDockerSpec('docker.io/acme/flaky:1', 1)),
      'team.yaml': deploymentYaml('team', externalDockerSpec('docker.io/acme/team:1', 1)),
    });
  });
  afterAll(async () => {
    await emulator.close();
    await dir.remove();
    await dropPrefix(prefix);
  });

  const apply = (...extra: string[]) =>
    runApplyCli(
      [
        dir.dir,
        '--api-url',
        emulator.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
        '--backoff',
        '50ms',
        '--health-poll',
        '100ms',
        '--wait',
        ...extra,
      ],
      {},
    );

  it('the version whose build failed exits 1, and so does a re-run of it (nothing to write)', async () => {
    const first = await apply();
    expect(first.code, first.stdout + first.stderr).toBe(1);
    expect(first.stdout).toMatch(/revision failed: Deployment\/flaky \S+ BUILD_FAILED/);
    emulator.resetLog();
    const again = await apply();
    expect(again.code, again.stdout).toBe(1);
    expect(writes(emulator.requestLog)).toEqual([]);
    expect(again.stdout).toMatch(/failed +Deployment\/flaky/);
    expect(again.stdout).toMatch(/^Apply incomplete: .*revision failed: Deployment\/flaky/m);
  });

  it('a later change to another resource exits 0 with one warning naming the failure, its manifests and what to do', async () => {
    await writeFile(join(dir.dir, 'team.yaml'), deploymentYaml('team', externalDockerSpec('docker.io/acme/team:1', 2)));
    const later = await apply();
    expect(later.code, later.stdout + later.stderr).toBe(0);
    expect(later.stdout).toMatch(/done +Deployment\/team: updated/);
    const warning = later.stdout.split('\n').filter((line) => line.trimStart().startsWith('warning'));
    expect(warning).toHaveLength(1);
    expect(warning[0]).toMatch(
      /Deployment\/flaky: revision \S+ BUILD_FAILED stands from manifests content [0-9a-f]+, not from this apply/,
    );
    expect(warning[0]).toContain('converge reconcile --retry-failed flaky');
    expect(later.stdout).toMatch(
      /^Apply complete: 1 done, 0 unchanged, 0 failed\. Live state matches the manifests\. 1 resource stays degraded from earlier manifests/m,
    );
    const json = await apply('--output', 'json');
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as ApplyJson;
    expect(doc.converged).toBe(true);
    expect(doc.warnings).toEqual([
      { key: 'Deployment/flaky', message: expect.stringContaining('stands from manifests content') },
    ]);
  });

  it('--strict makes any degraded resource exit 1', async () => {
    const strict = await apply('--strict');
    expect(strict.code, strict.stdout).toBe(1);
    expect(strict.stdout).toMatch(/^Apply incomplete: .*revision failed: Deployment\/flaky/m);
  });
});
