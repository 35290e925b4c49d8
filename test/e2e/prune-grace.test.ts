// A daemon with prune never deletes on a moment: an owned manifest truncated for 0.35 s, 1 s or 3 s, or a two-document
// file cut at `---`, sends no DELETE (not even the probe); a clean removal is still deleted, by the reconcile the daemon
// schedules once prune_grace has passed; under prune_mode confirm nothing is deleted until a person confirms, then once.
// Through the built binary, against the emulator (DELETEs counted at its request log).
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
  type DaemonStatus,
  type ResourceRow,
} from './helpers.js';

const HOOK = 'prune-grace-hook-token';

interface Row extends ResourceRow {
  sync: { status: string; reason: string; message: string };
  pendingDelete?: { since: string; due: string | null; confirm: boolean };
  pruneKept?: true;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** An emulator, a manifest directory applied once (every deployment created by converge), and a daemon on it. */
async function setup(label: string, files: Record<string, string>, daemonArgs: string[]) {
  const emulator: RunningEmulator = await startEmulator({ buildMs: 0 });
  const dir = await tempDir(`prune-grace-${label}`);
  const prefix = testPrefix(`prune-grace-${label}`);
  cleanups.push(
    () => emulator.close(),
    () => dropPrefix(prefix),
    () => rm(dir, { recursive: true, force: true }),
  );
  const common = ['--api-url', emulator.url, '--redis-prefix', prefix];
  await writeFiles(dir, files);
  const created = await runConverge(['apply', dir, ...common]);
  expect(created.code, created.stdout + created.stderr).toBe(0);
  const daemon = await startDaemon(
    dir,
    [...common, '--prune', '--resync', '1h', '--log-level', 'info', ...daemonArgs],
    { CONVERGE_WEBHOOK_TOKEN: HOOK },
  );
  const rows = async (): Promise<Map<string, Row>> =>
    new Map(((await daemon.status()).resources as Row[]).map((r) => [r.name, r]));
  return {
    emulator,
    dir,
    daemon,
    rows,
    /** Every DELETE the service received (the probe for the endpoint included). */
    deletes: () => emulator.requestLog.filter((r) => r.method === 'DELETE'),
    idOf: (name: string) =>
      emulator.store.allDeployments().find((d) => d.name === name && d.status !== 'AWAITING_DELETE')?.id,
    /** Waits for a reconcile that started after now and ended (any trigger). */
    async nextReconcile(): Promise<DaemonStatus> {
      const before = (await daemon.status()).reconciles?.total ?? 0;
      return until(
        'a reconcile after this point',
        async () => {
          const s = await daemon.status();
          return (s.reconciles?.total ?? 0) > before ? s : undefined;
        },
        60_000,
        50,
      );
    },
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
  };
}

type Setup = Awaited<ReturnType<typeof setup>>;

const synced = (row: Row) => row.action === 'noop' && row.sync.status === 'synced';

/** Waits until the daemon, after the file was restored, has the resource in sync again. */
async function backInSync(s: Setup, name: string): Promise<void> {
  await s.nextReconcile();
  await s.untilRow(`${name} in sync again`, name, synced);
}

async function stop(daemon: DaemonHandle): Promise<void> {
  await daemon.kill('SIGTERM');
}

// The cases run concurrently (each mostly waits on its daemon, past a grace), with their own emulator, directory,
// Redis prefix and daemon (setup).
describe.concurrent('daemon prune waits: a moment is not a removal', () => {
  for (const gapMs of [350, 1_000]) {
    it(`an owned manifest truncated for ${gapMs} ms under converge run --prune: 0 DELETE`, async () => {
      const s = await setup(
        `trunc-${gapMs}`,
        { 'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }), 'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }) },
        [],
      );
      await s.untilRow('b in sync', 'b', synced);
      const text = dockerDeploymentYaml('b', { maxScale: 1 });
      await writeFile(join(s.dir, 'b.yaml'), '');
      await sleep(gapMs);
      await writeFile(join(s.dir, 'b.yaml'), text);
      await backInSync(s, 'b');
      await stop(s.daemon);
      expect(s.deletes()).toEqual([]);
      expect(s.idOf('b')).toBeDefined();
    }, 120_000);
  }

