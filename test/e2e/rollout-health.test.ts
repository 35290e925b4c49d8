// Rollout health (issue 13): apply --wait fails fast on a failed build; the daemon shows it degraded within one poll,
// holds it (no write of the same input over five resyncs, drift only reported), applies a changed manifest, releases
// the hold on --retry-failed; under --spec-only the progress deadline stands in for the revision endpoint.
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../helpers/prometheus.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
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

const HOOK = 'hook-token-rollout-7f3a';
const NAMES = ['rh-good-0', 'rh-good-1', 'rh-bad'];
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function emulator(specOnly: boolean): Promise<RunningEmulator> {
  const e = await startEmulator({ buildMs: specOnly ? 300 : 900, buildFail: /^rh-bad$/, specOnly });
  cleanups.push(() => e.close());
  return e;
}

async function manifests(label: string): Promise<string> {
  const dir = await tempDir(label);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await writeFiles(
    dir,
    Object.fromEntries(NAMES.map((name) => [`${name}.yaml`, dockerDeploymentYaml(name, { maxScale: 2 })])),
  );
  return dir;
}

function prefix(label: string): string {
  const p = testPrefix(label);
  cleanups.push(() => dropPrefix(p));
  return p;
}

function idOf(e: RunningEmulator, name: string): string {
  return e.store.allDeployments().find((d) => d.name === name)!.id;
}

/** Landed PATCHes of `name` since request number `from` of the emulator's log. */
function patchesOf(e: RunningEmulator, name: string, from = 0): number {
  const id = idOf(e, name);
  return e.requestLog
    .slice(from)
    .filter((r) => r.method === 'PATCH' && r.status >= 200 && r.status < 300 && r.path.endsWith(`/${id}`)).length;
}

function metric(text: string, name: string, labels: Record<string, string>): number | undefined {
  return parsePrometheusText(text).find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

interface Row {
  key: string;
  sync: { status: string; reason: string };
  health: { status: string; reason: string; revisionId?: string; revisionStatus?: string };
  hold?: { reason: string; revisionId?: string };
  drift: { policy: string; fields: string[] } | null;
}

async function rows(daemon: DaemonHandle): Promise<Map<string, Row>> {
  const doc = (await daemon.status()) as unknown as { resources: Row[] };
  return new Map(doc.resources.map((r) => [r.key.slice('Deployment/'.length), r]));
}

async function resyncs(daemon: DaemonHandle, more: number): Promise<void> {
  const count = async (): Promise<number> =>
    ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> }).byTrigger.resync ?? 0;
  const target = (await count()) + more;
  await until(`${more} more resync reconciles`, async () => (await count()) >= target, 20_000, 100);
}

