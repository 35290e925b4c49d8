// examples/monitoring against a real Prometheus (Debian's package) scraping `converge run` over the emulator: a failed
// build fires ConvergeRevisionFailed for that resource (read through /api/v1/alerts) and the release of a fixed build
// resolves it; every expression of the rules and the dashboard reads only names the live daemon exports and parses in
// Prometheus; a killed leader with one standby never leaves ConvergeNoLeader firing.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startReceiver } from '../helpers/notify-receivers.js';
import { exportedNames, unknownNames } from '../helpers/promql-names.js';
import { alertRules, allExpressions, dashboard, dashboardPanels, recordedNames } from '../helpers/monitoring-files.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { prometheusInstalled, startPrometheus, type Alert, type PrometheusChild } from './prometheus-child.js';

const HOOK = 'hook-token-prometheus-5c1e';
const cleanups: Array<() => Promise<unknown>> = [];
const installed = prometheusInstalled();
if (!installed)
  console.warn(
    'test/e2e/prometheus.test.ts: prometheus is not installed (Debian package prometheus; .ci/run installs it): skipped',
  );

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A build that fails while `broken` is set: the emulator fails new revisions of names this matches (docs/emulator.md). */
class BrokenBuild extends RegExp {
  broken = true;
  override test(name: string): boolean {
    return this.broken && super.test(name);
  }
}

async function emulator(buildFail?: RegExp): Promise<RunningEmulator> {
  const e = await startEmulator({ buildMs: 300, ...(buildFail ? { buildFail } : {}) });
  cleanups.push(() => e.close());
  return e;
}

async function manifests(label: string, names: string[]): Promise<string> {
  const dir = await tempDir(label);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await writeFiles(
    dir,
    Object.fromEntries(names.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale: 2 })])),
  );
  return dir;
}

function prefix(label: string): string {
  const p = testPrefix(label);
  cleanups.push(() => dropPrefix(p));
  return p;
}

async function prometheus(targets: string[], forOf: Record<string, string> = {}): Promise<PrometheusChild> {
  const server = await startPrometheus(targets, forOf);
  cleanups.push(() => server.close());
  return server;
}

const hostPort = (daemon: DaemonHandle): string => new URL(daemon.url).host;
const named = (alerts: Alert[], name: string): Alert[] => alerts.filter((a) => a.labels.alertname === name);

