// The flap guard through `converge apply` (real emulator, real Redis, in-process workers): an outside writer that keeps
// changing a healed field costs at most flap_limit writes, then a Conflict; A, B, A of the manifests is a Conflict naming
// both versions; a new desired state or releaseConflicts lets writes through again; writes are stamped with their commit or content hash, and a git revert is written.
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { openJobs } from '../../src/jobs/open-jobs.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli } from '../helpers/apply.js';
import { dropPrefix, rawRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { hasGit, patchesSetting } from '../helpers/flap.js';

const KEY_OF = (name: string) => `Deployment/${name}`;

describe('the flap guard under converge apply', () => {
  let emulator: RunningEmulator;
  const prefixes: string[] = [];

  beforeAll(async () => {
    emulator = await startEmulator({ buildMs: 0 });
  });
  afterAll(async () => {
    await emulator.close();
    for (const prefix of prefixes) await dropPrefix(prefix);
  });

  function setup(label: string, name: string) {
    const prefix = testPrefix(label);
    prefixes.push(prefix);
    const argv = (dir: string): string[] => [
      dir,
      '--api-url',
      emulator.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--backoff',
      '50ms',
      '--flap-limit',
      '2',
      '--flap-window',
      '10m',
    ];
    const live = () => emulator.store.allDeployments().find((d) => d.name === name)!;
    const maxScale = () =>
      (live().source_config as { resource_spec?: { max_scale?: number } }).resource_spec?.max_scale;
    const outsideWrite = async (value: number): Promise<void> => {
      const res = await fetch(`${emulator.url}/v2/deployments/${live().id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ source_config: { resource_spec: { max_scale: value } } }),
      });
      expect(res.status).toBe(200);
    };
    return { prefix, argv, live, maxScale, outsideWrite };
  }

  it('an outside writer: flap_limit heals, then Conflict "changed outside converge" naming the field; released by releaseConflicts and by a new desired state', async () => {
    const name = 'flap-outside';
    const t = setup('flap-outside', name);
    const tree = await manifestDir({ 'web.yaml': deploymentYaml(name, externalDockerSpec('docker.io/acme/web:1', 2)) });
    try {
      expect((await runApplyCli(t.argv(tree.dir), {})).code).toBe(0);
      const id = t.live().id;
      const redis = rawRedis();
      try {
        // every write is stamped with the manifests it came from (not in git here: a content hash)
        const record = JSON.parse((await redis.hget(`${t.prefix}:applied`, KEY_OF(name)))!);
        expect(record.manifestVersion).toMatchObject({ kind: 'content', id: expect.stringMatching(/^[0-9a-f]{12}$/) });
        expect(record.desired).toMatch(/^[0-9a-f]{64}$/);

        const results: Array<{ code: number; stdout: string }> = [];
        for (let i = 0; i < 4; i++) {
          await t.outsideWrite(9);
          results.push(await runApplyCli(t.argv(tree.dir), {}));
        }
        // two heals written; the third comes back: not applied (apply fails the resource with the conflict)
        expect(results.map((r) => r.code === 0)).toEqual([true, true, false, false]);
        expect(results[2]!.stdout).toMatch(
          /failed\s+Deployment\/flap-outside: Conflict: changed outside converge: source_config\.resource_spec\.max_scale put back 2 times within flap_window \(10m\)/,
        );
        expect(results[3]!.stdout).toContain('Conflict: changed outside converge');
        // flap_limit (2) heals went out, not one more; the outside writer's value stands
        expect(patchesSetting(emulator.requestLog, id, 2)).toBe(2);
        expect(t.maxScale()).toBe(9);
        const conflict = JSON.parse((await redis.hget(`${t.prefix}:flap:conflicts`, KEY_OF(name)))!);
        expect(conflict).toMatchObject({
          reason: 'changed_outside',
          fields: ['source_config.resource_spec.max_scale'],
        });
        expect(await redis.hget(`${t.prefix}:pending`, KEY_OF(name))).toBeNull();

        // an operator's release (the lead wires `converge reconcile --retry-failed NAME` to it): the next apply heals
        const jobs = await openJobs({
          redisUrl: REDIS_URL,
          redisPrefix: t.prefix,
          concurrency: 1,
          globalRate: 0,
          attempts: 1,
          backoff: 50,
        });
        try {
          expect(await jobs.releaseConflicts([KEY_OF(name), 'Deployment/none'])).toEqual([KEY_OF(name)]);
          expect(await jobs.flap.all()).toEqual(new Map());
        } finally {
          await jobs.close();
        }
        expect((await runApplyCli(t.argv(tree.dir), {})).code).toBe(0);
        expect(t.maxScale()).toBe(2);

        // fight again up to a conflict, then change the manifest: a new desired state releases it and is written
        for (let i = 0; i < 3; i++) {
          await t.outsideWrite(9);
          await runApplyCli(t.argv(tree.dir), {});
        }
        expect(await redis.hexists(`${t.prefix}:flap:conflicts`, KEY_OF(name))).toBe(1);
        await writeFile(
          join(tree.dir, 'web.yaml'),
          deploymentYaml(name, externalDockerSpec('docker.io/acme/web:1', 3)),
        );
        const changed = await runApplyCli(t.argv(tree.dir), {});
        expect(changed.code).toBe(0);
        expect(t.maxScale()).toBe(3);
        expect(await redis.hexists(`${t.prefix}:flap:conflicts`, KEY_OF(name))).toBe(0);
      } finally {
        redis.disconnect();
      }
    } finally {
      await tree.remove();
    }
  });

  it('A, then B, then A of the manifests: the third is not written, and the Conflict names both versions', async () => {
    const name = 'flap-aba';
    const t = setup('flap-aba', name);
    const a = deploymentYaml(name, externalDockerSpec('docker.io/acme/web:1', 2));
    const b = deploymentYaml(name, externalDockerSpec('docker.io/acme/web:1', 4));
    const tree = await manifestDir({ 'web.yaml': a });
    const redis = rawRedis();
    try {
      expect((await runApplyCli(t.argv(tree.dir), {})).code).toBe(0);
      const versionA = JSON.parse((await redis.hget(`${t.prefix}:applied`, KEY_OF(name)))!).manifestVersion
        .id as string;
      await writeFile(join(tree.dir, 'web.yaml'), b);
      expect((await runApplyCli(t.argv(tree.dir), {})).code).toBe(0);
      const versionB = JSON.parse((await redis.hget(`${t.prefix}:applied`, KEY_OF(name)))!).manifestVersion
        .id as string;
      expect(versionB).not.toBe(versionA);
      await writeFile(join(tree.dir, 'web.yaml'), a);
      const third = await runApplyCli(t.argv(tree.dir), {});
      expect(third.code).not.toBe(0);
      expect(third.stdout).toContain(
        `Conflict: the desired state alternates between content ${versionA} and content ${versionB}`,
      );
      expect(t.maxScale()).toBe(4);
      const writes = emulator.requestLog.filter(
        (e) => e.method !== 'GET' && (e.deploymentId === t.live().id || (e.body as { name?: string })?.name === name),
      );
      expect(writes).toHaveLength(2);
      const conflict = JSON.parse((await redis.hget(`${t.prefix}:flap:conflicts`, KEY_OF(name)))!);
      expect(conflict).toMatchObject({
        reason: 'desired_alternates',
        versions: [
          { kind: 'content', id: versionA },
          { kind: 'content', id: versionB },
        ],
      });
      // a third desired state is a change, not the fight: released and written
      await writeFile(join(tree.dir, 'web.yaml'), deploymentYaml(name, externalDockerSpec('docker.io/acme/web:1', 5)));
      expect((await runApplyCli(t.argv(tree.dir), {})).code).toBe(0);
      expect(t.maxScale()).toBe(5);
    } finally {
      redis.disconnect();
      await tree.remove();
    }
  });

  it.skipIf(!hasGit())(
    'in a git checkout: writes are stamped with the commit, and a revert (a new commit) is written, not a conflict (skipped without git)',
    async () => {
      const name = 'flap-git';
      const t = setup('flap-git', name);
      const tree = await manifestDir({
        'web.yaml': deploymentYaml(name, externalDockerSpec('docker.io/acme/web:1', 2)),
      });
      const git = (...args: string[]): string =>
        execFileSync(
          'git',
          ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args],
          { cwd: tree.dir, encoding: 'utf8' },
        ).trim();
      const redis = rawRedis();
      const applied = async () =>
        JSON.parse((await redis.hget(`${t.prefix}:applied`, KEY_OF(name)))!).manifestVersion as {
          kind: string;
          id: string;
        };
      try {
        git('init', '-q');
        git('add', '.');
        git('commit', '-q', '-m', 'max 2');
        expect((await runApplyCli(t.argv(tree.dir), {})).code).toBe(0);
        expect(await applied()).toMatchObject({ kind: 'git', id: git('rev-parse', 'HEAD') });
        await writeFile(
          join(tree.dir, 'web.yaml'),
          deploymentYaml(name, externalDockerSpec('docker.io/acme/web:1', 4)),
        );
        git('commit', '-q', '-am', 'max 4');
        expect((await runApplyCli(t.argv(tree.dir), {})).code).toBe(0);
        git('revert', '--no-edit', 'HEAD');
        const reverted = await runApplyCli(t.argv(tree.dir), {});
        expect(reverted.code).toBe(0);
        expect(t.maxScale()).toBe(2);
        expect(await applied()).toMatchObject({ kind: 'git', id: git('rev-parse', 'HEAD') });
        expect(await redis.hexists(`${t.prefix}:flap:conflicts`, KEY_OF(name))).toBe(0);
      } finally {
        redis.disconnect();
        await tree.remove();
      }
    },
  );
});
