// What could not be read is unknown, never absent: an owned deployment's file broken by a typo or a YAML error is never
// deleted (plan --prune, apply --prune, a daemon started with prune on), apply writes nothing beside it unless
// --allow-partial, and a file removed cleanly is still pruned. Through the built binary, against the emulator.
import { rm, writeFile } from 'node:fs/promises';
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
} from './helpers.js';

/** The two ways a file stops loading: a misspelt key (a schema error) and a YAML syntax error, each at its first error. */
const BREAKAGES = [
  {
    label: 'a typo (metdata:)',
    text: dockerDeploymentYaml('b', { maxScale: 1 }).replace('metadata:', 'metdata:'),
    at: 'b.yaml:1:1',
  },
  {
    label: 'a YAML error (metadata: {{{)',
    text: 'apiVersion: converge/v1\nkind: Deployment\nmetadata: {{{\n',
    at: 'b.yaml:3:11',
  },
];

describe('a file that fails to load is unknown, never absent', () => {
  let emulator: RunningEmulator;
  let dir: string;
  const prefix = testPrefix('unreadable');
  let common: string[];

  /** Requests that change the service (everything but GET), so far. */
  const writes = () => emulator.requestLog.filter((r) => r.method !== 'GET');
  const deletes = () => emulator.requestLog.filter((r) => r.method === 'DELETE');
  const live = (name: string) =>
    emulator.store.allDeployments().some((d) => d.name === name && d.status !== 'AWAITING_DELETE');

  beforeAll(async () => {
    emulator = await startEmulator({ buildMs: 0 });
    dir = await tempDir('unreadable');
    common = ['--api-url', emulator.url, '--redis-prefix', prefix];
    await writeFiles(
      dir,
      Object.fromEntries(['a', 'b', 'c'].map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale: 1 })])),
    );
    const created = await runConverge(['apply', dir, ...common]);
    expect(created.code, created.stdout + created.stderr).toBe(0);
    expect(['a', 'b', 'c'].every(live)).toBe(true);
  }, 60_000);

  afterAll(async () => {
    await killAllConverge();
    await emulator?.close();
    await dropPrefix(prefix);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const broken of BREAKAGES) {
    it(`${broken.label}: plan --prune and apply --prune delete nothing, and apply writes nothing beside it`, async () => {
      await writeFile(join(dir, 'b.yaml'), broken.text);
      // A change beside the broken file, which apply must not write either.
      await writeFile(join(dir, 'a.yaml'), dockerDeploymentYaml('a', { maxScale: 3 }));
      const before = writes().length;

      const planned = await runConverge(['plan', dir, '--prune', ...common]);
      expect(planned.code, planned.stderr).toBe(1);
      expect(planned.stdout).toContain(`Note: prune refused, nothing is deleted: ${broken.at} fails to load;`);
      expect(planned.stdout).toContain(
        `! blocked Deployment/b\n      # unknown: no file that loads declares it, and ${broken.at} fails to load`,
      );
      expect(planned.stdout).not.toContain('delete Deployment/b');
      expect(planned.stdout).not.toContain('no longer declared');

      const applied = await runConverge(['apply', dir, '--prune', ...common]);
      expect(applied.code, applied.stderr).toBe(1);
      expect(applied.stdout).toContain(`${broken.at}: error:`);
      // The refusal names the file as it opens from the working directory: the directory as typed (absolute here) and the path in it.
      expect(applied.stdout).toContain(`Apply refused: nothing was written: ${join(dir, broken.at)} fails to load;`);
      expect(applied.stdout).not.toMatch(/done +Deployment/);
      // Nothing reached the service: no PATCH of a, no DELETE of b (nor the probe for DELETE).
      expect(writes().slice(before)).toEqual([]);
      expect(live('b')).toBe(true);
    }, 60_000);

    it(`${broken.label}: a daemon started with prune on deletes nothing at its first reconcile and after`, async () => {
      await writeFile(join(dir, 'b.yaml'), broken.text);
      const deletesBefore = deletes().length;
      const daemon = await startDaemon(dir, [
        ...common,
        '--prune',
        '--resync',
        '1s',
        '--debounce',
        '50ms',
        '--log-level',
        'info',
      ]);
      // Two reconciles of this daemon, by its own log lines (the reconcile count on /status continues the record of the
      // daemon before it on this prefix).
      await until(
        'two reconciles of the directory',
        async () => daemon.lines.filter((l) => l.msg === 'reconciled').length >= 2,
        30_000,
        100,
      );
      const status = await daemon.status();
      const row = status.resources.find((r) => r.key === 'Deployment/b');
      expect(row, JSON.stringify(status.resources)).toMatchObject({
        action: 'blocked',
        sync: { status: 'blocked', reason: 'ManifestErrors' },
      });
      expect(row!.error ?? '').toContain(`unknown: no file that loads declares it, and ${broken.at} fails to load`);
      await daemon.waitForLine(
        (l) => l.msg === 'prune refused: nothing is deleted' && String(l.reason).includes(`${broken.at} fails to load`),
        5_000,
      );
      await daemon.kill('SIGTERM');
      expect(deletes().slice(deletesBefore)).toEqual([]);
      expect(live('b')).toBe(true);
    }, 60_000);
  }

  it('--allow-partial writes the resources of the files that load, and still deletes nothing', async () => {
    await writeFile(join(dir, 'b.yaml'), BREAKAGES[0]!.text);
    await writeFile(join(dir, 'a.yaml'), dockerDeploymentYaml('a', { maxScale: 4 }));
    const before = writes().length;
    const applied = await runConverge(['apply', dir, '--prune', '--allow-partial', ...common]);
    expect(applied.code, applied.stderr).toBe(1);
    expect(applied.stdout).toMatch(/done +Deployment\/a: updated/);
    expect(applied.stdout).not.toContain('nothing was written');
    expect(
      writes()
        .slice(before)
        .map((r) => `${r.method} ${r.path}`),
    ).toEqual([expect.stringMatching(/^PATCH \/v2\/deployments\//)]);
    expect(live('b')).toBe(true);
  }, 60_000);

  it('a file removed cleanly is still pruned', async () => {
    await rm(join(dir, 'b.yaml'));
    const applied = await runConverge(['apply', dir, '--prune', ...common]);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/deleted +Deployment\/b|done +Deployment\/b: deleted/);
    expect(live('b')).toBe(false);
    expect(live('c')).toBe(true);
  }, 60_000);
});
