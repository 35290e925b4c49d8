// A service that answers every DELETE 503 for a while (the emulator's DELETE outage) under `converge run --prune`: the
// delete that falls due waits, or fails its own job and is retried with backoff, never the reconcile; other edits are
// written and reconciles succeed meanwhile; once the service answers, exactly one DELETE (204) of the removed resource.
// Through the built binary, against the emulator (requests counted at its request log).
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  liveMaxScale,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
  type ResourceRow,
} from './helpers.js';

interface Row extends ResourceRow {
  sync: { status: string; reason: string; message: string };
  pendingDelete?: { since: string; due: string | null; confirm: boolean };
}

/** The longest the outage could last in the test: it is ended by hand once what happens during it was seen. */
const OUTAGE_MS = 10 * 60_000;

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** An emulator, a directory applied once (converge owns every deployment), and `converge run --prune` on it. */
async function setup(label: string, daemonArgs: string[]) {
  const emulator: RunningEmulator = await startEmulator({ buildMs: 0 });
  const dir = await tempDir(`delete-outage-${label}`);
  const prefix = testPrefix(`delete-outage-${label}`);
  cleanups.push(
    () => emulator.close(),
    () => dropPrefix(prefix),
    () => rm(dir, { recursive: true, force: true }),
  );
  const common = ['--api-url', emulator.url, '--redis-prefix', prefix];
  await writeFiles(dir, {
    'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }),
    'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }),
    'c.yaml': dockerDeploymentYaml('c', { maxScale: 1 }),
  });
  const created = await runConverge(['apply', dir, ...common]);
  expect(created.code, created.stdout + created.stderr).toBe(0);
  const daemon = await startDaemon(dir, [
    ...common,
    '--prune',
    '--prune-grace',
    '1s',
    '--resync',
    '1s',
    '--debounce',
    '50ms',
    '--log-level',
    'info',
    ...daemonArgs,
  ]);
  cleanups.push(() => daemon.kill('SIGTERM'));
  const rows = async (): Promise<Map<string, Row>> =>
    new Map(((await daemon.status()).resources as Row[]).map((r) => [r.name, r]));
  const live = (name: string) =>
    emulator.store.allDeployments().find((d) => d.name === name && d.status !== 'AWAITING_DELETE');
  return {
    emulator,
    dir,
    daemon,
    rows,
    live,
    /** The DELETEs of deployment `id` the service received, by status (by path: a request refused before it is handled names no deployment). */
    deletesOf: (id: string) =>
      emulator.requestLog
        .filter((r) => r.method === 'DELETE' && r.path === `/v2/deployments/${id}`)
        .map((r) => r.status),
    async untilRow(what: string, name: string, test: (row: Row) => boolean): Promise<Row> {
      return until(
        what,
        async () => {
          const row = (await rows()).get(name);
          return row && test(row) ? row : undefined;
        },
        60_000,
        50,
      );
    },
    /** While the outage lasts: an edit of a.yaml is written (one PATCH), and reconciles keep succeeding. */
    async editWrittenMeanwhile(): Promise<void> {
      const failedBefore = (await daemon.status()).reconciles?.failed ?? 0;
      await writeFile(join(dir, 'a.yaml'), dockerDeploymentYaml('a', { maxScale: 3 }));
      await until('the edit of a to be written during the outage', () => liveMaxScale(live('a')) === 3, 60_000, 50);
      const okBefore = (await daemon.status()).reconciles?.total ?? 0;
      // Two full reconciles more (resync 1 s) while the outage lasts: each succeeds.
      await until(
        'two more reconciles during the outage',
        async () => ((await daemon.status()).reconciles?.total ?? 0) >= okBefore + 2,
        60_000,
        50,
      );
      const status = await daemon.status();
      expect(status.reconciles?.failed ?? 0).toBe(failedBefore);
      expect(status.lastReconcile).toMatchObject({ ok: true, error: null });
      expect(daemon.lines.filter((l) => l.msg === 'reconcile failed')).toEqual([]);
    },
  };
}

async function stop(daemon: DaemonHandle): Promise<void> {
  await daemon.kill('SIGTERM');
}

/** The words of an unanswered DELETE probe in a due delete's reason (src/daemon/cycle/delete-probe.ts). */
const PROBE_UNANSWERED = "did not answer converge's DELETE probe";

/** The lines the daemon logged of why `key`'s delete is not written (DeletePending), in order. */
function deletePendingLines(daemon: DaemonHandle, key: string): string[] {
  return daemon.lines.filter((l) => l.key === key && l.reason === 'DeletePending').map((l) => l.msg);
}

/** Each line that repeats the one just before it (a reason said again though it did not change). */
function repeatedLines(lines: readonly string[]): string[] {
  return lines.filter((line, i) => i > 0 && lines[i - 1] === line);
}

