// The leader's cache of each resource's state in Redis: the rows, folded from the events (src/core/resource-state.ts) as reconciles and polls report them, every change handed with its before and after to the sinks (StateFolds, which folds it again in Redis; the health transitions).
import { isDeepStrictEqual } from 'node:util';
import type { HealthCondition } from '../../core/health.js';
import type { ResourceHold } from '../../core/holds.js';
import type { RevisionReading } from '../../core/kinds/index.js';
import { resourceKey, resourceName, type PlanChange } from '../../core/model.js';
import type { Outcome } from '../../core/decide.js';
import { foldResource } from '../../core/resource-state.js';
import type { ResourceEvent, ResourceState } from '../../core/resource-state-model.js';
import type { RolloutTarget } from '../../core/rollout.js';
import { ReconcileJobResult } from '../../store/schema.js';
import type { ReconcileOutcome } from '../cycle/cycle.js';
import type { RolloutView } from '../cycle/cycle-context.js';
import type { ManifestVersion } from '../../core/manifest-version.js';
import { decisionEvents, rowSources, statusRow, type ResourceStatus } from './status-row.js';
import { healthChanged, type ChangeSink, type TrackedChange } from './tracked-change.js';

/** Rollout settings the tracker reads. */
export interface HealthSettings {
  /** A revision not active after this long is degraded (ProgressDeadlineExceeded). */
  progressDeadlineMs: number;
  now?: () => number;
}

/** A deployment whose rollout the poller follows (its latest revision, when known, is read), and its hold. */
export interface RolloutToFollow extends RolloutTarget {
  hold?: ResourceHold | undefined;
}

/**
 * Resource states, rebuilt from each reconcile and updated as jobs finish and polls read rollouts: every change is an
 * event folded by foldResource (src/core/resource-state.ts). Job results that arrive before the reconcile that enqueued
 * them has ended are kept and folded when it ends.
 */
export class ResourceTracker implements RolloutView {
  private rows = new Map<string, ResourceState>();
  private orphanKeys: string[] = [];
  /** Rows Redis has no state of (lost): the next decision of each is written even when it is the same. */
  private readonly unwritten = new Set<string>();
  private readonly early = new Map<
    string,
    | { ok: true; result: unknown; at: string; desired?: string; version?: ManifestVersion }
    | { ok: false; reason: string; at: string }
  >();
  private readonly progressDeadlineMs: number;
  private readonly clock: () => number;
  /** Per resource, its latest revision and since when it is known to build (for the progress deadline). */
  private readonly buildingSince = new Map<string, { revisionId: string | null; since: number }>();
  /** Where each change goes with the fold's before and after: StateFolds, the health transitions' log and metrics. */
  private readonly sinks: ChangeSink[] = [];

  constructor(settings: HealthSettings = { progressDeadlineMs: 30 * 60_000 }) {
    this.progressDeadlineMs = settings.progressDeadlineMs;
    this.clock = settings.now ?? Date.now;
  }

  /** Reports every change of the rows to `sink` from now on (StateFolds, the health transitions). */
  record(sink: ChangeSink): void {
    this.sinks.push(sink);
  }

  private changed(change: TrackedChange): void {
    for (const sink of this.sinks) sink.changed(change);
  }

  /**
   * Takes up every resource's state in Redis (a restart, a failover) in place of this replica's own rows: the state is
   * the truth, the rows its cache. None in Redis: this replica's rows stay, each to be written by the next reconcile.
   */
  restore(states: ReadonlyMap<string, ResourceState>): number {
    if (states.size === 0) {
      for (const key of this.rows.keys()) this.unwritten.add(key);
      return 0;
    }
    this.rows = new Map(states);
    this.unwritten.clear();
    return states.size;
  }

  /**
   * Takes the states Redis holds for rows of this replica (read by their version, or answered by a fold): a state that
   * moved replaces the row; a row Redis has no state of stays shown and is written by the next reconcile's decision.
   */
  adopt(states: ReadonlyMap<string, { state: ResourceState | undefined }>): void {
    for (const [key, { state }] of states) {
      const row = this.rows.get(key);
      if (!row) continue;
      if (state === undefined) this.unwritten.add(key);
      else if (state !== row) this.rows.set(key, state);
    }
  }

