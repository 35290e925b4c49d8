// A test's watch of real temporary directories: its own folder, the real manifest watcher, the bursts it reports.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestContext } from 'vitest';
import {
  watchManifestDir,
  type ManifestWatcher,
  type WatchBurst,
  type WatchOptions,
} from '../../src/daemon/watch/watcher.js';

/** The watchers' quiet time unless a test gives its own. */
export const DEBOUNCE = 150;

/** What a test watches with: its own temporary directory, its watchers' bursts, and helpers bound to them. */
export interface WatchScope {
  root: string;
  bursts: WatchBurst[];
  /** Starts a watcher on `dir` whose bursts go to `bursts`; it is closed when the test ends. */
  start(dir: string, options?: Partial<WatchOptions>): Promise<ManifestWatcher>;
  /** Waits until `count` bursts arrived, then a further quiet period to catch extra ones. */
  waitForBursts(count: number, timeoutMs?: number): Promise<void>;
}

/** A fresh directory and burst list for the test `t`; its watchers are closed and the directory removed when it ends. */
export async function watchScope(t: TestContext): Promise<WatchScope> {
  const root = await mkdtemp(join(tmpdir(), 'converge-watch-'));
  const bursts: WatchBurst[] = [];
  const watchers: ManifestWatcher[] = [];
  t.onTestFinished(async () => {
    for (const w of watchers) await w.close();
    await rm(root, { recursive: true, force: true });
  });
  return {
    root,
    bursts,
    async start(dir, options = {}) {
      const watcher = await watchManifestDir({
        dir,
        debounceMs: DEBOUNCE,
        onBurst: (b) => bursts.push(b),
        onError: (e) => {
          throw e;
        },
        ...options,
      });
      watchers.push(watcher);
      return watcher;
    },
    async waitForBursts(count, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (bursts.length < count && Date.now() < deadline) await sleep(20);
      await sleep(DEBOUNCE * 4);
    },
  };
}
