// One decision read the same way everywhere (issue 21, issue 26 items 3 and 4), through the built binary: a re-run of
// apply after a failed build is not converged; a daemon started after the failure never shows it progressing; status's
// summary is its rows; report-mode drift is said once per change; a resource whose write is in flight is not drifting.
import { rm } from 'node:fs/promises';
import { describe, expect, it, type TestContext } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  REDIS_URL,
  runConverge,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
  type LogLine,
} from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

async function emulator(t: TestContext, options: Parameters<typeof startEmulator>[0]): Promise<RunningEmulator> {
  const e = await startEmulator(options);
  atEnd(t, () => e.close());
  return e;
}

async function manifests(t: TestContext, label: string, files: Record<string, string>): Promise<string> {
  const dir = await tempDir(label);
  atEnd(t, () => rm(dir, { recursive: true, force: true }));
  await writeFiles(dir, files);
  return dir;
}

function live(e: RunningEmulator, name: string) {
  return e.store.allDeployments().find((d) => d.name === name)!;
}

/** Changes max_scale behind converge's back (a PATCH to the emulator). */
async function scaleBehindTheBack(e: RunningEmulator, name: string, maxScale: number): Promise<void> {
  const res = await fetch(`${e.url}/v2/deployments/${live(e, name).id}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ source_config: { resource_spec: { max_scale: maxScale } } }),
  });
  expect(res.status).toBe(200);
}

async function resyncs(daemon: DaemonHandle, more: number): Promise<void> {
  const count = async (): Promise<number> =>
    ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> }).byTrigger.resync ?? 0;
  const target = (await count()) + more;
  await until(`${more} more resync reconciles`, async () => (await count()) >= target, 30_000, 100);
}

interface Row {
  key: string;
  sync: { status: string; reason: string };
  health: { status: string; reason: string; revisionId?: string };
}

const FILES = {
  'good.yaml': dockerDeploymentYaml('dc-good', { maxScale: 2 }),
  'bad.yaml': dockerDeploymentYaml('dc-bad', { maxScale: 2 }),
};

describe.concurrent('one decision, read the same way everywhere', { timeout: 120_000 }, () => {
  it('a re-run of apply --wait after a failed build exits 1 naming the revision (text and JSON); plan notes it; a daemon started afterwards never shows it progressing; status summary equals its rows', async (t) => {
    const e = await emulator(t, { buildMs: 400, buildFail: /^dc-bad$/ });
    const dir = await manifests(t, 'decision-rerun', FILES);
    const common = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefixOf(t, 'decision-rerun')];

    const first = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', ...common]);
    expect(first.code, first.stderr).toBe(1);
    const bad = live(e, 'dc-bad');
    expect(bad.latest_revision_id).not.toBe(bad.active_revision_id);

    // The CI job is re-run: nothing to write, and the rollout is still failed.
    const again = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', ...common]);
    expect(again.code, again.stdout + again.stderr).toBe(1);
    expect(again.stdout).not.toContain('Live state matches the manifests');
    expect(again.stdout).toContain(
      `failed    Deployment/dc-bad (deployment ${bad.id}): revision ${bad.latest_revision_id} ended BUILD_FAILED`,
    );
    expect(again.stdout).toContain(
      `not converged (revision failed: Deployment/dc-bad ${bad.latest_revision_id} BUILD_FAILED)`,
    );

    const json = await runConverge(['apply', dir, '--wait', '--wait-timeout', '60s', '--output', 'json', ...common]);
    expect(json.code, json.stderr).toBe(1);
    const doc = JSON.parse(json.stdout) as {
      converged: boolean;
      resources: Row[];
      plan: { health: Array<{ name: string; status: string; revisionStatus?: string }> };
    };
    expect(doc.converged).toBe(false);
    const byKey = new Map(doc.resources.map((r) => [r.key, r]));
    expect(byKey.get('Deployment/dc-bad')).toMatchObject({
      sync: { status: 'synced', reason: 'Synced' },
      health: { status: 'degraded', reason: 'RevisionBuildFailed', revisionId: bad.latest_revision_id },
    });
    expect(byKey.get('Deployment/dc-good')).toMatchObject({ health: { status: 'healthy' } });
    expect(doc.plan.health).toEqual([
      expect.objectContaining({ name: 'dc-bad', status: 'degraded', revisionStatus: 'BUILD_FAILED' }),
    ]);

    // plan: a health note; its exit code stays about changes (none).
    const planned = await runConverge(['plan', dir, '--detailed-exitcode', ...common]);
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toContain(
      `Deployment/dc-bad: health degraded (RevisionBuildFailed): revision ${bad.latest_revision_id} ended BUILD_FAILED`,
    );

    // A daemon started after the failure: its first reading reads the revision; dc-bad is never progressing.
    const daemon = await daemonOf(t, dir, [
      ...common,
      '--resync',
      '1s',
      '--health-poll',
      '200ms',
      '--log-level',
      'info',
    ]);
    await until('the first reconcile', () => daemon.lines.find((l) => l.msg === 'reconciled'));
    const seen: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const rows = (await daemon.status()).resources as unknown as Row[];
      seen.push(rows.find((r) => r.key === 'Deployment/dc-bad')!.health.status);
      await resyncs(daemon, 1);
    }
    expect(seen).toEqual(['degraded', 'degraded', 'degraded']);
    const transitions = daemon.lines.filter((l) => l.msg.startsWith('health changed') && l.key === 'Deployment/dc-bad');
    expect(transitions.map((l) => l.health)).toEqual(['degraded']);

    // converge status: the summary counts come from the same rows as the table.
    const status = await runConverge(['status', '--url', daemon.url]);
    expect(status.code, status.stderr).toBe(0);
    const table = status.stdout
      .split('\n')
      .filter((line) => /^Deployment\s/.test(line))
      .map((line) => line.split(/\s{2,}/));
    const count = (column: number) => {
      const out = new Map<string, number>();
      for (const cells of table)
        out.set(cells[column]!.replace(/\*$/, ''), (out.get(cells[column]!.replace(/\*$/, '')) ?? 0) + 1);
      return [...out].map(([k, n]) => `${n} ${k}`).sort();
    };
    const summary = (label: string) =>
      status.stdout
        .split('\n')
        .find((line) => line.startsWith(`${label}: `))!
        .slice(label.length + 2)
        .split(', ')
        .sort();
    expect(table.map((cells) => cells.slice(1, 4))).toEqual(
      expect.arrayContaining([
        ['dc-bad', 'synced', 'degraded'],
        ['dc-good', 'synced', 'healthy'],
      ]),
    );
    expect(summary('Resources')).toEqual(count(2));
    expect(summary('Health')).toEqual(count(3));
  });

  it('under drift policy report, logs a drift once over several resyncs, again when it changes; /status and the metric keep it in between', async (t) => {
    const e = await emulator(t, { buildMs: 100 });
    const dir = await manifests(t, 'decision-report', { 'a.yaml': dockerDeploymentYaml('dr-a', { maxScale: 2 }) });
    const common = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefixOf(t, 'decision-report')];
    const daemon = await daemonOf(t, dir, [...common, '--resync', '1s', '--drift', 'report', '--log-level', 'info']);
    await until(
      'dr-a created and in sync',
      async () =>
        ((await daemon.status()).resources as unknown as Row[]).some(
          (r) => r.key === 'Deployment/dr-a' && r.sync.reason === 'Synced',
        ),
      20_000,
    );
    const reported = (): LogLine[] =>
      daemon.lines.filter((l) => l.msg.startsWith('drift reported') && l.key === 'Deployment/dr-a');

    await scaleBehindTheBack(e, 'dr-a', 5);
    await until('the drift reported', () => reported().length > 0, 20_000);
    await resyncs(daemon, 4);
    expect(reported()).toHaveLength(1);
    // Why it is not written, in the words apply and status use, logged once too.
    const notWritten = daemon.lines.filter((l) => l.key === 'Deployment/dr-a' && l.msg.startsWith('not written: '));
    expect(notWritten.map((l) => l.msg)).toEqual([
      'not written: DriftReported: live state drifted from the unchanged manifest; reported, not reverted (drift policy report)',
    ]);
    const row = ((await daemon.status()).resources as unknown as Array<Row & { drift: unknown }>).find(
      (r) => r.key === 'Deployment/dr-a',
    )!;
    expect(row).toMatchObject({
      sync: { reason: 'DriftReported' },
      drift: { policy: 'report', fields: ['source_config.resource_spec.max_scale'] },
    });
    expect(await daemon.metrics()).toMatch(/converge_drifted_resources\{kind="Deployment",policy="report"\} 1/);

    // The drift changes (another field): said again, once.
    const res = await fetch(`${e.url}/v2/deployments/${live(e, 'dr-a').id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_revision_config: { image_uri: 'docker.io/acme/other:9' } }),
    });
    expect(res.status).toBe(200);
    await until('the changed drift reported', () => reported().length > 1, 20_000);
    await resyncs(daemon, 3);
    expect(reported()).toHaveLength(2);
    expect(reported()[1]!.fields).toEqual(
      expect.arrayContaining(['source_config.resource_spec.max_scale', 'source_revision_config.image_uri']),
    );
  });

  it('says "drift found: reverting" once per heal: not again for a resource whose write is still queued or just finished', async (t) => {
    const names = Array.from({ length: 12 }, (_, i) => `df-${i}`);
    // A slow service: with one job at a time, the heals stay queued across several resyncs.
    const e = await emulator(t, { buildMs: 100, latencyMs: 150 });
    const dir = await manifests(
      t,
      'decision-inflight',
      Object.fromEntries(names.map((n) => [`${n}.yaml`, dockerDeploymentYaml(n, { maxScale: 2 })])),
    );
    const common = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefixOf(t, 'decision-inflight')];
    // In sync first (its memory remembers every desired state), then stopped.
    const first = await daemonOf(t, dir, [...common, '--resync', '1h', '--log-level', 'info']);
    await until(
      'every deployment in sync',
      async () => {
        const rows = (await first.status()).resources as unknown as Row[];
        return rows.length === names.length && rows.every((r) => r.sync.status === 'synced');
      },
      30_000,
    );
    await first.kill('SIGTERM');
    for (const n of names) await scaleBehindTheBack(e, n, 7);
    const daemon = await daemonOf(t, dir, [...common, '--resync', '1s', '--concurrency', '1', '--log-level', 'info']);
    await until(
      'every deployment reverted',
      () =>
        names.every(
          (n) =>
            (live(e, n).source_config as { resource_spec?: { max_scale?: number } }).resource_spec?.max_scale === 2,
        ),
      60_000,
    );
    await resyncs(daemon, 1);
    const healed = daemon.lines.filter((l) => l.msg.startsWith('drift found'));
    const perKey = new Map<string, number>();
    for (const l of healed) perKey.set(String(l.key), (perKey.get(String(l.key)) ?? 0) + 1);
    expect([...perKey.keys()].sort()).toEqual(names.map((n) => `Deployment/${n}`).sort());
    expect(
      [...perKey.values()].every((n) => n === 1),
      JSON.stringify([...perKey]),
    ).toBe(true);
    const resyncsWhileQueued = daemon.lines.filter((l) => l.msg === 'reconciled' && l.trigger === 'resync').length;
    console.log(
      `heals: ${healed.length} drift lines for ${names.length} deployments over ${resyncsWhileQueued} resync reconciles`,
    );
  });
});
