// One record of each resource (issue 40): a daemon restarted (SIGTERM) shows every row's last job, appliedFrom, hold and failed build's log lines as before; `converge history` shows the job /status names, the BUILD_FAILED revision, the hold and, after --retry-failed, the release; `converge apply` records its writes with the manifests' id.
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
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
  type RecordedRow,
} from './helpers.js';

const HOOK = 'hook-token-record-5b1e';
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

type Row = RecordedRow;

interface HistoryDoc {
  resource: string;
  events: Array<{
    at: string;
    type: string;
    reason: string;
    message: string;
    manifests: { kind: string; id: string } | null;
    job: { id: string } | null;
    revision: { id: string; status: string; createdAt?: string; updatedAt?: string } | null;
    by: string;
    fields?: string[];
  }>;
}

async function view(
  daemon: DaemonHandle,
): Promise<{ rows: Map<string, Row>; logs: Record<string, { revisionId: string; lines: string[] }> }> {
  const doc = (await daemon.status()) as unknown as {
    resources: Row[];
    failedBuildLogs: Record<string, { revisionId: string; lines: string[] }>;
  };
  return { rows: new Map(doc.resources.map((r) => [r.key, r])), logs: doc.failedBuildLogs };
}

/** What must survive a restart, per row. */
function kept(row: Row | undefined): unknown {
  return { job: row?.job?.id ?? null, appliedFrom: row?.appliedFrom?.id ?? null, hold: row?.hold?.revisionId ?? null };
}

async function history(common: string[], name: string, extra: string[] = []): Promise<HistoryDoc> {
  const run = await runConverge([
    'history',
    name,
    '--output',
    'json',
    ...extra,
    ...common.filter((a, i) => a.startsWith('--redis') || common[i - 1]?.startsWith('--redis')),
  ]);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as HistoryDoc;
}

