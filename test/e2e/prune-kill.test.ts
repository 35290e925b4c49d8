// kill -9 of a daemon with --prune right after its DELETE landed, and a new deployment that takes the name before the
// restart: the restarted daemon settles the lost delete by its id, deletes the rest, and never touches the newcomer.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function liveId(e: RunningEmulator, name: string): string | undefined {
  return e.store.allDeployments().find((d) => d.name === name && d.status !== 'AWAITING_DELETE')?.id;
}

describe('prune under kill -9', () => {
  it('a daemon killed with SIGKILL mid-prune: the restarted one deletes each owned deployment once and never the one that took a name', async () => {
    let daemon: DaemonHandle | undefined;
    let killed: Promise<void> | undefined;
    let taker: Promise<Response> | undefined;
    const e = await startEmulator({
      buildMs: 0,
      onRequest: (entry) => {
        // The first DELETE of a deployment landed: the daemon dies before it reads the answer or records it, and
        // someone else creates a deployment of the same name (free again: its tracing project went with it).
        if (entry.method !== 'DELETE' || entry.status !== 204 || killed) return;
        killed = daemon!.kill('SIGKILL');
        const name = entry.path.includes(ids.b!) ? 'b' : 'c';
        taker = fetch(`${e.url}/v2/deployments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            name,
            source: 'external_docker',
            source_config: {},
            source_revision_config: { image_uri: `docker.io/other/${name}:9` },
            secrets: [],
          }),
        });
      },
    });
    const dir = await tempDir('prune-kill');
    const prefix = testPrefix('prune-kill');
    cleanups.push(
      () => e.close(),
      () => rm(dir, { recursive: true, force: true }),
      () => dropPrefix(prefix),
    );
    const names = ['a', 'b', 'c', 'd'];
    await writeFiles(
      dir,
      Object.fromEntries(names.map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale: 1 })])),
    );
    const common = ['--api-url', e.url, '--redis-prefix', prefix, '--backoff', '50ms'];
    const created = await runConverge(['apply', dir, ...common]);
    expect(created.code, created.stdout + created.stderr).toBe(0);
    const ids: Record<string, string | undefined> = Object.fromEntries(names.map((n) => [n, liveId(e, n)]));
    for (const n of ['b', 'c', 'd']) await rm(join(dir, `${n}.yaml`));

    const args = [
      ...common,
      '--prune',
      '--prune-grace',
      '300ms',
      '--prune-tracing-projects',
      '--concurrency',
      '1',
      '--job-lock',
      '1s',
      '--resync',
      '1s',
      '--log-level',
      'info',
    ];
    daemon = await startDaemon(dir, args);
    await until('the first DELETE to land and the daemon to be killed', () => killed !== undefined, 20_000, 20).catch(
      (error: Error) => {
        throw new Error(
          `${error.message}; daemon output: ${daemon!.stdout().slice(-3000)} ${daemon!.stderr().slice(-1000)}; requests: ${JSON.stringify(e.requestLog.slice(-8).map((r) => [r.method, r.path, r.status]))}`,
        );
      },
    );
    await killed;
    const newcomer = (await (await taker!).json()) as { id: string; name: string };
    expect(newcomer.id).not.toBe(ids[newcomer.name]);

    daemon = await startDaemon(dir, args);
    const redis = new Redis(process.env.CONVERGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
    cleanups.push(async () => redis.disconnect());
    const deleted = (id: string | undefined) =>
      e.requestLog.filter((r) => r.method === 'DELETE' && r.status === 204 && r.deploymentId === id).length;
    await until(
      'every owned, undeclared deployment deleted and the lost delete settled',
      async () => {
        const settled =
          (await redis.hlen(`${prefix}:pending`)) === 0 &&
          (await redis.hexists(`${prefix}:applied`, `Deployment/${newcomer.name}`)) === 0;
        return settled && ['b', 'c', 'd'].every((n) => deleted(ids[n]) === 1) ? true : undefined;
      },
      30_000,
      100,
    );
    // Each owned deployment got exactly one DELETE; the newcomer and the declared one none.
    expect(['b', 'c', 'd'].map((n) => deleted(ids[n]))).toEqual([1, 1, 1]);
    expect(deleted(newcomer.id)).toBe(0);
    expect(liveId(e, newcomer.name)).toBe(newcomer.id);
    expect(liveId(e, 'a')).toBe(ids.a);
    await daemon.kill('SIGTERM');
  }, 60_000);
});