describe('rollout health', () => {
  it('apply --wait exits 1 at the failed build, naming it; the daemon shows it degraded within one poll, never rebuilds it, applies a changed manifest', async () => {
    const e = await emulator(false);
    const dir = await manifests('rollout');
    const p = prefix('rollout');
    const common = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', p, '--health-poll', '200ms'];

    const apply = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', ...common]);
    expect(apply.code, apply.stderr).toBe(1);
    // Fails fast: at the failed build, not at --wait-timeout (it would say the wait timed out).
    expect(apply.stdout + apply.stderr).not.toMatch(/timed out|wait timeout/i);
    const bad = { ...e.store.allDeployments().find((d) => d.name === 'rh-bad')! };
    expect(apply.stdout).toContain(
      `failed    Deployment/rh-bad (deployment ${bad.id}): revision ${bad.latest_revision_id} ended BUILD_FAILED`,
    );
    expect(apply.stdout).toMatch(/not converged \(revision failed: Deployment\/rh-bad \S+ BUILD_FAILED\)/);
    expect(apply.stderr).toMatch(/waiting for 3 revisions: 0 active, 3 building \[\d+s elapsed\]/);
    expect(bad.active_revision_id).toBeNull();

    const daemon = await startDaemon(dir, [...common, '--resync', '1s', '--log-level', 'info'], {
      CONVERGE_WEBHOOK_TOKEN: HOOK,
    });
    const first = await until('the first reconcile', () => daemon.lines.find((l) => l.msg === 'reconciled'));
    const degraded = await until('rh-bad degraded', () =>
      daemon.lines.find((l) => l.msg === 'health changed: degraded' && l.key === 'Deployment/rh-bad'),
    );
    // Seen at once: the first reconcile reads the failed revision (health is read, not guessed), so it is degraded
    // before any second reconcile.
    const secondReconcile = daemon.lines.filter((l) => l.msg === 'reconciled')[1];
    expect(
      secondReconcile === undefined || daemon.lines.indexOf(degraded) < daemon.lines.indexOf(secondReconcile),
    ).toBe(true);
    expect(daemon.lines.indexOf(first)).toBeGreaterThanOrEqual(0);
    expect(degraded).toMatchObject({
      reason: 'RevisionBuildFailed',
      revisionId: bad.latest_revision_id,
      revisionStatus: 'BUILD_FAILED',
    });
    await until('the good ones healthy', async () => {
      const r = await rows(daemon);
      return r.get('rh-good-0')!.health.status === 'healthy' && r.get('rh-good-1')!.health.status === 'healthy';
    });
    let r = await rows(daemon);
    expect(r.get('rh-bad')).toMatchObject({
      sync: { status: 'synced' },
      health: { status: 'degraded', reason: 'RevisionBuildFailed' },
      hold: { reason: 'RevisionFailed', revisionId: bad.latest_revision_id },
    });
    const metrics = await daemon.metrics();
    expect(metric(metrics, 'converge_resource_health', { name: 'rh-bad', health: 'degraded' })).toBe(1);
    expect(metric(metrics, 'converge_resource_health', { name: 'rh-good-0', health: 'healthy' })).toBe(1);
    expect(metric(metrics, 'converge_revision_failures_total', { reason: 'RevisionBuildFailed' })).toBe(1);

    // Someone scales it by hand (a new revision of the drifted input, which fails too): under heal that drift would be
    // reverted by a PATCH, rebuilding the failed input.
    const drifted = await fetch(`${e.url}/v2/deployments/${bad.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_config: { resource_spec: { max_scale: 9 } } }),
    });
    expect(drifted.status).toBe(200);
    const mark = e.requestLog.length;
    const t0 = Date.now();
    await resyncs(daemon, 5);
    const elapsed = Date.now() - t0;
    expect(patchesOf(e, 'rh-bad', mark)).toBe(0);
    expect(patchesOf(e, 'rh-good-0', mark) + patchesOf(e, 'rh-good-1', mark)).toBe(0);
    // Requests per poll: none for healthy deployments; one revision read per poll for the one building (its drifted
    // revision, 900 ms), none once that failed.
    const reads = e.requestLog.slice(mark).filter((q) => q.route.includes('/revisions'));
    expect(reads.every((q) => q.path.includes(`/${bad.id}/revisions/`))).toBe(true);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.length).toBeLessThanOrEqual(Math.ceil(900 / 200) + 2);
    expect(elapsed).toBeGreaterThan(3_000);
    r = await rows(daemon);
    expect(r.get('rh-bad')).toMatchObject({
      sync: { status: 'out_of_sync', reason: 'RevisionFailed' },
      health: { status: 'degraded' },
      drift: { policy: 'report', fields: ['source_config.resource_spec.max_scale'] },
    });
    expect(r.get('rh-good-0')!.health.status).toBe('healthy');
    expect(metric(await daemon.metrics(), 'converge_revision_failures_total', { reason: 'RevisionBuildFailed' })).toBe(
      2,
    );

    // A changed manifest is a new desired state: written once, at once.
    const before = e.requestLog.length;
    await writeFiles(dir, {
      'rh-bad.yaml': dockerDeploymentYaml('rh-bad', { maxScale: 3, image: 'docker.io/acme/rh-bad:2' }),
    });
    await until('the changed manifest applied', () => patchesOf(e, 'rh-bad', before) === 1);
    const second = await until('its new revision failed and held', async () => {
      const row = (await rows(daemon)).get('rh-bad')!;
      return row.hold && row.hold.revisionId !== bad.latest_revision_id ? row : undefined;
    });
    expect(second.health).toMatchObject({ status: 'degraded', reason: 'RevisionBuildFailed' });
    expect(patchesOf(e, 'rh-bad', before)).toBe(1);

    // The operator asks for a retry: the hold is released and the same input rebuilt once (its revision fields only).
    const beforeRetry = e.requestLog.length;
    const retry = await runConverge(
      ['reconcile', '--retry-failed', 'rh-bad', 'nope', '--url', daemon.url, '--output', 'json'],
      { CONVERGE_WEBHOOK_TOKEN: HOOK },
    );
    // 'nope' is declared in no manifest: said apart from a declared resource that is not held, and exit 1.
    expect(retry.code, retry.stderr).toBe(1);
    expect(JSON.parse(retry.stdout).retryFailed).toEqual({
      requested: ['rh-bad', 'nope'],
      released: ['Deployment/rh-bad'],
      rebuilt: ['Deployment/rh-bad'],
      notHeld: [],
      undeclared: ['nope'],
    });
    await until('the rebuild sent', () => patchesOf(e, 'rh-bad', beforeRetry) === 1);
    const rebuild = e.requestLog.slice(beforeRetry).find((q) => q.method === 'PATCH')!;
    expect(rebuild.body).toEqual({ source_revision_config: { image_uri: 'docker.io/acme/rh-bad:2' } });
    const third = await until('the rebuilt revision failed and held again', async () => {
      const row = (await rows(daemon)).get('rh-bad')!;
      return row.hold && row.hold.revisionId !== second.hold!.revisionId ? row : undefined;
    });
    expect(third.health).toMatchObject({ status: 'degraded', reason: 'RevisionBuildFailed' });
    expect(patchesOf(e, 'rh-bad', beforeRetry)).toBe(1);
    expect(patchesOf(e, 'rh-good-0', beforeRetry)).toBe(0);

    // In text: a declared resource that is not held, and a name no manifest declares, each said as what it is.
    const words = await runConverge(['reconcile', '--retry-failed', 'rh-good-0', 'rh-gooood', '--url', daemon.url], {
      CONVERGE_WEBHOOK_TOKEN: HOOK,
    });
    expect(words.code).toBe(1);
    expect(words.stdout).toContain('Not held (nothing released): rh-good-0\n');
    expect(words.stdout).toContain(
      'Declared in no manifest (nothing released): rh-gooood; name a resource as metadata.name or Kind/name, as converge status lists them.',
    );
  }, 60_000);

  it('under --spec-only (no revision endpoint): a revision not active after progress_deadline is degraded, in apply --wait and in the daemon, with one list request per poll', async () => {
    const e = await emulator(true);
    const dir = await manifests('rollout-spec');
    const p = prefix('rollout-spec');
    const common = [
      '--api-url',
      e.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      p,
      '--health-poll',
      '200ms',
      '--progress-deadline',
      '1s',
    ];

    const apply = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', '--output', 'json', ...common]);
    expect(apply.code, apply.stderr).toBe(1);
    // Fails fast: at the failed build, not at --wait-timeout (it would say the wait timed out).
    expect(apply.stdout + apply.stderr).not.toMatch(/timed out|wait timeout/i);
    const doc = JSON.parse(apply.stdout) as {
      resources: Array<{ key: string; sync: { status: string }; health: { status: string; reason: string } }>;
    };
    const byKey = new Map(doc.resources.map((x) => [x.key, x]));
    expect(byKey.get('Deployment/rh-bad')).toMatchObject({
      sync: { status: 'synced' },
      health: { status: 'degraded', reason: 'ProgressDeadlineExceeded' },
    });
    expect(byKey.get('Deployment/rh-good-0')).toMatchObject({
      sync: { status: 'synced' },
      health: { status: 'healthy' },
    });

    const daemon = await startDaemon(dir, [...common, '--resync', '1s', '--log-level', 'info']);
    await until(
      'rh-bad degraded past the deadline',
      async () => (await rows(daemon)).get('rh-bad')?.health.reason === 'ProgressDeadlineExceeded',
    );
    const r = await rows(daemon);
    expect(r.get('rh-good-1')!.health.status).toBe('healthy');
    // A deadline is not a failure the service reported: the deployment is not held.
    expect(r.get('rh-bad')!.hold).toBeUndefined();
    const mark = e.requestLog.length;
    const t0 = Date.now();
    await sleep(1_200);
    const elapsed = Date.now() - t0;
    const polls = e.requestLog.slice(mark).filter((q) => q.method === 'GET' && q.query.deployment_ids !== undefined);
    // One list by id per poll, for the one deployment still followed; never a revision read again after the probe.
    expect(polls.every((q) => q.query.deployment_ids === idOf(e, 'rh-bad'))).toBe(true);
    expect(polls.length).toBeLessThanOrEqual(Math.ceil(elapsed / 200) + 1);
    expect(polls.length).toBeGreaterThan(0);
    // The endpoint is probed once per process (apply's, then the daemon's), then never asked again.
    expect(e.requestLog.filter((q) => q.path.includes('/revisions')).length).toBe(2);
    expect(patchesOf(e, 'rh-bad', mark)).toBe(0);
    const notices = daemon.lines.filter((l) =>
      String(l.msg).includes('has no GET /v2/deployments/{deployment_id}/revisions/{revision_id}'),
    );
    expect(notices).toHaveLength(1);
    expect(
      metric(await daemon.metrics(), 'converge_revision_failures_total', { reason: 'ProgressDeadlineExceeded' }),
    ).toBe(1);
  }, 60_000);
});