describe('the record of each resource', () => {
  let e: RunningEmulator;

  it('survives a SIGTERM restart; converge history tells the failed build, its hold and its release; apply records its writes', async () => {
    e = await startEmulator({ buildMs: 300, buildFail: /^rec-bad$/ });
    cleanups.push(() => e.close());
    const dir = await tempDir('record');
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const prefix = testPrefix('record');
    cleanups.push(() => dropPrefix(prefix));
    await writeFiles(dir, {
      'rec-good.yaml': dockerDeploymentYaml('rec-good', { maxScale: 2 }),
      'rec-bad.yaml': dockerDeploymentYaml('rec-bad', { maxScale: 2 }),
    });
    const common = ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];

    // converge apply (no daemon) records its write of rec-good with the manifests' id.
    const apply = await runConverge(['apply', dir, '--target', 'rec-good', '--wait', ...common]);
    expect(apply.code, apply.stderr).toBe(0);
    const applied = await history(common, 'rec-good');
    const write = applied.events.find((ev) => ev.type === 'write_done');
    expect(write, JSON.stringify(applied)).toMatchObject({
      reason: 'created',
      manifests: { kind: 'content' },
      job: { id: expect.any(String) },
    });
    expect(write!.by).toMatch(/^apply@/);
    // It names the fields it wrote (paths only).
    expect(write!.fields).toContain('source_config.resource_spec.max_scale');
    expect(write!.message).toContain('wrote ');
    // --wait read the revision: its start is at its created_at, its deploy at the service's updated_at, not both at the
    // moment apply wrote them down.
    const started = applied.events.find((ev) => ev.type === 'revision' && ev.revision?.status === 'STARTED');
    const deployed = applied.events.find((ev) => ev.type === 'revision' && ev.revision?.status === 'DEPLOYED');
    expect(started?.revision?.createdAt, JSON.stringify(applied.events)).toBeDefined();
    expect(started!.at).toBe(started!.revision!.createdAt);
    expect(deployed!.at).toBe(deployed!.revision!.updatedAt);
    expect(deployed!.revision!.id).toBe(started!.revision!.id);
    expect(Date.parse(deployed!.at)).toBeGreaterThan(Date.parse(started!.at));

    const args = [...common, '--resync', '1h', '--health-poll', '200ms', '--debounce', '50ms'];
    let daemon = await startDaemon(dir, args, { CONVERGE_WEBHOOK_TOKEN: HOOK });
    await until(
      'rec-bad held with its build log, rec-good healthy',
      async () => {
        const { rows, logs } = await view(daemon);
        return (
          rows.get('Deployment/rec-bad')?.hold !== undefined &&
          logs['Deployment/rec-bad'] !== undefined &&
          rows.get('Deployment/rec-good')?.health.status === 'healthy'
        );
      },
      60_000,
      100,
    );
    const before = await view(daemon);
    const bad = before.rows.get('Deployment/rec-bad')!;
    expect(bad.job?.id).toBeTruthy();

    await daemon.kill('SIGTERM');
    daemon = await startDaemon(dir, args, { CONVERGE_WEBHOOK_TOKEN: HOOK });
    await until(
      'the restarted daemon reconciled',
      async () => ((await daemon.status()).reconciles as unknown as { total: number }).total >= 1,
      30_000,
      50,
    );
    const after = await view(daemon);
    for (const key of ['Deployment/rec-bad', 'Deployment/rec-good'])
      expect(kept(after.rows.get(key)), key).toEqual(kept(before.rows.get(key)));
    expect(after.logs['Deployment/rec-bad']).toEqual(before.logs['Deployment/rec-bad']);

    // The history: the job /status names, the BUILD_FAILED revision, the hold; newest first.
    let told = await history(common, 'Deployment/rec-bad');
    expect(told.resource).toBe('Deployment/rec-bad');
    const types = told.events.map((ev) => ev.type);
    expect(types).toContain('write_enqueued');
    expect(told.events.find((ev) => ev.type === 'write_done')?.job?.id).toBe(bad.job!.id);
    const failed = told.events.find((ev) => ev.type === 'revision' && ev.revision?.status === 'BUILD_FAILED');
    // The failure is timed as the service reports it (the revision's updated_at), with its created_at.
    expect(failed?.revision?.updatedAt, JSON.stringify(told.events)).toBeDefined();
    expect(failed!.at).toBe(failed!.revision!.updatedAt);
    expect(Date.parse(failed!.revision!.createdAt!)).toBeLessThanOrEqual(Date.parse(failed!.at));
    // No revision reads UNKNOWN: each is the service's status, STARTED (not read yet) or DEPLOYED (listed active).
    expect(told.events.filter((ev) => ev.revision?.status === 'UNKNOWN')).toEqual([]);
    expect(told.events.find((ev) => ev.type === 'held')).toMatchObject({
      reason: 'RevisionFailed',
      revision: { id: bad.hold!.revisionId },
    });
    const times = told.events.map((ev) => ev.at);
    expect([...times].sort().reverse()).toEqual(times);

    // --retry-failed: the release is recorded.
    const retry = await runConverge(['reconcile', '--retry-failed', 'rec-bad', '--url', daemon.url], {
      CONVERGE_WEBHOOK_TOKEN: HOOK,
    });
    expect(retry.code, retry.stderr).toBe(0);
    told = await until(
      'the release in the history',
      async () => {
        const doc = await history(common, 'rec-bad');
        return doc.events.some((ev) => ev.type === 'released') ? doc : undefined;
      },
      30_000,
      200,
    );
    // The release and the rebuild it asked for say which command and which replica asked.
    const replica = ((await daemon.status()) as unknown as { lease: { replica: string } }).lease.replica;
    const released = told.events.find((ev) => ev.type === 'released');
    expect(released).toMatchObject({ reason: 'HoldReleased', by: replica });
    expect(released!.message).toContain(`hold released by converge reconcile --retry-failed on replica ${replica}`);
    told = await until(
      'the rebuild decided',
      async () => {
        const doc = await history(common, 'rec-bad');
        return doc.events.some((ev) => ev.type === 'decided' && ev.message.startsWith('rebuild: ')) ? doc : undefined;
      },
      30_000,
      200,
    );
    const rebuilt = told.events.find((ev) => ev.type === 'decided' && ev.message.startsWith('rebuild: '))!;
    expect(rebuilt.message).toContain(`asked by converge reconcile --retry-failed on replica ${replica}`);
    expect(told.events.filter((ev) => ev.type === 'decided' && /^noop: job .* is queued/.test(ev.message))).toEqual([]);
    expect((await history(common, 'rec-bad', ['--limit', '2'])).events).toHaveLength(2);

    // Text form, and bad input in one line.
    const text = await runConverge(['history', 'rec-bad', '--redis-url', REDIS_URL, '--redis-prefix', prefix]);
    expect(text.stdout).toMatch(/^Deployment\/rec-bad: \d+ events, newest first/);
    const wrong = await runConverge([
      'history',
      'Deploymnt/rec-bad',
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/not KIND\/NAME with a kind converge knows/);
    expect(wrong.stderr).not.toMatch(/\n\s+at /);
    await daemon.kill('SIGTERM');
  }, 180_000);
});
