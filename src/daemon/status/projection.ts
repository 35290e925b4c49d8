// The daemon's readers of the projection (`{prefix}:record:state`, src/store/event-log.ts): /status and the resource gauges read every resource's state from Redis, re-read only when the projection's version moved, each state parsed only when it moved.
import type { ResourceState } from '../../core/resource-state-model.js';
import { legacyState, type SyncState } from '../../core/legacy-state.js';
import type { ResourceKind } from '../../core/model.js';
import type { ResourceFolds } from '../../store/resource-folds.js';

/**
 * What the reader asks of the prefix's states: the projection's version, and every state (ResourceFolds.states: the
 * versions hash read whole, each state taken from the folds' cache where its version matches, only those that moved
 * read and parsed).
 */
export type ProjectionStore = Pick<ResourceFolds, 'states' | 'stateVersion'>;

/** What /status and the gauges count from the rows: each a list of keys, or counts by kind and legacy state. */
export interface ProjectionSummary {
  counts: Map<ResourceKind, Map<SyncState, number>>;
  secretsUnknown: string[];
  held: string[];
  conflicts: string[];
  deletesPending: string[];
}

/** The counts and key lists of `rows` (pure). */
export function summarize(rows: readonly ResourceState[]): ProjectionSummary {
  const counts = new Map<ResourceKind, Map<SyncState, number>>();
  for (const row of rows) {
    let byState = counts.get(row.kind);
    if (!byState) counts.set(row.kind, (byState = new Map<SyncState, number>()));
    const state = legacyState(row);
    byState.set(state, (byState.get(state) ?? 0) + 1);
  }
  const keys = (test: (row: ResourceState) => boolean): string[] => rows.filter(test).map((r) => r.key);
  return {
    counts,
    secretsUnknown: keys((r) => r.sync.reason === 'SecretsUnknown'),
    held: keys((r) => r.hold !== undefined),
    conflicts: keys((r) => r.sync.reason === 'Conflict'),
    deletesPending: keys((r) => r.sync.reason === 'DeletePending'),
  };
}

/** The resource gauges of the daemon's metrics (src/daemon/telemetry/metrics.ts). */
export interface ResourceGauges {
  setResourceStates(counts: ReadonlyMap<ResourceKind, ReadonlyMap<SyncState, number>>): void;
  setResourceHealth(rows: Iterable<ResourceState>): void;
  setResourceSync(rows: Iterable<ResourceState>): void;
  setResourceHeld(rows: Iterable<ResourceState>): void;
  secretsUnknown: { set(value: number): void };
  conflictResources: { set(value: number): void };
}

/** Sets the resource gauges from the rows (converge_resources, the health, sync and held gauges, SecretsUnknown and Conflict counts). */
export function setResourceGauges(gauges: ResourceGauges, rows: readonly ResourceState[]): void {
  const summary = summarize(rows);
  gauges.setResourceStates(summary.counts);
  gauges.setResourceHealth(rows);
  gauges.setResourceSync(rows);
  gauges.setResourceHeld(rows);
  gauges.secretsUnknown.set(summary.secretsUnknown.length);
  gauges.conflictResources.set(summary.conflicts.length);
}

/**
 * Every resource's state as the projection in Redis has it: what the leader folded (this replica's when it leads,
 * after what it folded is written), or the leader's when this replica stands by. Read again only when the
 * projection's version moved, and then only the states whose version moved are read and parsed: the rows are the
 * objects the folds' cache holds (src/store/resource-folds.ts), the leader's tracker's rows too. A Redis that does not answer, or that holds no state while this replica has rows (a
 * FLUSHALL, until the next reconcile rebuilds them), gives this replica's own rows (`fallback`).
 */
export class ProjectionReader {
  private cached: { version: string; rows: ResourceState[] } | undefined;
  /** Whether the last read served this replica's rows because Redis held no state (lost): said on /status. */
  fromMemory = false;

  constructor(
    private readonly store: ProjectionStore,
    private readonly parts: {
      written: () => Promise<void>;
      order: () => readonly string[];
      fallback: () => ResourceState[];
      onError: (error: unknown) => void;
    },
  ) {}

  async rows(): Promise<ResourceState[]> {
    try {
      await this.parts.written();
      const version = await this.store.stateVersion();
      if (version !== null && this.cached?.version === version) return this.cached.rows;
      const rows = this.ordered(await this.store.states());
      // Redis lost every state (a FLUSHALL) while this replica has rows: they stay shown until the next reconcile rebuilds them.
      this.fromMemory = rows.length === 0 && this.parts.fallback().length > 0;
      if (this.fromMemory) return this.parts.fallback();
      this.cached = version === null ? undefined : { version, rows };
      return rows;
    } catch (error) {
      this.parts.onError(error);
      return this.parts.fallback();
    }
  }

  /** The rows in the plan's order (this replica's last reconcile), then any it does not know, by key. */
  private ordered(states: ReadonlyMap<string, ResourceState>): ResourceState[] {
    const order = this.parts.order();
    const out: ResourceState[] = [];
    for (const key of order) {
      const state = states.get(key);
      if (state) out.push(state);
    }
    const known = new Set(order);
    const rest = [...states.keys()].filter((key) => !known.has(key)).sort();
    for (const key of rest) out.push(states.get(key)!);
    return out;
  }
}
