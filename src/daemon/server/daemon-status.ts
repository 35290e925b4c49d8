// The daemon's /status document (format_version 1), assembled from its parts at the moment it is asked for.
import { hostname } from 'node:os';
import { HEALTH_STATUSES, SYNC_STATUSES, type HealthStatus, type SyncStatus } from '../../core/health.js';
import type { LeadershipStatus } from '../../leader/leadership.js';
import { VERSION } from '../../service/version.js';
import type { DaemonSettings } from '../daemon-options.js';
import { SYNC_STATES } from '../telemetry/metrics.js';
import type { Reconciler } from '../reconcile/reconciler.js';
import { DEFAULT_PRUNE_GRACE_MS } from '../../core/prune-grace.js';
import { summarize } from '../status/projection.js';
import type { ResourceState } from '../../core/resource-state-model.js';
import { statusRow, type ResourceStatus } from '../status/status-row.js';
import { versionLabel, type ManifestVersion } from '../../core/manifest-version.js';
import type { OperatorRequestStore, StoredRequest } from '../../store/operator-requests.js';
import { windowHeldMessage, type WindowVerdict } from '../../core/windows.js';

export const DAEMON_VERSION = VERSION;

/** What the document reads of the reconciler: the record of its reconciles, the states, their build logs. */
export type StatusReconciler = Pick<
  Reconciler,
  'reconcilesView' | 'resourceStates' | 'stateRebuilding' | 'failedBuildLogs'
>;

/** What the /status document reads from the running daemon. */
export interface StatusParts {
  dir: string;
  startedAt: string;
  stopping: boolean;
  /** The service's URL (credentials are taken out), or undefined before it is open. */
  serviceUrl: string | undefined;
  embedded: boolean;
  /** True when POST /reconcile is on (CONVERGE_WEBHOOK_TOKEN set): what `converge reconcile` needs. */
  reconcileEndpoint: boolean;
  settings: Pick<DaemonSettings, 'driftPolicy' | 'resync' | 'debounce' | 'prune' | 'pruneMode' | 'pruneGrace'>;
  lease: LeadershipStatus | null;
  appliedState: { lost: boolean; lostAt: string | null; losses: number; detail: string | null };
  reconciler: StatusReconciler | undefined;
  /** The operator's requests kept in Redis until a reconcile serves them (src/store/operator-requests.ts). */
  requests?: Pick<OperatorRequestStore, 'all'> | undefined;
  /** The resync cycles this daemon ran (the newest last). */
  cycles: readonly string[];
  /** The change windows' verdict now, from the settings and Redis' clock (undefined: no window configured). */
  window?: () => Promise<WindowVerdict | undefined>;
}

/** A version with its label (src/core/manifest-version.ts), so the page shows what `converge status` shows. */
function labelled<V extends ManifestVersion>(version: V | undefined): (V & { label: string }) | undefined {
  return version ? { ...version, label: versionLabel(version) } : undefined;
}

/** Resources by health (every health named, zeros included). */
function healthCounts(rows: ReadonlyArray<{ health: { status: HealthStatus } }>): Record<HealthStatus, number> {
  const out = Object.fromEntries(HEALTH_STATUSES.map((h) => [h, 0])) as Record<HealthStatus, number>;
  for (const row of rows) out[row.health.status] += 1;
  return out;
}

/** Resources by sync status (every status named, zeros included): the SYNC column of `converge status`, counted. */
function syncCounts(rows: ReadonlyArray<{ sync: { status: SyncStatus } }>): Record<SyncStatus, number> {
  const out = Object.fromEntries(SYNC_STATUSES.map((s) => [s, 0])) as Record<SyncStatus, number>;
  for (const row of rows) out[row.sync.status] += 1;
  return out;
}

function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(unparseable URL)';
  }
}

/** The operator's requests that wait to be served, oldest first (none when Redis does not answer: said in the log). */
async function pendingRequests(parts: StatusParts): Promise<Array<{ id: string } & StoredRequest>> {
  const kept = await parts.requests?.all().catch(() => undefined);
  return [...(kept ?? [])].map(([id, request]) => ({ id, ...request }));
}

/**
 * The change windows now (null: none configured): whether they hold the daemon's writes, by which window, until when,
 * and whether a manual reconcile writes (docs/rollouts.md, "Change windows").
 */
function windowStatus(verdict: WindowVerdict | undefined): Record<string, unknown> | null {
  if (!verdict) return null;
  const by = verdict.by;
  return {
    blocked: verdict.blocked,
    manualAllowed: verdict.manualAllowed,
    why: by?.why ?? null,
    window: by
      ? {
          index: by.index,
          kind: by.window.kind,
          schedule: by.window.schedule,
          duration: by.window.duration,
          timezone: by.window.timezone,
          manual: by.window.manual,
        }
      : null,
    until: verdict.until?.toISOString() ?? null,
    nextChange: verdict.nextChange?.toISOString() ?? null,
    message: windowHeldMessage(verdict) ?? null,
  };
}