describe.skipIf(!installed)('examples/monitoring with a real Prometheus', () => {
  it('a failed build fires ConvergeRevisionFailed for that resource only; its release with the build fixed resolves it; every expression reads exported names', async () => {
    const broken = new BrokenBuild('^mon-bad$');
    const e = await emulator(broken);
    const dir = await manifests('prom-revision', ['mon-good', 'mon-bad']);
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const configDir = await tempDir('prom-config');
    cleanups.push(() => rm(configDir, { recursive: true, force: true }));
    await writeFiles(configDir, {
      'converge.yaml': 'notifications:\n  - {name: ops, type: webhook, url_env: OPS_URL}\n',
    });
    const daemon = await startDaemon(
      dir,
      [
        '--api-url',
        e.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix('prom-revision'),
        '--health-poll',
        '200ms',
        '--resync',
        '30s',
        '--config',
        join(configDir, 'converge.yaml'),
      ],
      { CONVERGE_WEBHOOK_TOKEN: HOOK, OPS_URL: `${receiver.url}/hook` },
    );
    // The alert's `for` (1m) is shortened to 1s in this test's copy of the rules: nothing else differs.
    const server = await prometheus([hostPort(daemon)], { ConvergeRevisionFailed: '1s' });

    const firing = await until(
      'ConvergeRevisionFailed firing',
      async () => {
        const alerts = named(await server.alerts(), 'ConvergeRevisionFailed').filter((a) => a.state === 'firing');
        return alerts.length ? alerts : undefined;
      },
      60_000,
      250,
    );
    expect(firing.map((a) => a.labels)).toEqual([
      {
        alertname: 'ConvergeRevisionFailed',
        job: 'converge',
        kind: 'Deployment',
        name: 'mon-bad',
        severity: 'warning',
      },
    ]);
    expect((await daemon.status()).resources.find((r) => r.key === 'Deployment/mon-bad')).toMatchObject({
      hold: { reason: 'RevisionFailed' },
      health: { status: 'degraded' },
    });

    // Every name an expression of the rules or the dashboard reads is exported by this daemon (once its failed build
    // was notified, so the notification counter has its series) or recorded by the rules.
    await until('the failed build notified', () => receiver.delivered().length > 0, 30_000);
    const known = new Map([...exportedNames(parsePrometheusText(await daemon.metrics())), ...recordedNames()]);
    await until('the notification counted', async () =>
      parsePrometheusText(await daemon.metrics()).some(
        (s) => s.name === 'converge_notifications_total' && s.labels.result === 'delivered',
      ),
    );
    for (const [name, labels] of exportedNames(parsePrometheusText(await daemon.metrics()))) known.set(name, labels);
    // The daemon's own series the rules need: the queue read from Redis, the resync period it runs with (30s).
    const live = parsePrometheusText(await daemon.metrics());
    expect(
      live
        .filter((s) => s.name === 'converge_queue_jobs')
        .map((s) => s.labels.state)
        .sort(),
    ).toEqual(['active', 'delayed', 'failed', 'prioritized', 'wait']);
    expect(live.find((s) => s.name === 'converge_resync_period_seconds')?.value).toBe(30);
    expect(live.filter((s) => s.name === 'converge_resource_held').map((s) => s.labels)).toEqual([
      { kind: 'Deployment', name: 'mon-bad', reason: 'RevisionFailed' },
    ]);
    const problems = allExpressions().flatMap(({ where, expr }) =>
      unknownNames(expr, known).map((p) => `${where}: ${p}`),
    );
    expect(problems).toEqual([]);
    // And Prometheus itself parses each dashboard query (Grafana's variables given values) and each rule.
    for (const panel of dashboardPanels(dashboard())) {
      for (const target of panel.targets ?? [])
        await server.query(target.expr!.replaceAll('$__rate_interval', '1m').replaceAll('$job', '.+'));
    }
    expect((await server.query('job:converge_leader:sum'))[0]?.value[1]).toBe('1');
    expect(alertRules().length).toBeGreaterThan(0);

    // The build is fixed where it is built (the emulator stops failing it); the manifest is unchanged, so what ends the
    // alert is the operator's release: converge rebuilds the same input once, and the revision deploys.
    broken.broken = false;
    const retry = await runConverge(
      ['reconcile', '--retry-failed', 'mon-bad', '--url', daemon.url, '--output', 'json'],
      { CONVERGE_WEBHOOK_TOKEN: HOOK },
    );
    expect(retry.code, retry.stderr).toBe(0);
    expect(JSON.parse(retry.stdout).retryFailed).toMatchObject({
      released: ['Deployment/mon-bad'],
      rebuilt: ['Deployment/mon-bad'],
    });
    await until(
      'ConvergeRevisionFailed resolved',
      async () => named(await server.alerts(), 'ConvergeRevisionFailed').length === 0,
      60_000,
      250,
    );
    // The alert goes with the hold; the rebuilt revision is progressing until it deploys, then healthy.
    type Row = { health?: { status?: string } } | undefined;
    const row = async (): Promise<Row> =>
      (await daemon.status()).resources.find((r) => r.key === 'Deployment/mon-bad') as Row;
    await until(
      'the rebuilt revision of mon-bad healthy',
      async () => (await row())?.health?.status === 'healthy',
      60_000,
      250,
    );
    expect(named(await server.alerts(), 'ConvergeRevisionFailed')).toEqual([]);
  }, 240_000);

  it('a killed leader with one standby: ConvergeNoLeader never fires (the standby leads within its for)', async () => {
    const e = await emulator();
    const dir = await manifests('prom-failover', ['mon-a']);
    const p = prefix('prom-failover');
    const args = [
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      p,
      '--resync',
      '30s',
      '--lease',
      '2s',
    ];
    const first = await startDaemon(dir, args);
    await until('the first daemon leads', async () => ((await first.status()).lease as { leading: boolean }).leading);
    const second = await startDaemon(dir, args);
    // The rules as shipped: ConvergeNoLeader's `for` is 2m.
    const server = await prometheus([hostPort(first), hostPort(second)]);
    const forSeconds = Number(/^(\d+)m$/.exec(alertRules().find((r) => r.alert === 'ConvergeNoLeader')!.for!)![1]) * 60;
    await until(
      'Prometheus sees one leader of two replicas',
      async () => {
        const replicas = await server.query('converge_leader');
        return replicas.length === 2 && (await server.query('job:converge_leader:sum'))[0]?.value[1] === '1';
      },
      30_000,
      250,
    );

    const killedAt = Date.now();
    await first.kill('SIGKILL');
    const seen = new Set<Alert['state']>();
    const leaderSeen = await until(
      'Prometheus sees the standby lead',
      async () => {
        for (const alert of named(await server.alerts(), 'ConvergeNoLeader')) seen.add(alert.state);
        const leads = await server.query(`converge_leader{instance="${hostPort(second)}"} == 1`);
        return leads.length === 1 ? Date.now() : undefined;
      },
      60_000,
      200,
    );
    // Two more evaluations after it: the no-leader condition is gone, so the alert can no longer fire.
    const evaluatedAfter = async (): Promise<boolean> => {
      const groups = (await (await fetch(`${server.url}/api/v1/rules`)).json()) as {
        data: { groups: Array<{ name: string; lastEvaluation: string }> };
      };
      return (
        Date.parse(groups.data.groups.find((g) => g.name === 'converge.alerts')!.lastEvaluation) > leaderSeen + 1_000
      );
    };
    await until(
      'two rule evaluations after the takeover',
      async () => {
        for (const alert of named(await server.alerts(), 'ConvergeNoLeader')) seen.add(alert.state);
        return evaluatedAfter();
      },
      30_000,
      200,
    );
    const gapSeconds = (leaderSeen - killedAt) / 1000;
    console.info(
      `leader killed; Prometheus saw the standby lead ${gapSeconds.toFixed(1)} s later; ConvergeNoLeader states seen: ${[...seen].join(', ') || 'none'}`,
    );
    expect(seen.has('firing')).toBe(false);
    expect(gapSeconds).toBeLessThan(forSeconds);
    expect(named(await server.alerts(), 'ConvergeNoLeader')).toEqual([]);
    expect(named(await server.alerts(), 'ConvergeMultipleLeaders')).toEqual([]);
  }, 240_000);
});
