// The per-resource gauges (health, sync, held: one series per resource) on a registry of their own, rendered once per change.
import { Gauge, Registry } from 'prom-client';
import type { ResourceKind } from '../../core/model.js';
import type { HealthStatus } from '../../core/health.js';

/** What the daemon sets on the per-resource gauges, and their exposition. */
export interface ResourceSeries {
  /** Replaces the health gauge with these resources' current health. */
  setResourceHealth: (
    rows: Iterable<{ kind: ResourceKind; name: string; key?: string; health: { status: HealthStatus } }>,
  ) => void;
  /** Replaces the sync gauge with these resources' current sync status and reason. */
  setResourceSync: (
    rows: Iterable<{ kind: ResourceKind; name: string; key?: string; sync: { status: string; reason: string } }>,
  ) => void;
  /** Replaces the held gauge with the holds of these resources (a resource without one has no series). */
  setResourceHeld: (
    rows: Iterable<{ kind: ResourceKind; name: string; key?: string; hold?: { reason: string } }>,
  ) => void;
  /**
   * The three gauges as Prometheus text: rendered again only after a set changed a series, else the text of the last
   * render (at 10,000 resources a render is 20,000 series, about 50 MB allocated and 1.9 MB of text).
   */
  render(): Promise<string>;
}

/** Between the values of one series in `shown` (they are label values: enum words, never this character). */
const SEP = '\u0000';

/**
 * Sets one series of value 1 per resource (labels kind, name and `labels`): its current values. Only the series that
 * changed are written (at 10,000 resources, resetting and setting every series at each reconcile was a tenth of what a
 * resync allocated, docs/performance.md); returns whether any series was written or removed. What it remembers of
 * each series is its resource key (`Kind/name`, the row's own string when it has one) and its values joined, nothing
 * else: kind, name and values are read back from them when the series goes.
 */
function oneSeriesPerResource<L extends string>(gauge: Gauge<'kind' | 'name' | L>, ...labels: L[]) {
  /** The values each resource's series shows now, joined by SEP, by `Kind/name`. */
  const shown = new Map<string, string>();
  const labelsOf = (kind: string, name: string, values: readonly string[]) => {
    const set: Record<string, string> = { kind, name };
    labels.forEach((label, i) => (set[label] = values[i]!));
    return set as Partial<Record<'kind' | 'name' | L, string>>;
  };
  const remove = (key: string, joined: string): void => {
    const slash = key.indexOf('/');
    gauge.remove(labelsOf(key.slice(0, slash), key.slice(slash + 1), joined.split(SEP)));
  };
  return function setRows<R extends { kind: ResourceKind; name: string; key?: string }>(
    rows: Iterable<R>,
    valuesOf: (row: R) => string[],
  ): boolean {
    const seen = new Set<string>();
    let changed = false;
    for (const row of rows) {
      const key = row.key ?? `${row.kind}/${row.name}`;
      seen.add(key);
      const values = valuesOf(row);
      const joined = values.join(SEP);
      const before = shown.get(key);
      if (before === joined) continue;
      if (before !== undefined) remove(key, before);
      gauge.set(labelsOf(row.kind, row.name, values), 1);
      shown.set(key, joined);
      changed = true;
    }
    for (const [key, before] of shown) {
      if (seen.has(key)) continue;
      remove(key, before);
      shown.delete(key);
      changed = true;
    }
    return changed;
  };
}

/** The health, sync and held gauges on a registry of their own (so a scrape renders them only when they changed). */
export function createResourceSeries(registry = new Registry()): ResourceSeries {
  const health = oneSeriesPerResource(
    new Gauge({
      name: 'converge_resource_health',
      help: 'Rollout health of each managed resource: 1 on the series of its current health (healthy, progressing, degraded, unknown).',
      labelNames: ['kind', 'name', 'health'] as const,
      registers: [registry],
    }),
    'health',
  );
  const sync = oneSeriesPerResource(
    new Gauge({
      name: 'converge_resource_sync',
      help: 'Sync condition of each managed resource: 1 on the series of its current status (synced, out_of_sync, blocked, suspended) and reason (e.g. RevisionFailed, WriteRefused, DriftReported, DeletePending; docs/daemon.md).',
      labelNames: ['kind', 'name', 'status', 'reason'] as const,
      registers: [registry],
    }),
    'status',
    'reason',
  );
  const held = oneSeriesPerResource(
    new Gauge({
      name: 'converge_resource_held',
      help: "Resources converge holds (their desired state is not written again until the manifest changes or converge reconcile --retry-failed releases it): 1 per held resource, by the hold's reason (RevisionFailed: its revision failed; WriteRefused: the service refused the write for good; NameTaken: the service answered a create that the name is taken).",
      labelNames: ['kind', 'name', 'reason'] as const,
      registers: [registry],
    }),
    'reason',
  );
  /** The text of the last render while no series changed since (a promise, so scrapes at once share one render). */
  let rendered: Promise<string> | undefined;
  const changed = (written: boolean): void => {
    if (written) rendered = undefined;
  };
  return {
    setResourceHealth: (rows) => changed(health(rows, (row) => [row.health.status])),
    setResourceSync: (rows) => changed(sync(rows, (row) => [row.sync.status, row.sync.reason])),
    setResourceHeld: (rows) =>
      changed(
        held(
          [...rows].filter((row) => row.hold),
          (row) => [row.hold!.reason],
        ),
      ),
    render() {
      if (!rendered) {
        const render = registry.metrics();
        rendered = render;
        // A render that fails is not kept: the next scrape renders again.
        render.catch(() => rendered === render && (rendered = undefined));
      }
      return rendered;
    },
  };
}
