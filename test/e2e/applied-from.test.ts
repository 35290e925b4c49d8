// /status appliedFrom follows the job (issue 35, item 10): once a daemon job that wrote a new manifest version ends, its
// row names that version at once, not the previous one until the next reconcile (the resync here is an hour away).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { internalDockerYaml } from '../helpers/manifests.js';
import { atomicSave, killAll, startDaemonChild } from './daemon-helpers.js';
import { dropPrefix, tempDir, testPrefix, until, writeFiles } from './helpers.js';

interface Row {
  key: string;
  job: { id: string; state: string } | null;
  appliedFrom?: { kind: string; id: string; appliedAt: string };
}

describe('/status appliedFrom', () => {
  const prefix = testPrefix('applied-from');
  afterAll(async () => {
    await killAll();
    await dropPrefix(prefix);
  });

  it('names the manifests of the write as soon as its job ends', async () => {
    const emulator = await startEmulator({ buildMs: 0 });
    const dir = await tempDir('applied-from');
    try {
      await writeFiles(dir, { 'web.yaml': internalDockerYaml('af-web', 1) });
      const daemon = await startDaemonChild(dir, [
        '--api-url',
        emulator.url,
        '--redis-prefix',
        prefix,
        '--resync',
        '1h',
        '--debounce',
        '50ms',
      ]);
      const row = async (): Promise<{ row: Row | undefined; version: { id: string } | null }> => {
        const doc = await daemon.status();
        return {
          row: (doc.resources as unknown as Row[]).find((r) => r.key === 'Deployment/af-web'),
          version: doc.manifestVersion as { id: string } | null,
        };
      };
      await until(
        'the create job done and its manifests shown',
        async () => (await row()).row?.appliedFrom !== undefined,
        60_000,
        50,
      );
      const first = (await row()).row!;

      await atomicSave(join(dir, 'web.yaml'), internalDockerYaml('af-web', 2));
      await until(
        'the update job done',
        async () => {
          const { row: now } = await row();
          return now?.job?.state === 'completed' && now.job.id !== first.job?.id;
        },
        60_000,
        20,
      );
      const { row: after, version } = await row();
      expect(version!.id).not.toBe(first.appliedFrom!.id);
      expect(after!.appliedFrom).toMatchObject({ kind: 'content', id: version!.id });
      daemon.signal('SIGTERM');
      await daemon.exited;
    } finally {
      await emulator.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 150_000);
});