  /** The keys of the rows (the plan's order). */
  keys(): string[] {
    return [...this.rows.keys()];
  }

  /** Whether some row has no state in Redis (lost with a FLUSHALL): /status says they are rebuilt. */
  rebuilding(): boolean {
    return this.unwritten.size > 0;
  }

  /** The resource whose row shows job `jobId` as its last (a job's result folds into that row only). */
  private keyOfJob(jobId: string): string | undefined {
    for (const row of this.rows.values()) if (row.job?.id === jobId) return row.key;
    return undefined;
  }

  /** Since when `key` is known to build `revisionId` (the first time it is asked about that revision). */
  private sinceFor(key: string, revisionId: string | null): number {
    const known = this.buildingSince.get(key);
    if (known && known.revisionId === revisionId) return known.since;
    const since = this.clock();
    this.buildingSince.set(key, { revisionId, since });
    return since;
  }

  /** The revision the poller (or a reconcile) last read for `key`, when it is `revisionId` (RolloutView). */
  reading(key: string, revisionId: string): RevisionReading | undefined {
    const health = this.rows.get(key)?.health;
    if (health?.revisionId !== revisionId || health.revisionStatus === undefined) return undefined;
    return {
      id: revisionId,
      status: health.revisionStatus,
      createdAt: health.revisionCreatedAt,
      updatedAt: health.revisionUpdatedAt,
    };
  }

  /** Whether the row's health is about `revisionId` already (a job started it, or it was read): the poller follows it. */
  knows(key: string, revisionId: string): boolean {
    return this.rows.get(key)?.health.revisionId === revisionId;
  }

  /** The tracker's clock (RolloutView). */
  now(): number {
    return this.clock();
  }

  /**
   * Folds a reconcile's decisions into the rows. A full reconcile rebuilds every row (a resource no longer planned is
   * dropped); a targeted one (src/daemon/cycle/targeted.ts) folds the resources it decided and leaves every other row as
   * it is, which is what folding the last decision of theirs again would give (a row that moved since is in its scope).
   */
  update(outcome: ReconcileOutcome): void {
    const scope = outcome.targeted?.keys;
    if (scope && [...scope].every((key) => this.rows.has(key))) return this.updateSome(outcome, scope);
    const sources = rowSources(outcome);
    const rows = new Map<string, ResourceState>();
    const orphans: string[] = [];
    for (const change of outcome.plan.changes) {
      const decided = outcome.outcomes.get(resourceKey(change.kind, change.name));
      if (!decided) continue;
      if (change.action === 'orphan') orphans.push(decided.key);
      else rows.set(decided.key, this.decide(change, decided, outcome, sources));
    }
    const gone = [...this.rows.keys()].filter((key) => !rows.has(key));
    this.rows = rows;
    for (const key of gone) this.unwritten.delete(key);
    if (gone.length > 0) for (const sink of this.sinks) sink.removed(gone);
    this.orphanKeys = orphans;
    for (const key of [...this.buildingSince.keys()]) if (!rows.has(key)) this.buildingSince.delete(key);
    this.foldEarly(new Set([...rows.values()].flatMap((row) => (row.job ? [row.job.id] : []))));
  }

  /** Folds the decisions of the resources in `scope` (each has a row already), in place: the rest stay as they are. */
  private updateSome(outcome: ReconcileOutcome, scope: ReadonlySet<string>): void {
    const names = new Set([...scope].map(resourceName));
    const sources = rowSources({ ...outcome, live: outcome.live.filter((d) => names.has(d.name)) });
    const jobs = new Set<string>();
    for (const change of outcome.plan.changes) {
      // A name outside the scope is passed by without making its key (the plan holds every resource, the scope a few).
      if (!names.has(change.name)) continue;
      const key = resourceKey(change.kind, change.name);
      const decided = scope.has(key) ? outcome.outcomes.get(key) : undefined;
      if (!decided || change.action === 'orphan') continue;
      const row = this.decide(change, decided, outcome, sources);
      this.rows.set(decided.key, row);
      if (row.job) jobs.add(row.job.id);
    }
    this.foldEarly(jobs);
  }

