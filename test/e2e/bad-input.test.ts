// The broken-manifest corpus beside valid manifests in a running daemon's directory, plus the cases only a running
// system can make (a symlink loop, a FIFO, a huge file, a binary file, files vanishing while read): the daemon neither
// crashes nor hangs, reports each problem once at file:line:column, and the valid manifests still converge.
import { execFileSync } from 'node:child_process';
import { cp, mkdir, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MANIFEST_BYTES } from '../../src/core/manifest/file-bytes.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { CORPUS } from '../manifest/bad-corpus-table.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  liveMaxScale,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
  type DaemonStatus,
} from './helpers.js';

const BAD_DIR = fileURLToPath(new URL('../fixtures/bad/', import.meta.url));
const GOOD = Array.from({ length: 5 }, (_, i) => `good-${i}`);
const ENV = { GOOD_TOKEN: 'bad-input-good-token-61f0', EXAMPLE_OPENAI_API_KEY: 'bad-input-example-key-93aa' };

type Row = [file: string, line: number, column: number, severity: 'error' | 'warning', text: string];

/** Problems only a running system makes, each at its exact place (made in beforeAll). */
const RUNTIME: Row[] = [
  ['runtime/huge.yaml', 1, 1, 'error', `file is larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`],
  ['runtime/binary.yaml', 3, 1, 'error', 'file holds a NUL byte'],
  ['runtime/fifo.yaml', 1, 1, 'warning', 'is a named pipe (FIFO), not a regular file'],
  ['runtime/self-loop.yaml', 1, 1, 'warning', 'symbolic link loop'],
  ['runtime/loop/back', 1, 1, 'warning', 'a folder already read'],
];

/** The loader finds nothing wrong with a missing environment variable; the plan does, at the line naming it. */
const PLAN_TIME: Row[] = [
  ['secret-missing-env.yaml', 10, 25, 'error', 'environment variable CONVERGE_TEST_SURELY_UNSET_VARIABLE is not set'],
  ['secret-missing-file.yaml', 10, 26, 'error', 'secret file /nonexistent/converge-test/signing-key does not exist'],
];

function expectedRows(): Row[] {
  const rows: Row[] = [];
  for (const [file, entry] of Object.entries(CORPUS)) {
    for (const [line, column, , text] of entry.diagnostics) rows.push([file, line, column, 'error', text]);
  }
  return [...rows, ...RUNTIME, ...PLAN_TIME];
}

