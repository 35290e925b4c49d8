// Daemon metrics: names, labels and values as Prometheus text, parsed back.
import { describe, expect, it } from 'vitest';
import { parsePrometheusText, type Sample } from '../../../test/helpers/prometheus.js';
import { createMetrics, SYNC_STATES, type SyncState } from './metrics.js';

function find(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

describe('createMetrics', () => {
  it('renders every converge metric with its labels', async () => {
    const m = createMetrics({ processMetrics: false });
    m.observeRequest({ method: 'GET', route: '/v2/deployments', status: 200, durationMs: 12, attempt: 1 });
    m.observeRequest({ method: 'GET', route: '/v2/deployments', status: 200, durationMs: 8, attempt: 1 });
    m.observeRequest({
      method: 'PATCH',
      route: '/v2/deployments/{deployment_id}',
      status: 503,
      durationMs: 5,
      attempt: 1,
    });
    m.observeRequest({
      method: 'PATCH',
      route: '/v2/deployments/{deployment_id}',
      status: 'network',
      durationMs: 5,
      attempt: 2,
    });
    m.reconcileDuration.observe({ trigger: 'watch', result: 'ok' }, 0.2);
    m.reconciles.inc({ trigger: 'watch', result: 'ok' });
    m.lastSuccess.set(1_700_000_000);
    m.jobs.inc({ outcome: 'updated' }, 3);
    m.jobsEnqueued.inc({ operation: 'patch-deployment' }, 3);
    m.drifted.set({ kind: 'Deployment', policy: 'report' }, 2);
    m.setResourceStates(
      new Map([
        [
          'Deployment',
          new Map<SyncState, number>([
            ['synced', 5],
            ['blocked', 1],
          ]),
        ],
      ]),
    );

    const samples = parsePrometheusText(await m.render());
    expect(
      find(samples, 'converge_service_requests_total', {
        method: 'GET',
        endpoint: '/v2/deployments',
        status: '200',
      })[0]!.value,
    ).toBe(2);
    expect(
      find(samples, 'converge_service_requests_total', {
        endpoint: '/v2/deployments/{deployment_id}',
        status: '503',
      })[0]!.value,
    ).toBe(1);
    expect(find(samples, 'converge_service_requests_total', { status: 'network' })[0]!.value).toBe(1);
    expect(find(samples, 'converge_service_request_duration_seconds_count', { method: 'GET' })[0]!.value).toBe(2);
    expect(
      find(samples, 'converge_reconcile_duration_seconds_count', { trigger: 'watch', result: 'ok' })[0]!.value,
    ).toBe(1);
    expect(
      find(samples, 'converge_reconcile_duration_seconds_bucket', { trigger: 'watch', le: '0.25' })[0]!.value,
    ).toBe(1);
    expect(find(samples, 'converge_reconcile_duration_seconds_bucket', { trigger: 'watch', le: '0.1' })[0]!.value).toBe(
      0,
    );
    expect(find(samples, 'converge_reconciles_total', { trigger: 'watch', result: 'ok' })[0]!.value).toBe(1);
    expect(find(samples, 'converge_last_successful_reconcile_timestamp_seconds')[0]!.value).toBe(1_700_000_000);
    expect(find(samples, 'converge_jobs_total', { outcome: 'updated' })[0]!.value).toBe(3);
    expect(find(samples, 'converge_jobs_total', { outcome: 'failed' })[0]!.value).toBe(0);
    expect(find(samples, 'converge_jobs_enqueued_total', { operation: 'patch-deployment' })[0]!.value).toBe(3);
    expect(find(samples, 'converge_drifted_resources', { kind: 'Deployment', policy: 'report' })[0]!.value).toBe(2);
    // Every kind x state pair is present, zeros included, so dashboards see a state go to zero.
    const states = find(samples, 'converge_resources', { kind: 'Deployment' });
    expect(states.map((s) => s.labels.state).sort()).toEqual([...SYNC_STATES].sort());
    expect(find(samples, 'converge_resources', { kind: 'Deployment', state: 'synced' })[0]!.value).toBe(5);
    expect(find(samples, 'converge_resources', { kind: 'Deployment', state: 'blocked' })[0]!.value).toBe(1);
    expect(find(samples, 'converge_resources', { kind: 'OAuthProvider', state: 'synced' })[0]!.value).toBe(0);

    // A later reconcile replaces the counts.
    m.setResourceStates(new Map([['Deployment', new Map<SyncState, number>([['synced', 6]])]]));
    const after = parsePrometheusText(await m.render());
    expect(find(after, 'converge_resources', { kind: 'Deployment', state: 'blocked' })[0]!.value).toBe(0);
  });

  it('shows one health series of value 1 per resource: a changed health moves it, a resource gone takes it away', async () => {
    const m = createMetrics({ processMetrics: false });
    const health = async () =>
      find(parsePrometheusText(await m.render()), 'converge_resource_health')
        .map((s) => `${s.labels.name}=${s.labels.health}:${s.value}`)
        .sort();
    const row = (name: string, status: 'healthy' | 'progressing' | 'degraded' | 'unknown') => ({
      kind: 'Deployment' as const,
      name,
      health: { status },
    });
    m.setResourceHealth([row('a', 'progressing'), row('b', 'healthy')]);
    expect(await health()).toEqual(['a=progressing:1', 'b=healthy:1']);
    m.setResourceHealth([row('a', 'healthy'), row('b', 'healthy')]);
    expect(await health()).toEqual(['a=healthy:1', 'b=healthy:1']);
    m.setResourceHealth([row('b', 'degraded'), row('c', 'unknown')]);
    expect(await health()).toEqual(['b=degraded:1', 'c=unknown:1']);
    m.setResourceHealth([]);
    expect(await health()).toEqual([]);
  });

  it('shows one sync series of value 1 per resource by status and reason, moved on a change, removed with the resource', async () => {
    const m = createMetrics({ processMetrics: false });
    const sync = async () =>
      find(parsePrometheusText(await m.render()), 'converge_resource_sync')
        .map((s) => `${s.labels.kind}/${s.labels.name}=${s.labels.status}/${s.labels.reason}:${s.value}`)
        .sort();
    const row = (name: string, status: string, reason: string) => ({
      kind: 'Deployment' as const,
      name,
      sync: { status, reason },
    });
    m.setResourceSync([row('a', 'out_of_sync', 'RevisionFailed'), row('b', 'synced', 'Synced')]);
    expect(await sync()).toEqual(['Deployment/a=out_of_sync/RevisionFailed:1', 'Deployment/b=synced/Synced:1']);
    // A release: the reason changes while the status stays; the held series goes.
    m.setResourceSync([row('a', 'out_of_sync', 'Applying'), row('b', 'synced', 'Synced')]);
    expect(await sync()).toEqual(['Deployment/a=out_of_sync/Applying:1', 'Deployment/b=synced/Synced:1']);
    m.setResourceSync([row('b', 'out_of_sync', 'DeletePending')]);
    expect(await sync()).toEqual(['Deployment/b=out_of_sync/DeletePending:1']);
    m.setResourceSync([]);
    expect(await sync()).toEqual([]);
  });

  it("shows one held series per held resource, by the hold's reason, gone with the hold", async () => {
    const m = createMetrics({ processMetrics: false });
    const held = async () =>
      find(parsePrometheusText(await m.render()), 'converge_resource_held')
        .map((s) => `${s.labels.name}=${s.labels.reason}:${s.value}`)
        .sort();
    const row = (name: string, reason?: string) => ({
      kind: 'Deployment' as const,
      name,
      ...(reason ? { hold: { reason } } : {}),
    });
    m.setResourceHeld([row('a', 'RevisionFailed'), row('b'), row('c', 'WriteRefused')]);
    expect(await held()).toEqual(['a=RevisionFailed:1', 'c=WriteRefused:1']);
    // a released; b held on a refused write.
    m.setResourceHeld([row('a'), row('b', 'WriteRefused'), row('c', 'WriteRefused')]);
    expect(await held()).toEqual(['b=WriteRefused:1', 'c=WriteRefused:1']);
    m.setResourceHeld([]);
    expect(await held()).toEqual([]);
  });

  it('exports the resync period the daemon runs with, 0 until it is set', async () => {
    const m = createMetrics({ processMetrics: false });
    expect(find(parsePrometheusText(await m.render()), 'converge_resync_period_seconds')[0]!.value).toBe(0);
    m.resyncPeriod.set(300);
    expect(find(parsePrometheusText(await m.render()), 'converge_resync_period_seconds')[0]!.value).toBe(300);
  });

  it('gives each daemon its own registry, with process metrics when asked', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.reconciles.inc({ trigger: 'startup', result: 'ok' });
    const samplesB = parsePrometheusText(await b.render());
    expect(find(samplesB, 'converge_reconciles_total')).toHaveLength(0);
    expect(
      find(samplesB, 'converge_process_resident_memory_bytes').length +
        find(samplesB, 'converge_nodejs_heap_size_used_bytes').length,
    ).toBeGreaterThan(0);
  });
});

describe('parsePrometheusText', () => {
  it('reads labels with escapes, +Inf and timestamps, and refuses garbage', () => {
    const samples = parsePrometheusText(
      '# HELP x help\n# TYPE x counter\nx{a="1",b="q\\"uote"} 3\ny_bucket{le="+Inf"} 4 1700000000\nz +Inf\n',
    );
    expect(samples).toEqual([
      { name: 'x', labels: { a: '1', b: 'q"uote' }, value: 3 },
      { name: 'y_bucket', labels: { le: '+Inf' }, value: 4 },
      { name: 'z', labels: {}, value: Infinity },
    ]);
    expect(() => parsePrometheusText('not a metric line at all')).toThrow();
  });
});
