// The flap guard against a running daemon (`converge run` as a child, resync 1 s): an outside writer that keeps changing a
// healed field gets at most flap_limit writes from converge, then a Conflict in /status, the metrics, one log line and
// `converge status`; a changed manifest resumes writing. Every write says which manifests it came from.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startEmulator } from '../../src/emulator/server.js';
import { deletePrefix, killAll, MAIN, startDaemonChild, testPrefix, until, writeManifest } from './daemon-helpers.js';
import { runConverge } from './helpers.js';
import { patchesSetting } from '../helpers/flap.js';
import { internalDockerYaml } from '../helpers/manifests.js';

const run = promisify(execFile);
const NAME = 'flap-d';
const KEY = `Deployment/${NAME}`;
const HOOK = 'flap-guard-test-token';

interface Row {
  key: string;
  state: string;
  reason: string | null;
  syncReason?: string;
  conflict?: { reason: string; message: string; fields?: string[] };
  appliedFrom?: { kind: string; id: string };
}

afterAll(killAll);

describe('the flap guard in the daemon', () => {
  it('an outside writer every 0.7 s: flap_limit heals, then Conflict (status, metrics, one log line, converge status); a manifest change resumes', async () => {
    const emulator = await startEmulator({ buildMs: 0 });
    const dir = await mkdtemp(join(tmpdir(), 'converge-flap-'));
    const prefix = testPrefix('flap');
    let writing = true;
    let writer: Promise<void> | undefined;
    const d = await startDaemonChild(
      dir,
      [
        '--api-url',
        emulator.url,
        '--redis-prefix',
        prefix,
        '--resync',
        '1s',
        '--debounce',
        '50ms',
        '--flap-window',
        '1m',
        '--flap-limit',
        '2',
        '--log-level',
        'info',
      ],
      { CONVERGE_WEBHOOK_TOKEN: HOOK },
    );
    try {
      await writeManifest(join(dir, 'web.yaml'), internalDockerYaml(NAME, 2));
      const live = () => emulator.store.allDeployments().find((x) => x.name === NAME);
      const row = async (): Promise<Row | undefined> =>
        ((await d.status()).resources as unknown as Row[]).find((r) => r.key === KEY);
      await until(
        'the deployment to be created and synced',
        async () => live() && (await row())?.state === 'synced',
        20_000,
        100,
      );
      const id = live()!.id;

      // the outside writer: max_scale 9 every 0.7 s, whatever converge does
      writer = (async () => {
        while (writing) {
          await fetch(`${emulator.url}/v2/deployments/${id}`, {
            method: 'PATCH',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ source_config: { resource_spec: { max_scale: 9 } } }),
          });
          await sleep(700);
        }
      })();
      const held = await until(
        'a Conflict in /status',
        async () => {
          const r = await row();
          return r?.syncReason === 'Conflict' ? r : undefined;
        },
        20_000,
        100,
      );
      // two resyncs more while the writer still writes: nothing more is sent
      const total = async (): Promise<number> => (await d.status()).reconciles?.total ?? 0;
      const target = (await total()) + 2;
      await until('two more reconciles while the writer writes', async () => (await total()) >= target, 15_000, 50);
      writing = false;
      await writer;

      expect(patchesSetting(emulator.requestLog, id, 2)).toBe(2);
      expect(held.state).toBe('out_of_sync');
      expect(held.conflict).toMatchObject({
        reason: 'changed_outside',
        fields: ['source_config.resource_spec.max_scale'],
      });
      expect(held.reason).toMatch(
        /^Conflict: changed outside converge: source_config\.resource_spec\.max_scale put back 2 times within flap_window \(1m\)/,
      );
      expect(held.appliedFrom).toMatchObject({ kind: 'content', id: expect.stringMatching(/^[0-9a-f]{12}$/) });
      expect((await d.status()).conflicts).toEqual([KEY]);

      const samples = parsePrometheusText(await d.metricsText());
      const value = (name: string, labels: Record<string, string> = {}) =>
        samples
          .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
          .reduce((n, s) => n + s.value, 0);
      expect(value('converge_conflicts_total', { kind: 'Deployment', reason: 'changed_outside' })).toBe(1);
      expect(value('converge_conflict_resources')).toBe(1);
      // logged once, at warn, however many resyncs met it
      expect(d.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Conflict:'))).toHaveLength(1);
      const wrote = d.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('wrote'));
      expect(wrote.length).toBe(3);
      for (const line of wrote) expect(line.msg).toMatch(/ \(applied from content [0-9a-f]{12}\)$/);

      const text = (await run(process.execPath, [MAIN, 'status', '--url', d.url])).stdout;
      expect(text).toContain(`Conflict (converge stopped writing to these): ${KEY}`);
      expect(text).toMatch(
        /Deployment\s+flap-d\s+out_of_sync\s+healthy\s+Conflict\s+update\s+Conflict: changed outside converge: .* \(applied from content [0-9a-f]{12}\)/,
      );
      expect(text).toMatch(/Manifests: not in git, content [0-9a-f]{12}/);

      // the writer has stopped: an operator releases the conflict, and the reconcile it runs puts max_scale 2 back, once
      const retry = await runConverge(['reconcile', '--retry-failed', NAME, '--url', d.url, '--output', 'json'], {
        CONVERGE_WEBHOOK_TOKEN: HOOK,
      });
      expect(retry.code, retry.stderr).toBe(0);
      expect(JSON.parse(retry.stdout).retryFailed).toMatchObject({ released: [KEY], rebuilt: [], notHeld: [] });
      await until(
        'the released resource to be written again',
        async () =>
          (live()!.source_config as { resource_spec?: { max_scale?: number } }).resource_spec?.max_scale === 2 &&
          (await row())?.state === 'synced',
        10_000,
        100,
      );
      expect(patchesSetting(emulator.requestLog, id, 2)).toBe(3);
      expect((await row())?.syncReason).toBeUndefined();

      // the manifest changes: a new desired state is written
      await writeManifest(join(dir, 'web.yaml'), internalDockerYaml(NAME, 4));
      await until(
        'the changed manifest to be written',
        async () =>
          (live()!.source_config as { resource_spec?: { max_scale?: number } }).resource_spec?.max_scale === 4 &&
          (await row())?.syncReason === undefined,
        10_000,
        100,
      );
      expect(patchesSetting(emulator.requestLog, id, 4)).toBe(1);
      const after = parsePrometheusText(await d.metricsText());
      expect(
        after.find((x) => x.name === 'converge_conflicts_total' && x.labels.reason === 'changed_outside')?.value,
      ).toBe(1);
      expect(after.find((x) => x.name === 'converge_conflict_resources')?.value).toBe(0);
    } finally {
      writing = false;
      await writer;
      d.signal('SIGTERM');
      await d.exited;
      await emulator.close();
      await rm(dir, { recursive: true, force: true });
      await deletePrefix(prefix);
    }
  }, 60_000);
});