describe('a DELETE answered 503 for a while under converge run --prune', () => {
  it('the DELETE probe unanswered: the due delete waits (DeletePending, said when it changes), the reconcile goes on, an edit is written; after the outage exactly one DELETE 204', async () => {
    const s = await setup('probe', []);
    await s.untilRow('c in sync', 'c', (r) => r.sync.status === 'synced');
    const id = s.live('c')!.id;
    s.emulator.failDeletes(OUTAGE_MS);
    await rm(join(s.dir, 'c.yaml'));
    const waiting = await s.untilRow(
      'c waiting: the probe was not answered',
      'c',
      (r) => r.sync.reason === 'DeletePending' && /did not answer converge's DELETE probe/.test(r.reason ?? ''),
    );
    expect(waiting.reason).toMatch(
      /^delete due, not sent: the service did not answer converge's DELETE probe \(DELETE \/v2\/deployments\/\{deployment_id\} answered 503: .*\); the delete waits/,
    );
    expect(waiting.pendingDelete).toMatchObject({ confirm: false });
    expect(((await s.daemon.status()).plan as { notes?: string[] } | null)?.notes).toEqual([waiting.reason]);
    // Said when it appears or changes, not at every reconcile that meets it: two more full reconciles with the
    // manifests unchanged (each asks the probe again and is refused) say nothing new of c.
    const total = (await s.daemon.status()).reconciles?.total ?? 0;
    await until(
      'two more reconciles with the delete due and unanswered',
      async () => ((await s.daemon.status()).reconciles?.total ?? 0) >= total + 2,
      60_000,
      50,
    );
    expect(repeatedLines(deletePendingLines(s.daemon, 'Deployment/c'))).toEqual([]);
    expect(
      deletePendingLines(s.daemon, 'Deployment/c').filter((line) => line.includes(PROBE_UNANSWERED)).length,
    ).toBeGreaterThanOrEqual(1);
    await s.editWrittenMeanwhile();
    // The probe reached the service and was refused; the deployment's own DELETE was never sent.
    expect(s.emulator.requestLog.some((r) => r.method === 'DELETE' && r.status === 503)).toBe(true);
    expect(s.deletesOf(id)).toEqual([]);
    // The edit of a.yaml changed the manifests, so c's grace started again (docs/adopting-and-pruning.md): c went back to
    // waiting on prune_grace (another line) and, due again, may be said unanswered again. Each of c's lines differs
    // from the one before it: nothing is said twice in a row, however many reconciles met it.
    expect(repeatedLines(deletePendingLines(s.daemon, 'Deployment/c'))).toEqual([]);

    s.emulator.failDeletes(0);
    await until('the DELETE of c once the service answers', () => s.deletesOf(id).includes(204), 60_000, 50);
    expect(s.live('c')).toBeUndefined();
    await stop(s.daemon);
    expect(s.deletesOf(id)).toEqual([204]);
    expect(liveMaxScale(s.live('a'))).toBe(3);
    expect(s.live('b')).toBeDefined();
  }, 180_000);

  it('the delete job answered 503: its own job fails and is retried with backoff, never the reconcile; an edit is written; after the outage exactly one DELETE 204', async () => {
    const s = await setup('job', ['--backoff', '200ms', '--max-backoff', '1s']);
    await s.untilRow('b in sync', 'b', (r) => r.sync.status === 'synced');
    // A first removal is deleted while the service answers: the DELETE probe is answered (once per daemon).
    const idB = s.live('b')!.id;
    await rm(join(s.dir, 'b.yaml'));
    await until('the DELETE of b', () => s.deletesOf(idB).includes(204), 60_000, 50);

    const id = s.live('c')!.id;
    s.emulator.failDeletes(OUTAGE_MS);
    await rm(join(s.dir, 'c.yaml'));
    await until(
      'the DELETE of c refused 503 and its job retried',
      () => s.deletesOf(id).filter((status) => status === 503).length >= 2,
      60_000,
      50,
    );
    expect(
      s.daemon.lines.some(
        (l) =>
          l.key === 'Deployment/c' &&
          l.msg === 'job attempt failed; will retry' &&
          /answered 503/.test(String(l.error)),
      ),
    ).toBe(true);
    await s.editWrittenMeanwhile();
    expect(s.live('c')).toBeDefined();

    s.emulator.failDeletes(0);
    await until('the DELETE of c once the service answers', () => s.deletesOf(id).includes(204), 60_000, 50);
    expect(s.live('c')).toBeUndefined();
    await stop(s.daemon);
    // Every DELETE of c before the end of the outage was refused; exactly one was taken.
    expect(s.deletesOf(id).filter((status) => status !== 503)).toEqual([204]);
    expect(s.deletesOf(idB)).toEqual([204]);
    expect(liveMaxScale(s.live('a'))).toBe(3);
  }, 180_000);
});
