// The daemon never rewrites secrets blind, and a lost Redis is noticed: SecretsUnknown at a first start over
// deployments whose secrets the service hides (masked or omitted), `converge reconcile --write-secrets`, a Redis
// restarted empty under a running daemon (report stays report), and a Redis that may evict keys.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { parsePrometheusText } from '../helpers/prometheus.js';
import type { RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  killAllConverge,
  liveMaxScale,
  redisChild,
  REDIS_URL,
  runConverge,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { atEnd, daemonOf, emulatorWithSecrets, prefixOf } from './scoped.js';
import { startReceiver } from '../helpers/notify-receivers.js';

const HOOK = 'hook-token-5d1e8b2c9a';
const ENV = { SU_TOKEN: 'su-secret-value-3c81', CONVERGE_WEBHOOK_TOKEN: HOOK };

afterAll(async () => {
  await killAllConverge();
});

function emulator(t: TestContext, names: readonly string[], secrets: 'masked' | 'omitted'): Promise<RunningEmulator> {
  return emulatorWithSecrets(t, names, ENV.SU_TOKEN, secrets);
}

async function manifests(t: TestContext, names: readonly string[]): Promise<string> {
  const dir = await tempDir('secrets-unknown');
  atEnd(t, () => rm(dir, { recursive: true, force: true }));
  await writeFiles(
    dir,
    Object.fromEntries(
      names.map((name) => [
        `${name}.yaml`,
        dockerDeploymentYaml(name, { maxScale: 2, secrets: [['TOKEN', 'SU_TOKEN']] }),
      ]),
    ),
  );
  return dir;
}

/** Landed PATCHes (of `name`, or of any deployment), converge's and the test's own alike. */
function patchesOf(e: RunningEmulator, name?: string): number {
  const ids = new Set(
    e.store
      .allDeployments()
      .filter((d) => name === undefined || d.name === name)
      .map((d) => d.id),
  );
  return e.requestLog.filter(
    (r) => r.method === 'PATCH' && r.status >= 200 && r.status < 300 && ids.has(r.path.split('/').pop() ?? ''),
  ).length;
}

function metric(text: string, name: string): number | undefined {
  return parsePrometheusText(text).find((s) => s.name === name)?.value;
}

async function resyncs(daemon: DaemonHandle, more: number): Promise<void> {
  const count = async (): Promise<number> =>
    ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> } | null)?.byTrigger.resync ??
    0;
  const target = (await count()) + more;
  await until(`${more} more resync reconciles`, async () => (await count()) >= target, 20_000, 100);
}

async function reconcileCli(
  daemon: DaemonHandle,
  args: string[],
  env: NodeJS.ProcessEnv = { CONVERGE_WEBHOOK_TOKEN: HOOK },
) {
  return runConverge(['reconcile', ...args, '--url', daemon.url], env);
}

