// The per-resource gauges: rendered again only after a series changed, the same text otherwise.
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { parsePrometheusText } from '../../../test/helpers/prometheus.js';
import { createResourceSeries } from './resource-gauges.js';

type Status = 'healthy' | 'degraded';
const row = (name: string, health: Status, reason = 'Synced', hold?: string) => ({
  kind: 'Deployment' as const,
  name,
  health: { status: health },
  sync: { status: reason === 'Synced' ? 'synced' : 'out_of_sync', reason },
  ...(hold ? { hold: { reason: hold } } : {}),
});
const setAll = (series: ReturnType<typeof createResourceSeries>, rows: ReturnType<typeof row>[]) => {
  series.setResourceHealth(rows);
  series.setResourceSync(rows);
  series.setResourceHeld(rows);
};
const lines = async (series: ReturnType<typeof createResourceSeries>) =>
  parsePrometheusText(await series.render())
    .map((s) => `${s.name}{${Object.values(s.labels).join(',')}} ${s.value}`)
    .sort();

describe('createResourceSeries', () => {
  it('renders the registry once while no series changes, and again after each setter changed one', async () => {
    const registry = new Registry();
    const rendered = vi.spyOn(registry, 'metrics');
    const series = createResourceSeries(registry);
    setAll(series, [row('a', 'healthy'), row('b', 'degraded', 'RevisionFailed', 'RevisionFailed')]);
    const first = await series.render();
    // The same rows again (a scrape with the projection unchanged): no series written, the text of the last render.
    setAll(series, [row('a', 'healthy'), row('b', 'degraded', 'RevisionFailed', 'RevisionFailed')]);
    const [again, concurrent] = await Promise.all([series.render(), series.render()]);
    expect(again).toBe(first);
    expect(concurrent).toBe(first);
    expect(rendered).toHaveBeenCalledTimes(1);
    expect(await lines(series)).toEqual([
      'converge_resource_health{Deployment,a,healthy} 1',
      'converge_resource_health{Deployment,b,degraded} 1',
      'converge_resource_held{Deployment,b,RevisionFailed} 1',
      'converge_resource_sync{Deployment,a,synced,Synced} 1',
      'converge_resource_sync{Deployment,b,out_of_sync,RevisionFailed} 1',
    ]);

    // Each setter alone invalidates the text when it changes a series.
    series.setResourceHealth([row('a', 'degraded'), row('b', 'degraded')]);
    expect(await lines(series)).toContain('converge_resource_health{Deployment,a,degraded} 1');
    series.setResourceSync([row('a', 'degraded', 'Applying'), row('b', 'degraded', 'RevisionFailed')]);
    expect(await lines(series)).toContain('converge_resource_sync{Deployment,a,out_of_sync,Applying} 1');
    series.setResourceHeld([row('a', 'degraded'), row('b', 'degraded')]);
    expect((await lines(series)).filter((l) => l.startsWith('converge_resource_held'))).toEqual([]);
    expect(rendered).toHaveBeenCalledTimes(4);

    // A resource gone takes its series away.
    setAll(series, [row('b', 'degraded')]);
    expect(await lines(series)).toEqual([
      'converge_resource_health{Deployment,b,degraded} 1',
      'converge_resource_sync{Deployment,b,synced,Synced} 1',
    ]);
  });

  it("takes a series away by the row's own key, whatever its name holds", async () => {
    const series = createResourceSeries(new Registry());
    const provider = {
      kind: 'OAuthProvider' as const,
      name: 'acme/slack',
      key: 'OAuthProvider/acme/slack',
      health: { status: 'healthy' as const },
      sync: { status: 'synced', reason: 'Synced' },
    };
    series.setResourceHealth([provider, { ...row('a', 'healthy'), key: 'Deployment/a' }]);
    series.setResourceSync([provider]);
    expect(await lines(series)).toContain('converge_resource_health{OAuthProvider,acme/slack,healthy} 1');
    series.setResourceHealth([{ ...provider, health: { status: 'degraded' as const } }]);
    series.setResourceSync([]);
    expect(await lines(series)).toEqual(['converge_resource_health{OAuthProvider,acme/slack,degraded} 1']);
  });
});