/** A row as /status shows it: its appliedFrom labelled (versionLabel). */
type ShownRow = ResourceStatus | (Omit<ResourceStatus, 'appliedFrom'> & { appliedFrom: unknown });

/** What the document shows of a list of states: its rows, their summary and their counts. */
interface RowsView {
  rows: readonly ShownRow[];
  summary: ReturnType<typeof summarize>;
  health: Record<HealthStatus, number>;
  sync: Record<SyncStatus, number>;
  counts: Record<string, Record<string, number>>;
}

/**
 * The rows view of each list of states read, kept while the list is: the projection hands the same list while its
 * version stands (src/daemon/status/projection.ts), so an unchanged poll builds no row and the status server's kept
 * texts of them stand (src/daemon/server/field-texts.ts).
 */
const rowsViews = new WeakMap<readonly ResourceState[], RowsView>();

/**
 * Each state's row as /status shows it, built once per state object: a state the projection's version did not move is
 * the same object at the next read (src/store/resource-folds.ts), so its row is too, and the status server hashes it
 * once (status-view.ts RowSequence).
 */
const shownRows = new WeakMap<ResourceState, ShownRow>();

function shownRow(state: ResourceState): ShownRow {
  let row = shownRows.get(state);
  if (row) return row;
  const built = statusRow(state);
  row = built.appliedFrom ? { ...built, appliedFrom: labelled(built.appliedFrom) } : built;
  shownRows.set(state, row);
  return row;
}

function rowsView(states: readonly ResourceState[]): RowsView {
  const kept = rowsViews.get(states);
  if (kept) return kept;
  const rows = states.map(shownRow);
  const summary = summarize(states);
  const counts: Record<string, Record<string, number>> = {};
  for (const [kind, byState] of summary.counts) {
    counts[kind] = Object.fromEntries(SYNC_STATES.map((s) => [s, byState.get(s) ?? 0]));
  }
  const view: RowsView = { rows, summary, health: healthCounts(rows), sync: syncCounts(rows), counts };
  rowsViews.set(states, view);
  return view;
}

/** The /status document: its resources are the projection in Redis (docs/daemon.md, "The event log"). */
export async function statusDocument(parts: StatusParts): Promise<Record<string, unknown>> {
  const { settings, reconciler } = parts;
  // The leader's reconciles, plan, orphans and manifests as recorded in Redis: the same on every replica.
  const snapshot = await reconciler?.reconcilesView();
  // One set of rows: the summaries below and the table of `converge status` count the same states.
  const states = (await reconciler?.resourceStates()) ?? [];
  const { rows, summary, health, sync, counts } = rowsView(states);
  return {
    format_version: '1',
    daemon: {
      version: DAEMON_VERSION,
      dir: parts.dir,
      pid: process.pid,
      hostname: hostname(),
      startedAt: parts.startedAt,
      stopping: parts.stopping,
      service: parts.serviceUrl !== undefined ? redactUrl(parts.serviceUrl) : null,
      embedded: parts.embedded,
      reconcileEndpoint: parts.reconcileEndpoint,
      driftPolicy: settings.driftPolicy,
      resyncMs: settings.resync,
      debounceMs: settings.debounce,
      prune: {
        enabled: settings.prune === true,
        mode: settings.pruneMode ?? 'auto',
        graceMs: settings.pruneGrace ?? DEFAULT_PRUNE_GRACE_MS,
      },
    },
    lease: parts.lease,
    appliedState: {
      lost: parts.appliedState.lost,
      lostAt: parts.appliedState.lostAt,
      losses: parts.appliedState.losses,
      detail: parts.appliedState.detail,
    },
    secretsUnknown: summary.secretsUnknown,
    held: summary.held,
    health,
    sync,
    conflicts: summary.conflicts,
    deletesPending: summary.deletesPending,
    manifestVersion: labelled(snapshot?.lastReconcile?.manifestVersion) ?? null,
    manifests: snapshot?.manifests ?? null,
    lastReconcile: snapshot?.lastReconcile ?? null,
    lastSuccessfulReconcileAt: snapshot?.lastSuccessfulReconcileAt ?? null,
    reconciles: snapshot?.reconciles ?? null,
    resync: { everyMs: settings.resync, cyclesRun: [...parts.cycles] },
    /** The change windows now: whether one holds the daemon's writes (WindowHeld), and until when. */
    window: windowStatus(await parts.window?.().catch(() => undefined)),
    counts,
    // Redis lost the states of these rows: shown as this replica last knew them until the next reconcile rebuilds them.
    resourcesRebuilding: reconciler?.stateRebuilding() ?? false,
    resources: rows,
    failedBuildLogs: (await reconciler?.failedBuildLogs(states)) ?? {},
    orphans: snapshot?.orphans ?? [],
    history: snapshot?.history ?? [],
    plan: snapshot?.plan ?? null,
    /** The last plan's refusal to prune (nothing deleted, and why), or null: said here and on the page, not only in the log. */
    pruneRefused: snapshot?.plan?.prune_refused ?? null,
    /** POST /reconcile requests kept in Redis until a reconcile serves them (a new leader serves a former one's). */
    pendingRequests: await pendingRequests(parts),
  };
}