  it('an owned manifest truncated for 3 s, past a 1 s prune_grace: 0 DELETE (a file present and empty is unknown, not absent)', async () => {
    const s = await setup(
      'trunc-3s',
      { 'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }), 'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }) },
      ['--prune-grace', '1s', '--debounce', '50ms'],
    );
    await s.untilRow('b in sync', 'b', synced);
    const text = dockerDeploymentYaml('b', { maxScale: 1 });
    const started = Date.now();
    await writeFile(join(s.dir, 'b.yaml'), '# being rewritten\n');
    // The daemon saw the emptied file: b is unknown (blocked), never a delete.
    const unknown = await s.untilRow('b unknown while its file is empty', 'b', (r) => r.action === 'blocked');
    expect(unknown.error ?? '').toContain('unknown: b.yaml:1:1 declares nothing now, which declared it before');
    expect(unknown.sync.reason).toBe('ManifestErrors');
    await sleep(Math.max(0, 3_000 - (Date.now() - started)));
    // Still unknown after the grace, reconciled again (POST-free: the file's own change was the last trigger).
    expect((await s.rows()).get('b')?.action).toBe('blocked');
    await writeFile(join(s.dir, 'b.yaml'), text);
    await backInSync(s, 'b');
    await stop(s.daemon);
    expect(s.deletes()).toEqual([]);
    expect(s.idOf('b')).toBeDefined();
  }, 120_000);

  it('a two-document file cut at ---: the second deployment waits (DeletePending), 0 DELETE, and is declared again', async () => {
    const a = dockerDeploymentYaml('a', { maxScale: 1 });
    const b = dockerDeploymentYaml('b', { maxScale: 1 });
    const s = await setup('cut', { 'ab.yaml': `${a}---\n${b}` }, ['--debounce', '50ms']);
    await s.untilRow('b in sync', 'b', synced);
    await writeFile(join(s.dir, 'ab.yaml'), `${a}---\n`);
    const pending = await s.untilRow('b DeletePending', 'b', (r) => r.sync.reason === 'DeletePending');
    expect(pending.action).toBe('delete');
    expect(pending.pendingDelete?.confirm).toBe(false);
    // Default prune_grace: 60 s from when it was first seen undeclared.
    expect(Date.parse(pending.pendingDelete!.due!) - Date.parse(pending.pendingDelete!.since)).toBe(60_000);
    expect((await s.daemon.status()).deletesPending).toEqual(['Deployment/b']);
    await writeFile(join(s.dir, 'ab.yaml'), `${a}---\n${b}`);
    await backInSync(s, 'b');
    await stop(s.daemon);
    expect(s.deletes()).toEqual([]);
  }, 120_000);

  it('a clean removal is still pruned: once prune_grace (1 s) has passed, by the reconcile the daemon schedules, exactly once', async () => {
    const s = await setup(
      'removal',
      { 'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }), 'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }) },
      ['--prune-grace', '1s', '--debounce', '50ms'],
    );
    await s.untilRow('b in sync', 'b', synced);
    const id = s.idOf('b')!;
    await rm(join(s.dir, 'b.yaml'));
    const pending = await s.untilRow('b DeletePending', 'b', (r) => r.sync.reason === 'DeletePending');
    // No file change follows and the resync is an hour away: the reconcile that sends it is the one the daemon scheduled.
    await until(
      'the DELETE of b',
      () => s.deletes().some((r) => r.deploymentId === id && r.status === 204),
      60_000,
      50,
    );
    expect(s.idOf('b')).toBeUndefined();
    const status = await s.daemon.status();
    const history = status.history as Array<{ trigger: string; startedAt: string }>;
    const scheduled = history.filter((r) => r.trigger === 'prune');
    expect(scheduled.length).toBeGreaterThanOrEqual(1);
    expect(Date.parse(scheduled[0]!.startedAt)).toBeGreaterThanOrEqual(Date.parse(pending.pendingDelete!.due!));
    await stop(s.daemon);
    // The probe for the endpoint (a made-up id, 404) and the one delete, nothing more.
    expect(s.deletes().filter((r) => r.deploymentId === id)).toHaveLength(1);
    expect(s.deletes().filter((r) => r.status === 204)).toHaveLength(1);
    expect(s.idOf('a')).toBeDefined();
  }, 120_000);

  it('prune_mode confirm: no DELETE until converge reconcile --confirm-delete NAME, then exactly one; a kept resource says so', async () => {
    const files = {
      'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }),
      'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }),
      'kept.yaml': dockerDeploymentYaml('kept', { maxScale: 1, annotations: { 'converge/prune': 'false' } }),
    };
    const s = await setup('confirm', files, ['--prune-mode', 'confirm', '--prune-grace', '1s', '--debounce', '50ms']);
    await s.untilRow('b in sync', 'b', synced);
    const status = await s.daemon.status();
    expect((status['daemon'] as { prune: unknown }).prune).toEqual({ enabled: true, mode: 'confirm', graceMs: 1_000 });
    expect((await s.rows()).get('kept')?.pruneKept).toBe(true);
    const id = s.idOf('b')!;
    await rm(join(s.dir, 'b.yaml'));
    const pending = await s.untilRow('b DeletePending', 'b', (r) => r.sync.reason === 'DeletePending');
    expect(pending.pendingDelete).toMatchObject({ confirm: true, due: null });
    expect(pending.reason).toContain('converge reconcile --confirm-delete b');
    const reconcile = (...args: string[]) =>
      runConverge(['reconcile', ...args, '--url', s.daemon.url], { CONVERGE_WEBHOOK_TOKEN: HOOK });
    // Past the grace, reconciled again: still nothing deleted.
    await sleep(1_200);
    const plain = await reconcile();
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    expect((await s.rows()).get('b')?.sync.reason).toBe('DeletePending');
    expect(s.deletes()).toEqual([]);
    // A name with no delete pending deletes nothing, and says so (exit 1).
    const wrong = await reconcile('--confirm-delete', 'a');
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain('No delete pending (nothing deleted): a; pending now: Deployment/b');
    expect(s.deletes()).toEqual([]);
    // Names are required: a delete is confirmed by name.
    const none = await reconcile('--confirm-delete');
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('--confirm-delete takes the NAMEs');

    const confirmed = await reconcile('--confirm-delete', 'b');
    expect(confirmed.code, confirmed.stdout + confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toContain('Delete confirmed and enqueued for: Deployment/b');
    await until(
      'the DELETE of b',
      () => s.deletes().some((r) => r.deploymentId === id && r.status === 204),
      60_000,
      50,
    );
    await reconcile();
    await stop(s.daemon);
    expect(s.deletes().filter((r) => r.deploymentId === id)).toHaveLength(1);
    expect(s.deletes().filter((r) => r.status === 204)).toHaveLength(1);
    expect(s.idOf('a')).toBeDefined();
    expect(s.idOf('kept')).toBeDefined();
  }, 120_000);
});
