// Through the built binary against the emulator: a name the service keeps after a delete (its tracing project) answers
// every create 409; converge holds it (NameTaken) and sends no POST again until the manifest changes or an operator
// releases it, across reconciles and a restart; status, history and plan say so (docs/decision.md, holds).
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { seedWith } from '../helpers/apply.js';
import { REDIS_URL } from '../helpers/redis.js';
import { dockerDeploymentYaml, runConverge, tempDir, until, writeFiles, type DaemonHandle } from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

const HOOK = 'hook-token-name-taken-7c2d';
const NAME = 'nt-gone';

interface Row {
  name: string;
  state: string;
  sync: { reason: string; message?: string };
  hold?: { reason: string; message: string };
}

describe('a name taken on the service', () => {
  it(
    'is held (NameTaken) after one POST answered 409; no POST again across resyncs and a restart, until released or the manifest changes',
    { timeout: 180_000 },
    async (t) => {
      // A deployment of the name, deleted (a prune): its tracing project keeps the name, so a create of it answers 409.
      const e = await startEmulator({
        buildMs: 0,
        seed: seedWith([
          {
            name: NAME,
            source: 'external_docker',
            source_config: { resource_spec: { max_scale: 2 } },
            source_revision_config: { image_uri: `docker.io/acme/${NAME}:1` },
          },
        ]),
      });
      atEnd(t, () => e.close());
      const gone = e.store.allDeployments().find((d) => d.name === NAME)!;
      expect(e.store.deleteDeployment(gone.tenant_id, gone.id, false).ok).toBe(true);
      expect(e.store.allDeployments()).toHaveLength(0);
      expect(e.store.tracingProjects().map((p) => p.name)).toEqual([NAME]);

      const dir = await tempDir('name-taken');
      atEnd(t, () => rm(dir, { recursive: true, force: true }));
      await writeFiles(dir, {
        'gone.yaml': dockerDeploymentYaml(NAME, { maxScale: 2 }),
        'fine.yaml': dockerDeploymentYaml('nt-fine', { maxScale: 2 }),
      });
      const prefix = prefixOf(t, 'name-taken');
      const common = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
      const args = [...common, '--resync', '1s', '--backoff', '50ms', '--log-level', 'info'];
      // The creates of the taken name the service received (each answered 409), and every create it answered.
      const posts = () =>
        e.requestLog.filter(
          (r) =>
            r.method === 'POST' &&
            r.path === '/v2/deployments' &&
            (r.body as { name?: string } | undefined)?.name === NAME,
        );
      const rowOf = async (d: DaemonHandle) =>
        (await d.status()).resources.find((r) => r.name === NAME) as unknown as Row | undefined;
      const resyncs = async (d: DaemonHandle) =>
        ((await d.status()).reconciles as unknown as { byTrigger: Record<string, number> }).byTrigger.resync ?? 0;
      const heldAgain = async (d: DaemonHandle, label: string) => {
        await until(
          label,
          async () => {
            const row = await rowOf(d);
            return row?.sync.reason === 'NameTaken' && row.hold?.reason === 'NameTaken';
          },
          30_000,
          100,
        );
        const target = (await resyncs(d)) + 3;
        await until(`${label}: 3 more resyncs`, async () => (await resyncs(d)) >= target, 30_000, 100);
      };

      let daemon = await daemonOf(t, dir, args, { CONVERGE_WEBHOOK_TOKEN: HOOK });
      await until('nt-fine created', () => e.store.allDeployments().some((d) => d.name === 'nt-fine'), 30_000, 100);
      await heldAgain(daemon, 'held as NameTaken');
      const row = (await rowOf(daemon))!;
      expect(row.state).toBe('out_of_sync');
      expect(row.hold!.message).toMatch(
        /^the name is taken on the service: the create was answered 409 \(A tracing project named "nt-gone" already exists/,
      );
      expect(row.hold!.message).toContain(
        '(a deleted deployment\'s tracing project keeps its name, or another deployment has it); rename the manifest (metadata.name), or delete the tracing project "nt-gone"',
      );
      expect(row.hold!.message).toContain('converge reconcile --retry-failed nt-gone');
      expect(
        daemon.lines.some((l) => String(l.msg).startsWith('job failed: the name is taken on the service (NameTaken)')),
      ).toBe(true);
      // One POST, and no more over three resyncs.
      expect(posts().map((p) => p.status)).toEqual([409]);

      // converge status and converge history say it.
      const status = await runConverge(['status', '--url', daemon.url]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/nt-gone\s+out_of_sync\s+\S+\s+NameTaken/);
      const history = await runConverge([
        'history',
        NAME,
        '--output',
        'json',
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
      ]);
      expect(history.code, history.stderr).toBe(0);
      const events = (JSON.parse(history.stdout) as { events: Array<{ type: string; reason?: string }> }).events;
      expect(events.find((ev) => ev.type === 'held')).toMatchObject({ reason: 'NameTaken' });

      // converge plan on the prefix says which write the daemon holds, and sends nothing.
      const planned = await runConverge(['plan', dir, ...common]);
      expect(planned.code, planned.stderr).toBe(0);
      expect(planned.stdout).toContain(
        'Deployment/nt-gone: the daemon holds this desired state (NameTaken): the name is taken on the service',
      );
      expect(posts()).toHaveLength(1);

      // Restarted, the daemon reads the hold from Redis: still no POST.
      await daemon.kill('SIGTERM');
      daemon = await daemonOf(t, dir, args, { CONVERGE_WEBHOOK_TOKEN: HOOK });
      await heldAgain(daemon, 'held after the restart');
      expect(posts()).toHaveLength(1);

      // Released by an operator: one more POST (409 again), then held again.
      const retry = await runConverge(['reconcile', '--retry-failed', NAME, '--url', daemon.url], {
        CONVERGE_WEBHOOK_TOKEN: HOOK,
      });
      expect(retry.code, retry.stdout + retry.stderr).toBe(0);
      await until('the released create sent', () => posts().length === 2, 30_000, 100);
      await heldAgain(daemon, 'held again after the release');
      expect(posts()).toHaveLength(2);

      // Another desired state (the manifest changed): one more POST, then held again.
      await writeFiles(dir, { 'gone.yaml': dockerDeploymentYaml(NAME, { maxScale: 3 }) });
      await until('the changed manifest sent', () => posts().length === 3, 30_000, 100);
      await heldAgain(daemon, 'held again after the manifest changed');
      expect(posts().map((p) => p.status)).toEqual([409, 409, 409]);
      expect(e.store.allDeployments().map((d) => d.name)).toEqual(['nt-fine']);
    },
  );
});
