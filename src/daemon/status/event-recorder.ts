// The daemon's side of the event log: each change of the rows becomes history entries (src/core/resource-record.ts) and the resource's projected state, written to Redis in order, one write at a time, while this replica leads.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { jobEventOf, recordsOf, type JobResultEvent, type RecordedEvent } from '../../core/resource-record.js';
import type { ResourceState } from '../../core/resource-state.js';
import type { EventLogStore } from '../../store/event-log.js';
import type { FailedBuilds } from './failed-builds.js';
import type { ChangeSink, ResourceTracker, TrackedChange } from './resource-tracker.js';

/** What the daemon reads and writes of the event log. */
export type RecordStore = Pick<EventLogStore, 'write' | 'states' | 'stateVersion' | 'buildLogs' | 'setBuildLog' | 'history'>;

/** Entries of a resource's history read for the result of its queued job when the projection is taken up. */
const RESULT_LOOKBACK = 20;

/** Entries kept waiting while Redis does not answer; older ones are dropped (the projection is rewritten whole anyway). */
const MAX_PENDING_EVENTS = 10_000;

/**
 * Writes the tracker's changes to the prefix's event log. Only the leader writes (a standby's rows are its last term's);
 * a failed write is warned about once per outage and tried again with the next change, its states kept.
 */
export class EventRecorder implements ChangeSink {
  private events: RecordedEvent[] = [];
  private states = new Map<string, ResourceState>();
  private gone = new Set<string>();
  private writing: Promise<void> | undefined;
  private failing = false;
  /** History entries dropped in this outage (the oldest first): counted and said, never in silence. */
  private dropped = 0;

  constructor(
    private readonly store: RecordStore,
    /** `overflow`: counts history entries dropped past MAX_PENDING_EVENTS (converge_record_overflow_total). */
    private readonly options: {
      by: string;
      log: Logger;
      leading: () => boolean;
      now?: () => string;
      overflow?: (dropped: number) => void;
    },
    private readonly tracker: ResourceTracker,
  ) {
    tracker.record(this);
  }

  /**
   * Takes up what the last leader recorded (a restart, a failover): every row's state and the failed builds' log
   * lines, as it knew them, until this replica's first reconcile folds its decisions over them. A row whose job was
   * queued when the projection was written, and whose worker recorded the result since (between the last leader's
   * release and this start), is folded with that result. Returns the rows taken.
   */
  async restore(failedBuilds: FailedBuilds): Promise<number> {
    const [states, tails] = await Promise.all([this.store.states(), this.store.buildLogs()]);
    failedBuilds.restore(tails);
    const restored = this.tracker.restore(states);
    const results = await this.resultsSince(states);
    for (const event of results) {
      if (event.type === 'job-failed') this.tracker.failed(event.jobId, event.message, event.at);
      else this.tracker.completed(event.jobId, event.result, event.at, undefined, event.version);
    }
    if (restored > 0) this.options.log.info({ resources: restored, buildLogs: tails.size, jobResults: results.length }, 'resource states taken up from the event log');
    return restored;
  }

  /** The results the workers recorded for the jobs the projection still shows queued (the newest entry of each). */
  private async resultsSince(states: ReadonlyMap<string, ResourceState>): Promise<JobResultEvent[]> {
    const queued = [...states.values()].filter((state) => state.job?.state === 'queued');
    const found = await Promise.all(
      queued.map(async (state) => {
        const entries = await this.store.history(state.key, { limit: RESULT_LOOKBACK });
        return entries.filter((entry) => entry.job?.id === state.job?.id).map(jobEventOf).find((event) => event !== undefined);
      }),
    );
    return found.filter((event): event is JobResultEvent => event !== undefined);
  }

  changed(change: TrackedChange): void {
    if (!this.options.leading()) return;
    const meta = { at: this.options.now?.() ?? new Date().toISOString(), by: this.options.by, manifests: change.manifests };
    const seen = new Set<string>();
    const entriesBefore = this.events.length;
    for (const event of change.events) {
      for (const record of recordsOf(event, change.before, change.after, meta)) {
        // One reconcile folds its decision and a release of the same hold: one entry each.
        const id = `${record.type}|${record.reason}`;
        if (seen.has(id)) continue;
        seen.add(id);
        this.events.push(record);
      }
    }
    // A resync that folds a row into the state it had records nothing: no entry, and the projection holds that state already
    // (a lost Redis is rewritten whole: rewriteAll). Writing every row at every resync cost 10,000 states a resync at 10,000.
    if (this.events.length === entriesBefore && change.before !== undefined && isDeepStrictEqual(change.before, change.after)) return;
    const past = this.events.length - MAX_PENDING_EVENTS;
    if (past > 0) this.drop(this.events.splice(0, past).length);
    this.states.set(change.key, change.after);
    this.gone.delete(change.key);
    this.schedule();
  }

  removed(keys: readonly string[]): void {
    if (!this.options.leading()) return;
    for (const key of keys) {
      this.gone.add(key);
      this.states.delete(key);
    }
    this.schedule();
  }

  /** Writes every row's state again (Redis lost the projection: the applied-state watch saw its epoch change). */
  rewriteAll(): void {
    if (!this.options.leading()) return;
    for (const state of this.tracker.states()) this.states.set(state.key, state);
    this.schedule();
  }

  /** Resolves when everything noted so far is written (or its write failed). */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** The oldest `n` entries waiting were dropped (Redis did not answer for MAX_PENDING_EVENTS of them): counted, said. */
  private drop(n: number): void {
    const said = 'event log: entries wait past the buffer while Redis does not answer; the oldest are dropped'
      + ' (counted in converge_record_overflow_total)';
    if (this.dropped === 0) this.options.log.warn({ max: MAX_PENDING_EVENTS }, said);
    this.dropped += n;
    this.options.overflow?.(n);
  }

  private schedule(): void {
    this.writing ??= this.drain().finally(() => {
      this.writing = undefined;
    });
  }

  private async drain(): Promise<void> {
    while (this.events.length > 0 || this.states.size > 0 || this.gone.size > 0) {
      const events = this.events;
      const states = this.states;
      const removed = [...this.gone];
      this.events = [];
      this.states = new Map();
      this.gone = new Set();
      try {
        await this.store.write({ events, states: [...states.values()], removed });
        if (this.failing) this.options.log.info({ dropped: this.dropped }, 'event log written again');
        this.failing = false;
        this.dropped = 0;
      } catch (error) {
        if (!this.failing) this.options.log.warn({ error: (error as Error).message.split('\n')[0] }, 'could not write the event log; kept and tried again with the next change');
        this.failing = true;
        // Put back what was not written, behind nothing newer (newer states win).
        const kept = [...events, ...this.events];
        if (kept.length > MAX_PENDING_EVENTS) this.drop(kept.length - MAX_PENDING_EVENTS);
        this.events = kept.slice(-MAX_PENDING_EVENTS);
        for (const [key, state] of states) if (!this.states.has(key) && !this.gone.has(key)) this.states.set(key, state);
        for (const key of removed) if (!this.states.has(key)) this.gone.add(key);
        return;
      }
    }
  }
}