describe('the daemon over the broken-manifest corpus', () => {
  let emulator: RunningEmulator;
  let daemon: DaemonHandle;
  let dir: string;
  const prefix = testPrefix('bad');

  beforeAll(async () => {
    emulator = await startEmulator({ buildMs: 0 });
    dir = await tempDir('bad');
    await cp(BAD_DIR, dir, { recursive: true });
    const good: Record<string, string> = {};
    for (const name of GOOD)
      good[`good/${name}.yaml`] = dockerDeploymentYaml(name, { maxScale: 2, secrets: [['TOKEN', 'GOOD_TOKEN']] });
    await writeFiles(dir, good);
    await mkdir(join(dir, 'runtime', 'loop'), { recursive: true });
    await writeFile(join(dir, 'runtime', 'huge.yaml'), `# ${'x'.repeat(MAX_MANIFEST_BYTES)}\n`);
    await writeFile(
      join(dir, 'runtime', 'binary.yaml'),
      Buffer.concat([
        Buffer.from('apiVersion: converge/v1\nkind: Deployment\n'),
        Buffer.from([0, 1, 2, 0xff, 0xfe, 0x89, 0x50, 0x4e, 0x47]),
        Buffer.alloc(4096, 7),
      ]),
    );
    execFileSync('mkfifo', [join(dir, 'runtime', 'fifo.yaml')]);
    await symlink('self-loop.yaml', join(dir, 'runtime', 'self-loop.yaml'));
    await symlink('..', join(dir, 'runtime', 'loop', 'back'));
  }, 120_000);

  afterAll(async () => {
    await killAllConverge();
    await emulator?.close();
    await dropPrefix(prefix);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('stays up, reports each broken file at file:line:column, converges the valid manifests beside them', async () => {
    daemon = await startDaemon(
      dir,
      [
        '--api-url',
        emulator.url,
        '--redis-prefix',
        prefix,
        '--debounce',
        '50ms',
        '--resync',
        '1m',
        '--log-level',
        'info',
      ],
      ENV,
    );
    const valid = [...GOOD, 'valid-neighbour', 'neighbour-good'];
    await until(
      'the valid manifests to converge',
      () => valid.every((n) => emulator.store.allDeployments().some((d) => d.name === n)),
      30_000,
      100,
    );
    const status: DaemonStatus = await until(
      'a reconcile that planned the directory',
      async () => {
        const s = await daemon.status();
        return s.plan && s.lastReconcile?.ok ? s : undefined;
      },
      10_000,
      100,
    );
    expect(await daemon.healthz()).toBe(200);

    // /status: exactly the expected diagnostics, each at its file:line:column, nothing else
    const got = status.plan!.diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.severity}`);
    const want = expectedRows().map(([file, line, column, severity]) => `${file}:${line}:${column} ${severity}`);
    expect([...got].sort()).toEqual([...want].sort());
    for (const [file, line, column, , text] of expectedRows()) {
      const d = status.plan!.diagnostics.find((x) => x.file === file && x.line === line && x.column === column);
      expect(d?.message, `${file}:${line}:${column}`).toContain(text);
    }

    // the log: one "manifest problem" line per diagnostic, in the file:line:column form
    const logged = daemon.lines.filter((l) => l.msg === 'manifest problem').map((l) => String(l.diagnostic));
    expect(logged).toHaveLength(want.length);
    for (const [file, line, column, severity, text] of expectedRows()) {
      expect(
        logged.filter((l) => l.startsWith(`${file}:${line}:${column}: ${severity}: `) && l.includes(text)),
        `${file}:${line}:${column}`,
      ).toHaveLength(1);
    }

    // every resource a broken file names is blocked with a reason pointing at its file; nothing of them was written
    const rows = new Map(status.resources.map((r) => [r.name, r]));
    for (const [file, entry] of Object.entries(CORPUS)) {
      if (!entry.blocks) continue;
      const row = rows.get(entry.blocks);
      expect(row?.state, entry.blocks).toBe('blocked');
      expect(row?.error ?? '', entry.blocks).toMatch(
        file === 'duplicate-a.yaml' || file === 'duplicate-b.yaml'
          ? /duplicate-a\.yaml:4:9/
          : new RegExp(`${file.replace(/\./g, '\\.')}:\\d+:\\d+`),
      );
    }
    expect(rows.get('missing-env')?.state).toBe('blocked');
    expect(rows.get('missing-env')?.error).toMatch(/secret-missing-env\.yaml:10:25/);
    expect(rows.get('missing-file')?.state).toBe('blocked');
    expect(rows.get('missing-file')?.error).toMatch(/secret-missing-file\.yaml:10:26/);
    const written = new Set(
      emulator.requestLog.filter((e) => e.method !== 'GET').map((e) => (e.body as { name?: string } | undefined)?.name),
    );
    expect([...written].sort()).toEqual([...valid].sort());
    await until(
      'the valid resources to show as synced',
      async () => {
        const now = new Map((await daemon.status()).resources.map((r) => [r.name, r.state]));
        return valid.every((name) => now.get(name) === 'synced');
      },
      15_000,
      200,
    );

    // no stack trace anywhere
    expect(daemon.stdout() + daemon.stderr()).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
    expect(daemon.alive()).toBe(true);
  }, 60_000);

  it('files vanishing while read: reconciles keep running, none fails, the daemon stays healthy', async () => {
    const before = (await daemon.status()).reconciles!;
    const churn = join(dir, 'churn');
    await mkdir(churn, { recursive: true });
    // a broken manifest (unknown field), padded so that reading it takes a moment
    const body =
      dockerDeploymentYaml('churned', { maxScale: 1 }).replace('spec:\n', 'spec:\n  replicas: 3\n') +
      `# ${'y'.repeat(100_000)}\n`;
    // churn until the daemon has met a file that vanished between listing and reading (at most 10 s)
    const vanished = () =>
      daemon.lines.some(
        (l) =>
          l.msg === 'manifest problem' &&
          /^churn\/vanish-\d+\.yaml:1:1: warning: file disappeared while being read/.test(String(l.diagnostic)),
      );
    const stopAt = Date.now() + 10_000;
    let made = 0;
    let healthy = true;
    let churning = true;
    const probe = (async () => {
      while (churning) {
        healthy &&= (await daemon.healthz()) === 200;
        await sleep(100);
      }
    })();
    // each round: a batch of files appears, the debounced reconcile starts listing them, and they are deleted from
    // the end of the (sorted) list while it reads them
    while (Date.now() < stopAt && (made < 100 || !vanished())) {
      const batch = Array.from({ length: 30 }, (_, i) => join(churn, `vanish-${String(i).padStart(2, '0')}.yaml`));
      for (const file of batch) await writeFile(file, body);
      await sleep(60 + (made % 5) * 10);
      for (const file of [...batch].reverse()) await unlink(file).catch(() => undefined);
      made += batch.length;
      await sleep(20);
    }
    churning = false;
    await probe;
    await rm(churn, { recursive: true, force: true });
    const calm = Date.now();
    const after = await until(
      'a reconcile begun after the churn',
      async () => {
        const s = await daemon.status();
        const last = s.lastReconcile as { ok: boolean; startedAt: string } | null;
        return last?.ok && Date.parse(last.startedAt) > calm ? s : undefined;
      },
      10_000,
      100,
    );
    expect(vanished()).toBe(true);
    expect(healthy).toBe(true);
    expect(after.reconciles!.failed).toBe(before.failed);
    expect(after.reconciles!.total).toBeGreaterThanOrEqual(before.total + 2);
    // the vanished files left nothing behind
    expect(emulator.store.allDeployments().some((d) => d.name === 'churned')).toBe(false);
    expect(after.plan!.diagnostics.filter((d) => d.file.startsWith('churn/'))).toEqual([]);

    // the watcher still works: an edit of a valid manifest lands
    await writeFile(
      join(dir, 'good', 'good-0.yaml'),
      dockerDeploymentYaml('good-0', { maxScale: 4, secrets: [['TOKEN', 'GOOD_TOKEN']] }),
    );
    await until(
      'the edit to land',
      () => liveMaxScale(emulator.store.allDeployments().find((d) => d.name === 'good-0')) === 4,
      15_000,
      100,
    );
    expect(daemon.alive()).toBe(true);
  }, 60_000);
});