  /** Folds one reconcile's decision of a planned resource into its row (and reports the change to the sinks). */
  private decide(
    change: PlanChange,
    decided: Outcome,
    outcome: ReconcileOutcome,
    sources: ReturnType<typeof rowSources>,
  ): ResourceState {
    const key = decided.key;
    const previous = this.rows.get(key);
    const events: ResourceEvent[] = decisionEvents(change, decided, outcome, sources);
    let row = foldResource(previous, events[0] as Extract<ResourceEvent, { type: 'decided' }>);
    for (const event of events.slice(1)) row = foldResource(row, event);
    // A reconcile that read the holds before an operator released one (it ended after the release) does not bring it back.
    if (row.hold && row.hold.revisionId !== undefined && row.releasedRevision === row.hold.revisionId) {
      const release: ResourceEvent = { type: 'hold', hold: undefined };
      row = foldResource(row, release);
      events.push(release);
    }
    // The state it had (a resync that decided the same again): the row keeps its object, and no sink hears of it; the
    // event log records nothing of such a fold (src/core/resource-record.ts), except a conflict's, which is passed on.
    const lost = this.unwritten.delete(key);
    if (previous && !lost && !events.some((event) => event.type === 'conflict') && isDeepStrictEqual(previous, row))
      return previous;
    this.changed({ key, events, before: previous, after: row, manifests: outcome.version });
    return row;
  }

  /** Folds the job results that arrived before the reconcile that enqueued them ended, for the jobs now shown. */
  private foldEarly(jobsShown: ReadonlySet<string>): void {
    for (const [jobId, early] of [...this.early]) {
      if (jobsShown.has(jobId)) {
        this.early.delete(jobId);
        if (early.ok) this.completed(jobId, early.result, early.at, early.desired, early.version);
        else this.failed(jobId, early.reason, early.at);
      }
    }
    if (this.early.size > 1000) this.early.clear();
  }

  /**
   * A job finished (from any replica's worker). Returns the resource key when a row changed. `version`: the manifests the
   * job's desired state came from; a job that wrote (created, updated, adopted) shows them as the row's appliedFrom at
   * once, as its write recorded them, rather than at the next reconcile.
   */
  completed(
    jobId: string,
    value: unknown,
    at = new Date().toISOString(),
    desired?: string,
    version?: ManifestVersion,
  ): string | undefined {
    const key = this.keyOfJob(jobId);
    const row = key === undefined ? undefined : this.rows.get(key);
    if (key === undefined || !row || row.job?.state !== 'queued') {
      // A result before the reconcile that enqueued the job ended (folded when it ends); a job of nothing shown is dropped with the next clear.
      if (key === undefined)
        this.early.set(jobId, {
          ok: true,
          result: value,
          at,
          ...(desired === undefined ? {} : { desired }),
          ...(version ? { version } : {}),
        });
      return undefined;
    }
    const parsed = ReconcileJobResult.safeParse(value);
    const result = parsed.success ? parsed.data : undefined;
    this.fold(key, row, { type: 'job-completed', jobId, at, result, version, desired }, version);
    if (result?.new_revision && !result.notRun)
      this.buildingSince.set(key, { revisionId: result.latestRevisionId ?? null, since: this.clock() });
    return key;
  }

  /** Folds `event` into the state of `key` (src/core/resource-state.ts) and keeps the result. */
  private fold(key: string, state: ResourceState, event: ResourceEvent, manifests?: ManifestVersion): ResourceState {
    const next = foldResource(state, event);
    this.rows.set(key, next);
    this.changed({ key, events: [event], before: state, after: next, manifests });
    return next;
  }

  /** The deployments whose rollout is followed: progressing (or past the deadline), id known, no job of theirs queued. */
  toFollow(limit: number): RolloutToFollow[] {
    const out: RolloutToFollow[] = [];
    for (const row of this.rows.values()) {
      if (out.length >= limit) break;
      if (!row.deploymentId || (row.job && row.job.state === 'queued')) continue;
      const h = row.health;
      if (h.status === 'progressing' || (h.status === 'degraded' && h.reason === 'ProgressDeadlineExceeded')) {
        out.push({
          key: row.key,
          kind: row.kind,
          deploymentId: row.deploymentId,
          revisionId: h.revisionId,
          hold: row.hold,
        });
      }
    }
    return out;
  }

