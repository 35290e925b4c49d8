// A stale term, end to end (issue 48): two replicas on one Redis prefix, replica A reaching Redis through a TCP proxy the test pauses. A leads and rolls out; the proxy is paused while A's rollouts finish (A reads them DEPLOYED, its folds held in the proxy); A loses the lease; B leads and writes a newer state of the same resources (an edit); B stops; the proxy resumes and A leads again and folds another resource. /status and `converge history` show B's states, and no notification of A's old term is sent after the resume.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { OPS_WEBHOOK_CONFIG, startReceiver } from '../helpers/notify-receivers.js';
import { pausableProxy } from '../helpers/pausable-proxy.js';
import {
  dockerDeploymentYaml,
  REDIS_URL,
  runConverge,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
  type RecordedRow,
} from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

const FIRST = ['st-a', 'st-b'];
const OTHER = 'st-c';
/** A build ends only when the test moves the emulator's clock past it (`finishBuilds`), never on its own during the test. */
const BUILD_MS = 600_000;

interface HistoryEntry {
  at: string;
  type: string;
  reason: string;
  by: string;
  job: { id: string } | null;
  revision: { id: string; status: string } | null;
}

async function leading(daemon: DaemonHandle): Promise<boolean> {
  return ((await daemon.status()).lease as { leading: boolean }).leading;
}

async function rows(daemon: DaemonHandle): Promise<Map<string, RecordedRow>> {
  const doc = (await daemon.status()) as unknown as { resources: RecordedRow[] };
  return new Map(doc.resources.map((r) => [r.key, r]));
}

/** What a row says of the record: its last job, what it was applied from, its health and the revision of it. */
function recorded(row: RecordedRow | undefined): unknown {
  return {
    job: row?.job?.id ?? null,
    appliedFrom: row?.appliedFrom?.id ?? null,
    health: row?.health.status ?? null,
    revision: row?.health.revisionId ?? null,
  };
}

