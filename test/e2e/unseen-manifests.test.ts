// What could not be read is unknown, never absent: an owned manifest's path that becomes a symbolic link whose target
// does not exist, a directory, a FIFO or a file that cannot be opened gets 0 DELETE (the daemon with a short prune_grace,
// plan --prune and apply --prune, which refuse naming the path and what it is); and an empty or unreadable file holds back
// only what it declared: a file removed for good beside it is still deleted. Through the built binary, against the emulator.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  type ResourceRow,
} from './helpers.js';

interface Row extends ResourceRow {
  sync: { status: string; reason: string; message: string };
}

/** prune_grace of the daemons here: a delete read from a removal would be sent about this long after it was seen. */
const GRACE_MS = 1_000;

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** An emulator and a manifest directory holding `files`, applied once (every deployment created by converge). */
async function applied(label: string, files: Record<string, string>) {
  const emulator: RunningEmulator = await startEmulator({ buildMs: 0 });
  const dir = await tempDir(`unseen-${label}`);
  const prefix = testPrefix(`unseen-${label}`);
  cleanups.push(
    () => emulator.close(),
    () => dropPrefix(prefix),
    () => rm(dir, { recursive: true, force: true }),
  );
  const common = ['--api-url', emulator.url, '--redis-prefix', prefix];
  await writeFiles(dir, files);
  const created = await runConverge(['apply', dir, ...common]);
  expect(created.code, created.stdout + created.stderr).toBe(0);
  return {
    emulator,
    dir,
    common,
    /** Every DELETE the service received (the probe for the endpoint included). */
    deletes: () => emulator.requestLog.filter((r) => r.method === 'DELETE'),
    idOf: (name: string) =>
      emulator.store.allDeployments().find((d) => d.name === name && d.status !== 'AWAITING_DELETE')?.id,
  };
}

/** `converge run --prune` with a short grace over the applied directory, and its rows by name. */
async function daemonOn(s: Awaited<ReturnType<typeof applied>>, resync: string) {
  const daemon = await startDaemon(s.dir, [
    ...s.common,
    '--prune',
    '--prune-grace',
    `${GRACE_MS}ms`,
    '--resync',
    resync,
    '--debounce',
    '50ms',
    '--log-level',
    'info',
  ]);
  const rows = async (): Promise<Map<string, Row>> =>
    new Map(((await daemon.status()).resources as Row[]).map((r) => [r.name, r]));
  const untilRow = (what: string, name: string, test: (row: Row) => boolean): Promise<Row> =>
    until(
      what,
      async () => {
        const row = (await rows()).get(name);
        return row && test(row) ? row : undefined;
      },
      60_000,
      50,
    );
  return { daemon, rows, untilRow };
}

/** Waits for a reconcile that started at `at` or later and has ended (the daemon's /status history). */
async function reconciledAfter(daemon: DaemonHandle, at: number): Promise<void> {
  await until(
    `a reconcile started after ${new Date(at).toISOString()}`,
    async () => {
      const history = ((await daemon.status()).history ?? []) as Array<{ startedAt: string }>;
      return history.some((h) => Date.parse(h.startedAt) >= at);
    },
    60_000,
    100,
  );
}

const synced = (row: Row) => row.action === 'noop' && row.sync.status === 'synced';

