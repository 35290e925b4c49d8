// When the daemon logs a reconcile's "reconciled" line, what it decided is in Redis and on /status (issue 50 item 3):
// the built daemon over the emulator, 300 manifests, /status read the moment the line is seen.
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  startDaemon,
  tempDir,
  testPrefix,
  writeFiles,
} from './helpers.js';

const N = 300;
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe('the "reconciled" line', () => {
  it('is logged once the rows the reconcile decided, and its record, are on /status', async () => {
    const e = await startEmulator({ buildMs: 60_000 });
    const dir = await tempDir('reconciled-rows');
    const prefix = testPrefix('reconciled-rows');
    cleanups.push(
      () => e.close(),
      () => dropPrefix(prefix),
      () => rm(dir, { recursive: true, force: true }),
    );
    const names = Array.from({ length: N }, (_, i) => `rows-${String(i).padStart(3, '0')}`);
    await writeFiles(
      dir,
      Object.fromEntries(names.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale: 1 })])),
    );
    const daemon = await startDaemon(dir, [
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--resync',
      '1h',
      '--log-level',
      'info',
    ]);
    const line = await daemon.waitForLine((l) => l.msg === 'reconciled' && l.trigger === 'startup', 60_000);
    const doc = (await daemon.status()) as unknown as {
      resources: Array<{ key: string; action: string }>;
      lastReconcile: { id: number; ok: boolean } | null;
    };
    expect(doc.lastReconcile).toMatchObject({ id: line.reconcile, ok: true });
    expect(doc.resources.map((row) => row.key).sort()).toEqual(names.map((name) => `Deployment/${name}`));
    expect(doc.resources.every((row) => row.action === 'create')).toBe(true);
  }, 120_000);
});
