// The watch of one environment on real files (chokidar): the base, an overlay directory and a variables file each
// trigger a burst; another file beside the variables file does not; a ConfigMap-style ..data swap beside it does.
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { watchEnvironment } from '../../src/daemon/watch/environment-watcher.js';
import type { WatchBurst } from '../../src/daemon/watch/watcher.js';

const DEBOUNCE = 150;

async function waitFor(bursts: WatchBurst[], count: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (bursts.length < count && Date.now() < until) await sleep(20);
  await sleep(DEBOUNCE * 4);
}

describe('watchEnvironment', () => {
  it('a burst for an edit of the base, of an overlay file and of a variables file; none for a neighbour of the variables file', async () => {
    const root = await mkdtemp(join(tmpdir(), 'converge-envwatch-'));
    const bursts: WatchBurst[] = [];
    const base = join(root, 'base');
    const overlay = join(root, 'overlays', 'dev');
    const varsDir = join(root, 'vars');
    await mkdir(base);
    await mkdir(overlay, { recursive: true });
    await mkdir(varsDir);
    await writeFile(join(base, 'a.yaml'), 'x: 1\n');
    await writeFile(join(overlay, 'a.yaml'), 'x: 1\n');
    await writeFile(join(varsDir, 'dev.yaml'), 'A: 1\n');
    const watcher = await watchEnvironment({
      dir: base,
      environment: {
        vars: [{ path: join(varsDir, 'dev.yaml'), label: 'vars/dev.yaml' }],
        overlays: [{ path: overlay, label: 'overlays/dev' }],
      },
      debounceMs: DEBOUNCE,
      onBurst: (burst) => bursts.push(burst),
      onError: (error) => {
        throw error;
      },
    });
    try {
      await writeFile(join(varsDir, 'prod.yaml'), 'A: 2\n');
      await sleep(DEBOUNCE * 4);
      expect(bursts).toHaveLength(0);

      await writeFile(join(varsDir, 'dev.yaml'), 'A: 2\n');
      await waitFor(bursts, 1);
      expect(bursts.map((b) => b.sample)).toEqual([['dev.yaml']]);

      await writeFile(join(overlay, 'a.yaml'), 'x: 2\n');
      await waitFor(bursts, 2);
      expect(bursts).toHaveLength(2);

      await writeFile(join(base, 'a.yaml'), 'x: 2\n');
      await waitFor(bursts, 3);
      expect(bursts).toHaveLength(3);

      // Kubernetes' atomic writer: a new ..data link renamed over the old one beside the mounted file.
      await mkdir(join(varsDir, '..2026_01'));
      await symlink('..2026_01', join(varsDir, '..data_tmp'));
      await rename(join(varsDir, '..data_tmp'), join(varsDir, '..data'));
      await waitFor(bursts, 4);
      expect(bursts.length).toBeGreaterThanOrEqual(4);
      await watcher.quiet();
    } finally {
      await watcher.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