/** Each way an owned manifest's path stops being a file converge can read, and what the warning and reason call it. */
const BREAKS: Array<{
  label: string;
  what: string;
  root?: boolean;
  files?: Record<string, string>;
  prepare?: (dir: string) => Promise<void>;
  make: (dir: string) => Promise<void>;
}> = [
  {
    label: 'a symbolic link whose target went missing',
    what: 'is a symbolic link whose target does not exist',
    // b.yaml is a link to a file in a hidden folder of the tree (followed; the folder itself is not walked).
    files: { '.targets/b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }) },
    prepare: (dir) => symlink('.targets/b.yaml', join(dir, 'b.yaml')),
    make: (dir) => rm(join(dir, '.targets', 'b.yaml')),
  },
  {
    label: 'a directory where the file was',
    what: 'is a directory',
    make: async (dir) => {
      await rm(join(dir, 'b.yaml'));
      await mkdir(join(dir, 'b.yaml'));
    },
  },
  {
    label: 'a FIFO where the file was',
    what: 'is a named pipe (FIFO)',
    make: async (dir) => {
      await rm(join(dir, 'b.yaml'));
      execFileSync('mkfifo', [join(dir, 'b.yaml')]);
    },
  },
  {
    label: 'a file that cannot be opened (mode 000)',
    what: 'cannot be read (EACCES)',
    // As root, mode 000 does not stop a read: the case cannot be made.
    root: false,
    make: (dir) => chmod(join(dir, 'b.yaml'), 0o000),
  },
];

const AS_ROOT = process.getuid?.() === 0;

// The daemon cases run concurrently (they mostly wait on a daemon past its grace), each with its own emulator,
// directory and Redis prefix (applied).
describe.concurrent('the daemon: a path that could not be read is unknown, never a removal', () => {
  for (const broken of BREAKS.slice(0, 2)) {
    it(`${broken.label}: converge run --prune (prune_grace 1 s) sends 0 DELETE, well past the grace; the row is unknown`, async () => {
      const files = {
        'a.yaml': dockerDeploymentYaml('a', { maxScale: 1 }),
        ...(broken.files ?? { 'b.yaml': dockerDeploymentYaml('b', { maxScale: 1 }) }),
      };
      const s = await applied(`daemon-${broken.label.split(' ')[1]}`, files);
      if (broken.prepare) {
        // The link made after the first apply: apply again through it, so the record names b.yaml as b's file.
        await rm(join(s.dir, 'b.yaml'), { force: true });
        await broken.prepare(s.dir);
        const again = await runConverge(['apply', s.dir, ...s.common]);
        expect(again.code, again.stdout + again.stderr).toBe(0);
      }
      expect(s.idOf('b')).toBeDefined();
      const d = await daemonOn(s, '1s');
      await d.untilRow('b in sync', 'b', synced);
      await broken.make(s.dir);
      const unknown = await d.untilRow('b unknown', 'b', (r) => r.action === 'blocked');
      const seen = Date.now();
      expect(unknown.error ?? '').toContain(`unknown: b.yaml:1:1 ${broken.what}, which declared it before`);
      expect(unknown.sync.reason).toBe('ManifestErrors');
      // A reconcile begun three graces after b was first seen unknown has ended: a removal would have been deleted by then.
      await reconciledAfter(d.daemon, seen + 3 * GRACE_MS);
      expect((await d.rows()).get('b')).toMatchObject({ action: 'blocked', sync: { reason: 'ManifestErrors' } });
      expect(s.deletes()).toEqual([]);
      expect(s.idOf('b')).toBeDefined();
      // The warning names the path and what it is; the refusal is logged once, naming it too.
      const warned = d.daemon.lines.filter((l) => l.msg === 'manifest problem').map((l) => String(l.diagnostic));
      expect(warned).toContainEqual(
        expect.stringMatching(new RegExp(`^b\\.yaml:1:1: warning: ${broken.what.replace(/[()]/g, '\\$&')}`)),
      );
      await d.daemon.waitForLine(
        (l) => l.msg === 'prune refused: nothing is deleted' && String(l.reason).includes(`b.yaml:1:1 ${broken.what}`),
        5_000,
      );
      await d.daemon.kill('SIGTERM');
      expect(s.deletes()).toEqual([]);
    }, 120_000);
  }

  it("an unrelated empty file does not stall a removal: the removed file is deleted once its grace has passed, the empty file's resource is kept", async () => {
    const s = await applied(
      'daemon-unrelated',
      Object.fromEntries(['a', 'b', 'e'].map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale: 1 })])),
    );
    const d = await daemonOn(s, '1h');
    await d.untilRow('b in sync', 'b', synced);
    const [b, e] = [s.idOf('b')!, s.idOf('e')!];
    await writeFile(join(s.dir, 'e.yaml'), '');
    await d.untilRow('e unknown while its file is empty', 'e', (r) => r.action === 'blocked');
    await rm(join(s.dir, 'b.yaml'));
    const removed = Date.now();
    await d.untilRow('b DeletePending', 'b', (r) => r.sync.reason === 'DeletePending');
    await until('the DELETE of b', () => s.deletes().some((r) => r.deploymentId === b && r.status === 204), 60_000, 50);
    // Not before its grace: the DELETE came at least prune_grace after the removal.
    expect(Date.now() - removed).toBeGreaterThanOrEqual(GRACE_MS);
    const row = (await d.rows()).get('e');
    expect(row?.action).toBe('blocked');
    expect(row?.error ?? '').toContain('unknown: e.yaml:1:1 declares nothing now, which declared it before');
    await d.daemon.kill('SIGTERM');
    expect(s.deletes().filter((r) => r.deploymentId === e)).toEqual([]);
    expect(s.idOf('e')).toBeDefined();
    expect(s.idOf('a')).toBeDefined();
  }, 120_000);
});