// Every case runs concurrently with the others (they wait on resync cycles), each with its own emulator, directory,
// Redis prefix or redis-server, and daemon.
describe.concurrent('SecretsUnknown: no blind secret rewrites', () => {
  it.for(['masked', 'omitted'] as const)(
    'a first start over deployments whose secrets the service shows %s writes nothing until asked, then once each',
    { timeout: 90_000 },
    async (mode, t) => {
      const names = ['su-0', 'su-1', 'su-2'];
      const e = await emulator(t, names, mode);
      const dir = await manifests(t, names);
      const daemon = await daemonOf(
        t,
        dir,
        [
          '--api-url',
          e.url,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefixOf(t, `su-${mode}`),
          '--resync',
          '1s',
          '--log-level',
          'info',
        ],
        ENV,
      );
      await until(
        'every resource held as SecretsUnknown',
        async () => {
          const rows = (await daemon.status()).resources;
          return (
            rows.length === 3 &&
            rows.every(
              (r) =>
                r.state === 'out_of_sync' && (r as unknown as { syncReason?: string }).syncReason === 'SecretsUnknown',
            )
          );
        },
        20_000,
        100,
      );
      await resyncs(daemon, 2);
      expect(patchesOf(e)).toBe(0);
      const status = await daemon.status();
      expect(status.secretsUnknown).toEqual(['Deployment/su-0', 'Deployment/su-1', 'Deployment/su-2']);
      expect((status.resources[0] as unknown as { secretsUnknown: string[] }).secretsUnknown).toEqual(['TOKEN']);
      expect(metric(await daemon.metrics(), 'converge_secrets_unknown_resources')).toBe(3);
      expect(daemon.lines.filter((l) => String(l.msg).startsWith('SecretsUnknown')).length).toBe(1);

      // A wrong token is refused; the right one writes the named resource once.
      const refused = await reconcileCli(daemon, ['--write-secrets', 'su-0'], {
        CONVERGE_WEBHOOK_TOKEN: 'not-the-token',
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('refused the token');
      const one = await reconcileCli(daemon, ['--write-secrets', 'su-0']);
      expect(one.stderr).toBe('');
      expect(one.code).toBe(0);
      expect(one.stdout).toContain('Secrets written once for: Deployment/su-0');
      await until('su-0 written', () => patchesOf(e, 'su-0') === 1, 10_000, 50);
      await until(
        'su-0 synced',
        async () => (await daemon.status()).resources.find((r) => r.name === 'su-0')?.state === 'synced',
        10_000,
        100,
      );
      expect(patchesOf(e)).toBe(1);

      const rest = await reconcileCli(daemon, ['--write-secrets']);
      expect(rest.code).toBe(0);
      expect(rest.stdout).toContain('Deployment/su-1, Deployment/su-2');
      await until(
        'every resource synced',
        async () => (await daemon.status()).resources.every((r) => r.state === 'synced'),
        15_000,
        100,
      );
      await resyncs(daemon, 2);
      for (const name of names) expect(patchesOf(e, name), name).toBe(1);
      expect(metric(await daemon.metrics(), 'converge_secrets_unknown_resources')).toBe(0);
      // The value written is the manifest's, and it never reached a log line.
      expect(daemon.stdout()).not.toContain(ENV.SU_TOKEN);
    },
  );

  it('a changed desired state is written (with its secrets) without asking; a plain `converge reconcile` writes no held secret', async (t) => {
    const names = ['su-edit', 'su-kept'];
    const e = await emulator(t, names, 'masked');
    const dir = await manifests(t, names);
    const daemon = await daemonOf(
      t,
      dir,
      [
        '--api-url',
        e.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefixOf(t, 'su-edit'),
        '--resync',
        '1s',
        '--debounce',
        '100ms',
        '--log-level',
        'info',
      ],
      ENV,
    );
    await until(
      'both held',
      async () => ((await daemon.status()).secretsUnknown as string[]).length === 2,
      20_000,
      100,
    );
    const now = await reconcileCli(daemon, []);
    expect(now.code).toBe(0);
    expect(now.stdout).toMatch(/Reconcile #\d+ done: 0 jobs enqueued/);
    await writeFiles(dir, {
      'su-edit.yaml': dockerDeploymentYaml('su-edit', { maxScale: 3, secrets: [['TOKEN', 'SU_TOKEN']] }),
    });
    await until(
      'su-edit at max_scale 3',
      () => liveMaxScale(e.store.allDeployments().find((d) => d.name === 'su-edit')) === 3,
      15_000,
      50,
    );
    await resyncs(daemon, 2);
    expect(patchesOf(e, 'su-edit')).toBe(1);
    expect(patchesOf(e, 'su-kept')).toBe(0);
    expect((await daemon.status()).secretsUnknown).toEqual(['Deployment/su-kept']);
  }, 60_000);
});

describe.concurrent('a Redis that lost its data, and one that may evict', () => {
  it('Redis restarted empty under a running daemon: the loss is reported (and notified) once, no secret is rewritten, report stays report', async (t) => {
    const redis = await redisChild();
    atEnd(t, () => redis.remove());
    const hook = await startReceiver();
    atEnd(t, () => hook.close());
    const etc = await tempDir('secrets-unknown-config');
    atEnd(t, () => rm(etc, { recursive: true, force: true }));
    await writeFile(
      join(etc, 'converge.yaml'),
      'notifications:\n  - {name: ops, type: webhook, url_env: OPS_URL, events: [applied_state_lost]}\n',
    );
    const names = ['lost-0', 'lost-1'];
    const e = await emulator(t, names, 'masked');
    const dir = await manifests(t, names);
    const daemon = await daemonOf(
      t,
      dir,
      [
        '--api-url',
        e.url,
        '--redis-url',
        redis.url,
        '--drift',
        'report',
        '--resync',
        '1s',
        '--log-level',
        'info',
        '--config',
        join(etc, 'converge.yaml'),
      ],
      { ...ENV, OPS_URL: `${hook.url}/hooks/ops` },
    );
    await until(
      'both held',
      async () => ((await daemon.status()).secretsUnknown as string[]).length === 2,
      20_000,
      100,
    );
    expect((await reconcileCli(daemon, ['--write-secrets'])).code).toBe(0);
    await until(
      'both synced',
      async () => (await daemon.status()).resources.every((r) => r.state === 'synced'),
      15_000,
      100,
    );
    expect(patchesOf(e)).toBe(2);

    // Drift behind converge's back, reported (the memory of the desired state is there).
    const d = e.store.allDeployments().find((x) => x.name === 'lost-1')!;
    const res = await fetch(`${e.url}/v2/deployments/${d.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_config: { resource_spec: { max_scale: 7 } } }),
    });
    expect(res.status).toBe(200);
    const before = patchesOf(e);
    await until(
      'the drift reported',
      async () => (await daemon.status()).resources.find((r) => r.name === 'lost-1')?.state === 'out_of_sync',
      10_000,
      100,
    );

    await redis.stop('SIGKILL');
    await redis.start(); // no persistence: empty
    const lost = await daemon.waitForLine((l) => String(l.msg).startsWith("Redis lost converge's records"), 15_000);
    expect(lost.level).toBe(50);
    await until(
      '/status to say the applied state was lost',
      async () => ((await daemon.status()).appliedState as { lost: boolean }).lost,
      5_000,
      100,
    );
    expect(metric(await daemon.metrics(), 'converge_applied_state_lost')).toBe(1);
    await resyncs(daemon, 3);
    expect(patchesOf(e)).toBe(before);
    expect(liveMaxScale(e.store.allDeployments().find((x) => x.name === 'lost-1'))).toBe(7);
    const rows = (await daemon.status()).resources;
    expect(rows.find((r) => r.name === 'lost-0')).toMatchObject({ state: 'out_of_sync', syncReason: 'SecretsUnknown' });
    expect(rows.find((r) => r.name === 'lost-1')).toMatchObject({
      state: 'out_of_sync',
      drift: { policy: 'report', fields: expect.arrayContaining(['source_config.resource_spec.max_scale']) },
    });
    expect(daemon.lines.filter((l) => String(l.msg).startsWith("Redis lost converge's records"))).toHaveLength(1);
    const status = await daemon.status();
    expect((status.appliedState as { lostAt: string }).lostAt).toMatch(/^\d{4}-/);
    // One applied_state_lost, about the daemon, from the applied-state watch.
    await until('applied_state_lost delivered', () => hook.delivered().length > 0, 45_000, 100);
    await resyncs(daemon, 2);
    expect(hook.delivered()).toMatchObject([
      { type: 'applied_state_lost', resource: { kind: 'Daemon', name: 'applied-state' }, reason: 'AppliedStateLost' },
    ]);
  }, 90_000);

  it('warns once when Redis may evict keys (maxmemory-policy not noeviction); POST /reconcile is off without a token', async (t) => {
    const redis = await redisChild({ extraArgs: ['--maxmemory-policy', 'allkeys-lru'] });
    atEnd(t, () => redis.remove());
    const e = await emulator(t, ['evict-0'], 'masked');
    const dir = await manifests(t, ['evict-0']);
    const daemon = await daemonOf(
      t,
      dir,
      ['--api-url', e.url, '--redis-url', redis.url, '--resync', '1s', '--log-level', 'info'],
      { SU_TOKEN: ENV.SU_TOKEN },
    );
    await resyncs(daemon, 2);
    const warnings = daemon.lines.filter((l) => String(l.msg).includes('maxmemory-policy'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, maxmemoryPolicy: 'allkeys-lru' });
    const off = await reconcileCli(daemon, ['--write-secrets']);
    expect(off.code).toBe(1);
    expect(off.stderr).toContain('has POST /reconcile off; start it with CONVERGE_WEBHOOK_TOKEN set');
    const noToken = await reconcileCli(daemon, [], {});
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain('CONVERGE_WEBHOOK_TOKEN is not set');
    const raw = await fetch(`${daemon.url}/reconcile`, { method: 'POST', body: '{}' });
    expect(raw.status).toBe(404);
    expect(patchesOf(e)).toBe(0);
  }, 60_000);
});
