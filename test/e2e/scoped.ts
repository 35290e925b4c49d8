// Per-test teardown for e2e files whose tests run concurrently: what a test starts is stopped when that test ends,
// not by another test's afterEach (which would kill every converge child of the file).
import type { TestContext } from 'vitest';
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
export async function daemonOf(t: TestContext, dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<DaemonHandle> {
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
