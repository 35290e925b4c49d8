// The flap window on one clock (real emulator, real Redis, in-process workers): A and B written by a worker with the
// right clock, then A by a worker whose wall clock runs 11 minutes ahead, within a 10-minute flap_window on Redis' clock:
// still A, B, A, a Conflict, not a third write. The worker's Date is faked (Date only: timers run as they do).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli } from '../helpers/apply.js';
import { dropPrefix, rawRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';

const NAME = 'flap-clock';
const AHEAD_MS = 11 * 60_000;

describe("the flap window is timed on Redis' clock", () => {
  let emulator: RunningEmulator;
  const prefix = testPrefix('flap-clock');

  beforeAll(async () => {
    emulator = await startEmulator({ buildMs: 0 });
  });
  afterAll(async () => {
    vi.useRealTimers();
    await emulator.close();
    await dropPrefix(prefix);
  });

  it('a worker 11 minutes ahead still sees A, B, A within a 10-minute window: Conflict, the third not written', async () => {
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
      '--flap-window',
      '10m',
    ];
    const a = deploymentYaml(NAME, externalDockerSpec('docker.io/acme/web:1', 2));
    const b = deploymentYaml(NAME, externalDockerSpec('docker.io/acme/web:1', 4));
    const tree = await manifestDir({ 'web.yaml': a });
    const redis = rawRedis();
    try {
      expect((await runApplyCli(argv(tree.dir), {})).code).toBe(0);
      await writeFile(join(tree.dir, 'web.yaml'), b);
      expect((await runApplyCli(argv(tree.dir), {})).code).toBe(0);
      await writeFile(join(tree.dir, 'web.yaml'), a);
      // The third apply, and its worker, in a process whose wall clock runs past the window of the first two writes.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + AHEAD_MS });
      const third = await runApplyCli(argv(tree.dir), {});
      vi.useRealTimers();
      expect(third.code).not.toBe(0);
      expect(third.stdout).toContain('Conflict: the desired state alternates between content');
      const live = emulator.store.allDeployments().find((d) => d.name === NAME)!;
      expect((live.source_config as { resource_spec?: { max_scale?: number } }).resource_spec?.max_scale).toBe(4);
      expect(JSON.parse((await redis.hget(`${prefix}:flap:conflicts`, `Deployment/${NAME}`))!)).toMatchObject({
        reason: 'desired_alternates',
      });
    } finally {
      vi.useRealTimers();
      redis.disconnect();
      await tree.remove();
    }
  });
});
