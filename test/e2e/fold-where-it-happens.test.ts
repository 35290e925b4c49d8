// The fold where the event happens (issue 48): a job of `converge apply` on the daemon's prefix is folded into the resource's state by the worker that ran it, so /status shows its appliedFrom, and the WriteRefused hold of a refusal, as it shows those of a job the daemon enqueued; and a FLUSHALL under a running daemon never shows 0 resources and sends no write.
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { rawRedis, REDIS_URL } from '../helpers/redis.js';
import { dockerDeploymentYaml, runConverge, tempDir, until, writeFiles } from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

/** A deployment whose secret makes its body larger than the emulator accepts (--max-body 4096): refused 413. */
const refusedYaml = (name: string): string =>
  dockerDeploymentYaml(name, { maxScale: 4, secrets: [['BLOB', 'BIG_VALUE']] });
const ENV = { BIG_VALUE: 'b'.repeat(6000) };

interface Row {
  key: string;
  sync: { status: string; reason: string };
  job: { id: string; state: string; message?: string } | null;
  hold?: { reason: string; desired: string; message: string };
  appliedFrom?: { kind: string; id: string };
  error: string | null;
}

// The two cases run concurrently: each has its own emulator, directory, Redis prefix and daemon (test/e2e/scoped.ts).
describe.concurrent('a job result is folded where it ran', () => {
  it(
    "a job of converge apply on the daemon's prefix: its appliedFrom and its WriteRefused hold on /status, as a job the daemon enqueued",
    { timeout: 180_000 },
    async (t) => {
      const e = await startEmulator({ buildMs: 0, maxBodyBytes: 4096 });
      atEnd(t, () => e.close());
      const dir = await tempDir('fold-daemon');
      const applyDir = await tempDir('fold-apply');
      atEnd(t, () => rm(dir, { recursive: true, force: true }));
      atEnd(t, () => rm(applyDir, { recursive: true, force: true }));
      const prefix = prefixOf(t, 'fold-apply');
      await writeFiles(dir, { 'shared.yaml': dockerDeploymentYaml('fold-shared', { maxScale: 2 }) });
      // No resync during the test: only a file change makes the daemon reconcile.
      const daemon = await daemonOf(
        t,
        dir,
        [
          '--api-url',
          e.url,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefix,
          '--resync',
          '24h',
          '--debounce',
          '100ms',
          '--log-level',
          'info',
        ],
        ENV,
      );
      const row = async (key: string): Promise<Row | undefined> =>
        ((await daemon.status()).resources as unknown as Row[]).find((r) => r.key === key);
      const SHARED = 'Deployment/fold-shared';
      const first = await until(
        'fold-shared applied by the daemon',
        async () => {
          const r = await row(SHARED);
          return r?.sync.reason === 'Applied' && r.appliedFrom ? r : undefined;
        },
        30_000,
        100,
      );
      const patches = (): number => e.requestLog.filter((r) => r.method === 'PATCH').length;

      // converge apply, on the daemon's prefix, from another directory: a new max_scale, then a body the service refuses.
      type ApplyDoc = {
        results: Array<{ key: string; jobId?: string; status: string; message?: string }>;
        resources: Array<{ key: string; sync: { reason: string; message?: string } }>;
      };
      const apply = async (
        yaml: string,
      ): Promise<{ code: number | null; jobId: string | undefined; doc: ApplyDoc }> => {
        await writeFiles(applyDir, { 'shared.yaml': yaml });
        const run = await runConverge(
          [
            'apply',
            applyDir,
            '--auto-approve',
            '--output',
            'json',
            '--api-url',
            e.url,
            '--redis-url',
            REDIS_URL,
            '--redis-prefix',
            prefix,
          ],
          ENV,
        );
        const doc = JSON.parse(run.stdout) as ApplyDoc;
        return { code: run.code, jobId: doc.results.find((r) => r.key === SHARED)?.jobId, doc };
      };
      const wrote = await apply(dockerDeploymentYaml('fold-shared', { maxScale: 3 }));
      expect(wrote.code).toBe(0);
      expect(patches()).toBe(1);
      // The daemon did not reconcile (no file of its changed): the row moved because apply's worker folded its result.
      const written = await until(
        "apply's job on /status",
        async () => {
          const r = await row(SHARED);
          return r?.job?.id === wrote.jobId && r?.job?.state === 'completed' ? r : undefined;
        },
        30_000,
        100,
      );
      expect(written.appliedFrom?.id).toBeDefined();
      expect(written.appliedFrom?.id).not.toBe(first.appliedFrom?.id);

      const refused = await apply(refusedYaml('fold-shared'));
      expect(refused.code).toBe(1);
      // apply's own words read its job's fold: the WriteRefused hold and what to do, not a bare JobFailed.
      expect(refused.doc.resources.find((r) => r.key === SHARED)?.sync).toMatchObject({
        reason: 'WriteRefused',
        message: expect.stringMatching(/answered 413.*--retry-failed fold-shared/),
      });
      expect(refused.doc.results.find((r) => r.key === SHARED)).toMatchObject({
        status: 'failed',
        message: expect.stringContaining('the same input is not sent again'),
      });
      const byApply = await until(
        "apply's refused job held on /status",
        async () => {
          const r = await row(SHARED);
          return r?.job?.id === refused.jobId && r?.hold ? r : undefined;
        },
        30_000,
        100,
      );
      // The hold the reconcile reads too (Redis' holds), written with the state: the one of apply's desired state.
      const holds = rawRedis();
      atEnd(t, async () => void holds.disconnect());
      expect(JSON.parse((await holds.hget(`${prefix}:daemon:holds`, SHARED))!)).toMatchObject({
        reason: 'WriteRefused',
        desired: byApply.hold!.desired,
      });

      // The daemon's own job of the same refusal, on another resource.
      await writeFiles(dir, { 'own.yaml': refusedYaml('fold-own') });
      const byDaemon = await until(
        "the daemon's refused job held on /status",
        async () => {
          const r = await row('Deployment/fold-own');
          return r?.job?.state === 'failed' && r.hold ? r : undefined;
        },
        30_000,
        100,
      );

      // The same hold and the same failed job, from the job's own data, whoever enqueued it.
      const shape = (r: Row) => ({
        hold: r.hold?.reason,
        job: r.job?.state,
        refusal: /answered 413/.test(r.hold?.message ?? ''),
      });
      expect(shape(byApply)).toEqual({ hold: 'WriteRefused', job: 'failed', refusal: true });
      expect(shape(byApply)).toEqual(shape(byDaemon));
    },
  );

  it(
    'FLUSHALL under a running daemon: /status polled every 100 ms for 10 s never lists 0 resources, and no write is sent',
    { timeout: 120_000 },
    async (t) => {
      const e = await startEmulator({ buildMs: 0 });
      atEnd(t, () => e.close());
      const dir = await tempDir('fold-flush');
      atEnd(t, () => rm(dir, { recursive: true, force: true }));
      const names = ['flush-a', 'flush-b', 'flush-c'];
      await writeFiles(
        dir,
        Object.fromEntries(names.map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale: 2 })])),
      );
      const prefix = prefixOf(t, 'fold-flush');
      const daemon = await daemonOf(t, dir, [
        '--api-url',
        e.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
        '--resync',
        '2s',
        '--debounce',
        '100ms',
      ]);
      await until(
        'every resource synced',
        async () => {
          const rows = (await daemon.status()).resources as unknown as Row[];
          return rows.length === 3 && rows.every((r) => r.sync.status === 'synced');
        },
        30_000,
        100,
      );
      const writes = (): number => e.requestLog.filter((r) => r.method !== 'GET').length;
      const before = writes();

      // Every key of the prefix goes (as a FLUSHALL does to them, without touching the other tests' keys).
      const redis = rawRedis();
      atEnd(t, async () => void redis.disconnect());
      const keys = await redis.keys(`${prefix}*`);
      await redis.del(...keys);
      const counts: number[] = [];
      let rebuilding = false;
      const end = Date.now() + 10_000;
      while (Date.now() < end) {
        const status = await daemon.status();
        counts.push((status.resources as unknown[]).length);
        rebuilding ||= (status as { resourcesRebuilding?: boolean }).resourcesRebuilding === true;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(counts.length).toBeGreaterThan(20);
      expect(counts.filter((n) => n !== 3)).toEqual([]);
      expect(writes()).toBe(before);
      // Said while Redis had none of them; then back in Redis, rebuilt by a reconcile from the service.
      expect(rebuilding).toBe(true);
      expect(await redis.hlen(`${prefix}:record:state`)).toBe(3);
      expect(((await daemon.status()) as { resourcesRebuilding?: boolean }).resourcesRebuilding).toBe(false);
    },
  );
});