describe('a stale term', () => {
  it(
    "A paused while its rollouts finish, B leads and edits, A resumes: B's states stay, nothing of A's old term is told",
    { timeout: 150_000 },
    async (t) => {
      let shift = 0;
      const e = await startEmulator({ buildMs: BUILD_MS, clock: () => Date.now() + shift });
      atEnd(t, () => e.close());
      /** Every build started so far is done: the emulator's clock jumps past its end. */
      const finishBuilds = (): void => {
        shift += BUILD_MS + 1_000;
      };
      const hook = await startReceiver();
      atEnd(t, () => hook.close());
      const proxy = await pausableProxy(REDIS_URL);
      atEnd(t, () => proxy.close());
      const dir = await tempDir('stale-term');
      const etc = await tempDir('stale-term-config');
      atEnd(t, () => rm(dir, { recursive: true, force: true }));
      atEnd(t, () => rm(etc, { recursive: true, force: true }));
      const config = join(etc, 'converge.yaml');
      await writeFile(config, OPS_WEBHOOK_CONFIG);
      const prefix = prefixOf(t, 'stale-term');
      const manifests = (maxScale: number) =>
        Object.fromEntries(FIRST.map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale })]));
      await writeFiles(dir, manifests(2));
      const args = [
        '--api-url',
        e.url,
        '--redis-prefix',
        prefix,
        '--health-poll',
        '100ms',
        '--resync',
        '1h',
        '--debounce',
        '50ms',
        '--lease',
        '2s',
        '--config',
        config,
        '--log-level',
        'debug',
      ];
      const env = { OPS_URL: `${hook.url}/hooks/ops` };
      const a = await daemonOf(t, dir, [...args, '--redis-url', proxy.url, '--replica-id', 'replica-a'], env);
      await until('A leads', () => leading(a), 30_000, 50);
      const b = await daemonOf(t, dir, [...args, '--redis-url', REDIS_URL, '--replica-id', 'replica-b'], env);
      const keys = FIRST.map((n) => `Deployment/${n}`);

      // A creates both; their first revisions build (until the clock moves).
      await until(
        "A's writes done, the rollouts building",
        async () => {
          const now = await rows(a);
          return keys.every(
            (k) => now.get(k)?.job?.state === 'completed' && now.get(k)?.health.status === 'progressing',
          );
        },
        30_000,
        50,
      );

      // Paused: A's Redis is silent. The builds end now, so A reads them DEPLOYED while it still counts its lease as held
      // (its folds of those readings wait in the proxy), then loses the lease; B takes it.
      proxy.pause();
      finishBuilds();
      await until('B leads', () => leading(b), 30_000, 50);
      await a.waitForLine((l) => String(l.msg).startsWith('leader lease lost'), 10_000);

      // B follows the first rollouts to their end, then the edit: a new max_scale, new revisions, built and told.
      await until(
        'B tells the first rollouts',
        () => hook.delivered().filter((d) => d.type === 'rollout_succeeded').length === FIRST.length,
        30_000,
        50,
      );
      await writeFiles(dir, manifests(3));
      await until(
        "B's writes of the edit done",
        async () => {
          const now = await rows(b);
          return keys.every(
            (k) =>
              now.get(k)?.health.status === 'progressing' &&
              e.store.allDeployments().find((d) => `Deployment/${d.name}` === k)?.revisions.length === 2,
          );
        },
        30_000,
        50,
      );
      finishBuilds();
      await until(
        'B tells the second rollouts',
        () => hook.delivered().filter((d) => d.type === 'rollout_succeeded').length === 2 * FIRST.length,
        30_000,
        50,
      );
      const byB = await until(
        "B's rows healthy at the new revisions",
        async () => {
          const now = await rows(b);
          return keys.every(
            (k) =>
              now.get(k)?.health.status === 'healthy' &&
              now.get(k)?.health.revisionId ===
                e.store.allDeployments().find((d) => `Deployment/${d.name}` === k)?.latest_revision_id,
          )
            ? now
            : undefined;
        },
        30_000,
        50,
      );
      await b.kill('SIGTERM');

      const history = async (key: string): Promise<HistoryEntry[]> => {
        const run = await runConverge([
          'history',
          key,
          '--output',
          'json',
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefix,
        ]);
        expect(run.code, run.stderr).toBe(0);
        return (JSON.parse(run.stdout) as { events: HistoryEntry[] }).events;
      };
      const historiesBefore = new Map(await Promise.all(keys.map(async (k) => [k, await history(k)] as const)));
      const toldBefore = hook.requests.length;

      // Another resource for A's next term; then A's Redis speaks again: what it sent in its old term arrives now.
      await writeFiles(dir, { [`${OTHER}.yaml`]: dockerDeploymentYaml(OTHER, { maxScale: 2 }) });
      expect(proxy.heldBytes()).toBeGreaterThan(0);
      proxy.resume();
      await until('A leads again', () => leading(a), 30_000, 50);
      await until(
        'A writes the other resource',
        async () => (await rows(a)).get(`Deployment/${OTHER}`)?.job?.state === 'completed',
        30_000,
        50,
      ).catch((error: Error) => {
        throw new Error(
          `${error.message}\nA's log (last lines):\n${a.lines
            .slice(-40)
            .map((l) => JSON.stringify(l).slice(0, 400))
            .join('\n')}`,
        );
      });
      finishBuilds();
      await until(
        'A tells the other rollout',
        () =>
          hook
            .delivered()
            .some((d) => d.type === 'rollout_succeeded' && (d.resource as { name: string }).name === OTHER),
        30_000,
        50,
      );

      // /status (A's, and read again after A's resumed folds settled) shows B's states of the first resources.
      const byA = await rows(a);
      for (const k of keys) expect(recorded(byA.get(k)), k).toEqual(recorded(byB.get(k)));
      // The history of each ends with B's states: what was added once A resumed is of A's new term only (its decision that
      // B's write runs: B's job and revision), nothing of its old term (an older revision or job).
      for (const k of keys) {
        const after = await history(k);
        const seen = new Set(historiesBefore.get(k)!.map((x) => JSON.stringify(x)));
        const b = byB.get(k)!;
        const added = after
          .filter((x) => !seen.has(JSON.stringify(x)))
          .map((x) => ({ ...x, at: undefined, message: undefined }));
        for (const x of added) {
          expect(x, k).toMatchObject({
            by: 'replica-a',
            job: { id: b.job!.id },
            revision: { id: b.health.revisionId },
          });
        }
        const last = after.find((x) => x.revision !== null);
        expect(last?.revision, k).toMatchObject({ id: byB.get(k)!.health.revisionId, status: 'DEPLOYED' });
      }
      // No notification of A's old term after the resume: only the other resource's own.
      const told = hook.requests
        .slice(toldBefore)
        .map((r) => JSON.parse(r.body) as { type: string; resource: { name: string } });
      expect(told.filter((x) => x.resource.name !== OTHER).map((x) => `${x.type} ${x.resource.name}`)).toEqual([]);
    },
  );
});