  /** Since when `key` is known to build `revisionId` (a revision's created_at from the service is better when read). */
  rolloutSince(key: string, revisionId: string | null): number {
    return this.sinceFor(key, revisionId);
  }

  /** The progress deadline in ms. */
  get deadlineMs(): number {
    return this.progressDeadlineMs;
  }

  /** Sets a row's health (the poller's reading); true when the fold changed it (its before and after differ). */
  setHealth(key: string, health: HealthCondition): boolean {
    const row = this.rows.get(key);
    return row !== undefined && healthChanged(row.health, this.fold(key, row, { type: 'revision', health }).health);
  }

  /**
   * The desired state (fingerprint) the revision `revisionId` of `key` was built from: the one the job that started it
   * carried; else, when the plan found nothing to change (live is the manifest), the current one; else unknown.
   */
  desiredOfRevision(key: string, revisionId: string): string | undefined {
    const row = this.rows.get(key);
    if (row?.revisionDesired?.revisionId === revisionId) return row.revisionDesired.desired;
    return row?.action === 'noop' ? row.desired : undefined;
  }

  /** Sets (or clears) a row's hold. */
  setHold(key: string, hold: ResourceHold | undefined): void {
    const row = this.rows.get(key);
    if (row) this.fold(key, row, { type: 'hold', hold });
  }

  /**
   * An operator released the hold of `key` (`storedRevisionId`: the revision of the hold Redis kept, when the row shows
   * none): the row drops it, and that failed revision is never held again (its failure is known and the retry asked
   * for). A later revision that fails is held as any other. `request`: the operator's command, named in the history.
   */
  releaseHold(key: string, storedRevisionId?: string, request?: string): void {
    const row = this.rows.get(key);
    if (row)
      this.fold(key, row, {
        type: 'hold',
        hold: undefined,
        released: row.hold?.revisionId ?? storedRevisionId,
        request,
      });
  }

  /** Whether a failed `revisionId` of `key` may be held: not when an operator released its hold (kept in its state). */
  mayHold(key: string, revisionId: string): boolean {
    return this.rows.get(key)?.releasedRevision !== revisionId;
  }

  /** Resources with a hold (their keys). */
  heldKeys(): string[] {
    return [...this.rows.values()].filter((r) => r.hold).map((r) => r.key);
  }

  /** A job failed for good (no attempt left, or a failure that retrying cannot fix). */
  failed(jobId: string, reason: string, at = new Date().toISOString()): string | undefined {
    const key = this.keyOfJob(jobId);
    const row = key === undefined ? undefined : this.rows.get(key);
    if (key === undefined || !row || row.job?.state !== 'queued') {
      if (key === undefined) this.early.set(jobId, { ok: false, reason, at });
      return undefined;
    }
    this.fold(key, row, { type: 'job-failed', jobId, at, message: reason });
    return key;
  }

  /** The /status rows: each resource's state with the contract's legacy fields. */
  resources(): ResourceStatus[] {
    return [...this.rows.values()].map(statusRow);
  }

  /** Each resource's state as this replica folded it, in the plan's order. */
  states(): ResourceState[] {
    return [...this.rows.values()];
  }

  orphans(): string[] {
    return [...this.orphanKeys];
  }

  /** Resources held as SecretsUnknown (their keys). */
  secretsUnknown(): string[] {
    return [...this.rows.values()].filter((r) => r.sync.reason === 'SecretsUnknown').map((r) => r.key);
  }

  /** Keys of the resources whose delete waits (prune_grace, or a person under prune_mode confirm). */
  pendingDeletes(): string[] {
    return [...this.rows.values()].filter((r) => r.sync.reason === 'DeletePending').map((r) => r.key);
  }

  /** An operator released the resource's Conflict: the row no longer shows it (the next reconcile says what holds). */
  clearConflict(key: string, request?: string): void {
    const row = this.rows.get(key);
    if (row) this.fold(key, row, { type: 'conflict-released', request });
  }

  /** Resources under a Conflict (their keys). */
  conflicts(): string[] {
    return [...this.rows.values()].filter((r) => r.sync.reason === 'Conflict').map((r) => r.key);
  }
}