describe('plan --prune and apply --prune: a path that could not be read is unknown, and refused by name', () => {
  let s: Awaited<ReturnType<typeof applied>>;

  beforeAll(async () => {
    s = await applied(
      'cli',
      Object.fromEntries(['a', 'b', 'c', 'e'].map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale: 1 })])),
    );
  }, 60_000);

  /** b.yaml back as the plain file it was. */
  async function restoreB(): Promise<void> {
    await rm(join(s.dir, 'b.yaml'), { recursive: true, force: true });
    await writeFile(join(s.dir, 'b.yaml'), dockerDeploymentYaml('b', { maxScale: 1 }));
  }

  for (const broken of BREAKS) {
    const make = broken.prepare
      ? (dir: string) => symlink('missing-target.yaml', join(dir, 'b.yaml')).then(() => undefined)
      : broken.make;
    it.skipIf(broken.root === false && AS_ROOT)(
      `${broken.label}: plan --prune and apply --prune exit 1, name b.yaml and what it is, 0 DELETE`,
      async () => {
        await restoreB();
        if (broken.prepare) await rm(join(s.dir, 'b.yaml'));
        await make(s.dir);
        const before = s.deletes().length;
        const refusal = `Note: prune refused, nothing is deleted: b.yaml:1:1 ${broken.what}; nothing could be read where a manifest was, which is not a removal, so the owned resource it declared before is unknown, not deleted;`;

        const planned = await runConverge(['plan', s.dir, '--prune', ...s.common]);
        expect(planned.code, planned.stdout + planned.stderr).toBe(1);
        expect(planned.stdout).toContain(
          `! blocked Deployment/b\n      # unknown: b.yaml:1:1 ${broken.what}, which declared it before;`,
        );
        expect(planned.stdout).toContain(refusal);
        expect(planned.stdout).not.toContain('delete Deployment/b');

        const run = await runConverge(['apply', s.dir, '--prune', ...s.common]);
        expect(run.code, run.stdout + run.stderr).toBe(1);
        expect(run.stdout).toContain(`b.yaml:1:1: warning: ${broken.what}`);
        expect(run.stdout).toContain(refusal);
        expect(s.deletes().slice(before)).toEqual([]);
        expect(s.idOf('b')).toBeDefined();
        await restoreB();
      },
      60_000,
    );
  }

  it("an empty file beside a file removed for good: apply --prune deletes the removed one, keeps the empty one's, exits 1", async () => {
    await restoreB();
    const [c, e] = [s.idOf('c')!, s.idOf('e')!];
    await writeFile(join(s.dir, 'e.yaml'), '');
    await rm(join(s.dir, 'c.yaml'));
    const run = await runConverge(['apply', s.dir, '--prune', ...s.common]);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stdout).toContain('Note: prune deletes only what is known to be removed: e.yaml:1:1 declares nothing;');
    expect(run.stdout).toContain('! blocked Deployment/e');
    expect(s.deletes().filter((r) => r.deploymentId === c && r.status === 204)).toHaveLength(1);
    expect(s.deletes().filter((r) => r.deploymentId === e)).toEqual([]);
    expect(s.idOf('c')).toBeUndefined();
    expect(s.idOf('e')).toBeDefined();
  }, 60_000);
});
