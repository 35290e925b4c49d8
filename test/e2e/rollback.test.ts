// A rollback by checkout under a running daemon (`converge run` as a child, on a git checkout): tag1, tag2, a revert,
// tag3, then a checkout of tag1's commit, of tag2's and of tag1's again: each is written, once per resource, and no
// Conflict (the flap guard tells one leader's rollback from replicas taking turns: docs/decision.md).
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { deletePrefix, killAll, startDaemonChild, testPrefix, until } from './daemon-helpers.js';
import { hasGit, manifestRepo } from '../helpers/flap.js';

const COUNT = 3;
const names = Array.from({ length: COUNT }, (_, i) => `rb-${i}`);

afterAll(killAll);

describe('a rollback by checkout in the daemon', () => {
  it.skipIf(!hasGit())(
    'tag1, tag2, revert, tag3, checkout tag1, checkout tag2, checkout tag1: each written once per resource, no Conflict (skipped without git)',
    async () => {
      const emulator = await startEmulator({ buildMs: 0 });
      const { repo, dir, git, commitAt } = await manifestRepo('rollback', names);
      const prefix = testPrefix('rollback');
      const tag1 = await commitAt(2, 'tag1');
      const d = await startDaemonChild(dir, [
        '--api-url',
        emulator.url,
        '--redis-prefix',
        prefix,
        '--resync',
        '1s',
        '--debounce',
        '50ms',
        '--flap-window',
        '30m',
        '--log-level',
        'info',
      ]);
      try {
        const scales = () =>
          names.map(
            (name) =>
              (
                emulator.store.allDeployments().find((x) => x.name === name)?.source_config as
                  { resource_spec?: { max_scale?: number } } | undefined
              )?.resource_spec?.max_scale,
          );
        const reach = async (maxScale: number, step: string) => {
          await until(
            `${step}: every deployment at max_scale ${maxScale}, synced`,
            async () => {
              if (!scales().every((s) => s === maxScale)) return false;
              const rows = (await d.status()).resources.filter((r) => names.some((n) => r.key === `Deployment/${n}`));
              return rows.length === COUNT && rows.every((r) => r.state === 'synced');
            },
            30_000,
            100,
          );
        };
        await reach(2, 'tag1');
        await commitAt(4, 'tag2');
        const tag2 = git('rev-parse', 'HEAD');
        await reach(4, 'tag2');
        git('revert', '--no-edit', 'HEAD');
        await reach(2, 'revert');
        await commitAt(5, 'tag3');
        await reach(5, 'tag3');
        // The incident move: pin the earlier commit. Then forward and back once more.
        git('checkout', '-q', tag1);
        await reach(2, 'checkout of tag1');
        git('checkout', '-q', tag2);
        await reach(4, 'checkout of tag2');
        git('checkout', '-q', tag1);
        await reach(2, 'checkout of tag1 again');
        // Two resyncs more (1 s): nothing more is written.
        const total = async (): Promise<number> => (await d.status()).reconciles?.total ?? 0;
        const target = (await total()) + 2;
        await until('two more reconciles', async () => (await total()) >= target, 15_000, 50);
        expect(scales()).toEqual(names.map(() => 2));

        const status = await d.status();
        expect((status.conflicts as string[] | undefined) ?? []).toEqual([]);
        for (const name of names) {
          const id = emulator.store.allDeployments().find((x) => x.name === name)!.id;
          const sent = emulator.requestLog
            .filter(
              (e) =>
                e.method !== 'GET' &&
                e.status < 400 &&
                (e.deploymentId === id ||
                  (e.method === 'POST' && (e.body as { name?: string } | undefined)?.name === name)),
            )
            .map((e) =>
              `${e.method} ${(e.body as { source_config?: { resource_spec?: { max_scale?: number } } } | undefined)?.source_config?.resource_spec?.max_scale ?? ''}`.trim(),
            );
          // One write per resource per change: the create at 2 (with its artifact PATCH: one write), then 4, 2 (revert),
          // 5, 2 (checkout of tag1), 4, 2.
          expect(sent, name).toEqual([
            'POST 2',
            'PATCH',
            'PATCH 4',
            'PATCH 2',
            'PATCH 5',
            'PATCH 2',
            'PATCH 4',
            'PATCH 2',
          ]);
        }
        expect(d.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Conflict:'))).toEqual([]);
      } finally {
        d.signal('SIGTERM');
        await d.exited;
        await emulator.close();
        await rm(repo, { recursive: true, force: true });
        await deletePrefix(prefix);
      }
    },
    180_000,
  );
});
