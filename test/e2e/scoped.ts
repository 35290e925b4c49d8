// Per-test teardown for e2e files whose tests run concurrently: what a test starts is stopped when that test ends,
// not by another test's afterEach (which would kill every converge child of the file).
import type { TestContext } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { dropPrefix, startDaemon, testPrefix, type DaemonHandle } from './helpers.js';

/** Runs `stop` when the test `t` ends, passed or failed (the last registered first); a failing stop is ignored. */
export function atEnd(t: TestContext, stop: () => unknown): void {
  t.onTestFinished(async () => {
    try {
      await stop();
    } catch {
      // Teardown of something already gone.
    }
  });
}

/** `startDaemon` for the test `t`: the daemon is SIGKILLed when the test ends, if it still runs. */
export async function daemonOf(
  t: TestContext,
  dir: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<DaemonHandle> {
  const daemon = await startDaemon(dir, args, env);
  atEnd(t, () => daemon.kill('SIGKILL'));
  return daemon;
}

/** A Redis key prefix of this run for the test `t`: its keys are removed when the test ends. */
export function prefixOf(t: TestContext, label: string): string {
  const p = testPrefix(label);
  atEnd(t, () => dropPrefix(p));
  return p;
}

/**
 * An emulator for the test `t` (closed when it ends), seeded with a docker deployment of max_scale 2 per name, each
 * with the secret TOKEN = `token`, echoed as `secrets` says (a first start over them holds them as SecretsUnknown).
 */
export async function emulatorWithSecrets(
  t: TestContext,
  names: readonly string[],
  token: string,
  secrets: 'masked' | 'omitted',
): Promise<RunningEmulator> {
  const e = await startEmulator({
    buildMs: 0,
    secrets,
    seed: {
      deployments: names.map((name) => ({
        name,
        source: 'external_docker' as const,
        source_config: { resource_spec: { max_scale: 2 } },
        source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
        secrets: [{ name: 'TOKEN', value: token }],
      })),
    },
  });
  atEnd(t, () => e.close());
  return e;
}
