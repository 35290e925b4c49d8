// A rollback across a restart (`converge run` as a child, on a git checkout): commit A, commit B, the daemon stopped
// (SIGTERM, or kill -9) and started again, which reads B, then a checkout of A: every resource is written back once,
// and no Conflict (the flap guard's rule: docs/daemon.md, "What a conflict means"). Two replicas on different commits
// still conflict: test/e2e/replicas.test.ts.
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { deletePrefix, killAll, startDaemonChild, testPrefix, until, type DaemonChild } from './daemon-helpers.js';
import { hasGit, manifestRepo } from '../helpers/flap.js';

const COUNT = 6;
const names = Array.from({ length: COUNT }, (_, i) => `rr-${i}`);

afterAll(killAll);

interface Row {
  key: string;
  state: string;
  syncReason?: string;
}

/** The writes the service took for `name` (POST, PATCH), each with the max_scale it set. */
function writesOf(emulator: RunningEmulator, name: string): string[] {
  const id = emulator.store.allDeployments().find((x) => x.name === name)?.id;
  return emulator.requestLog
    .filter(
      (e) =>
        e.method !== 'GET' &&
        e.status < 400 &&
        (e.deploymentId === id || (e.method === 'POST' && (e.body as { name?: string } | undefined)?.name === name)),
    )
    .map((e) =>
      `${e.method} ${(e.body as { source_config?: { resource_spec?: { max_scale?: number } } } | undefined)?.source_config?.resource_spec?.max_scale ?? ''}`.trim(),
    );
}

describe('a rollback across a restart of the daemon', () => {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it.skipIf(!hasGit())(
      `commit A, commit B, ${signal} and start again (reads B), checkout A: every resource written back once, 0 Conflict (skipped without git)`,
      async () => {
        const emulator = await startEmulator({ buildMs: 0 });
        const { repo, dir, git, commitAt } = await manifestRepo('rollback-restart', names);
        const prefix = testPrefix(`rollback-restart-${signal.toLowerCase()}`);
        const args = [
          '--api-url',
          emulator.url,
          '--redis-prefix',
          prefix,
          '--replica-id',
          'rr',
          '--lease',
          '3s',
          '--resync',
          '1s',
          '--debounce',
          '50ms',
          '--flap-window',
          '30m',
          '--log-level',
          'info',
        ];
        const daemons: DaemonChild[] = [];
        const start = async (): Promise<DaemonChild> => {
          const d = await startDaemonChild(dir, args);
          daemons.push(d);
          return d;
        };
        const commitA = await commitAt(2, 'A');
        try {
          const scales = () =>
            names.map(
              (name) =>
                (
                  emulator.store.allDeployments().find((x) => x.name === name)?.source_config as
                    { resource_spec?: { max_scale?: number } } | undefined
                )?.resource_spec?.max_scale,
            );
          const reach = async (d: DaemonChild, maxScale: number, step: string) => {
            await until(
              `${step}: every deployment at max_scale ${maxScale}, synced`,
              async () => {
                if (!scales().every((s) => s === maxScale)) return false;
                const rows = ((await d.status()).resources as unknown as Row[]).filter((r) =>
                  names.some((n) => r.key === `Deployment/${n}`),
                );
                return rows.length === COUNT && rows.every((r) => r.state === 'synced');
              },
              60_000,
              100,
            );
          };
          const first = await start();
          await reach(first, 2, 'commit A');
          const commitB = await commitAt(4, 'B');
          await reach(first, 4, 'commit B');
          first.signal(signal);
          await first.exited;

          // The daemon again: it leads (a new fencing token) and reads B, which is applied: nothing to write.
          const second = await start();
          // Its own reconcile, by its log (the last reconcile on /status continues the record of the daemon before it).
          await until(
            'the restarted daemon to have reconciled commit B',
            async () => {
              if (!second.lines.some((l) => l.msg === 'reconciled')) return false;
              const doc = await second.status();
              const version = doc.manifestVersion as { id?: string } | null;
              return (doc.lastReconcile as { ok?: boolean } | null)?.ok === true && version?.id === commitB;
            },
            60_000,
            100,
          );
          const before = names.map((name) => writesOf(emulator, name).length);
          type Reconciled = { id: number; enqueued: number };
          const reconciledBefore = new Set(
            (((await second.status()).history as Reconciled[] | undefined) ?? []).map((r) => r.id),
          );

          // The rollback: a checkout of A's commit.
          git('checkout', '-q', commitA);
          await reach(second, 2, 'checkout of A after the restart');
          const status = await second.status();
          expect((status.conflicts as string[] | undefined) ?? []).toEqual([]);
          for (const [i, name] of names.entries()) {
            // One write per resource back to A, nothing more.
            expect(writesOf(emulator, name).slice(before[i]), name).toEqual(['PATCH 2']);
          }
          expect(second.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Conflict:'))).toEqual([]);
          // The reconciles that read the checkout enqueued one write per resource: none was held, none enqueued twice.
          const history = ((status.history as Reconciled[] | undefined) ?? []).filter(
            (r) => !reconciledBefore.has(r.id),
          );
          expect(history.reduce((n, r) => n + r.enqueued, 0)).toBe(COUNT);
        } finally {
          for (const d of daemons) d.signal('SIGTERM');
          await Promise.all(daemons.map((d) => d.exited));
          await emulator.close();
          await rm(repo, { recursive: true, force: true });
          await deletePrefix(prefix);
        }
      },
      180_000,
    );
  }
});
