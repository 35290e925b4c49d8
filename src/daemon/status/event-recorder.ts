// The leader's side of the fold in Redis: each change the tracker folds (a decision, a hold, a release, a revision reading) is folded again over the state in Redis (src/store/resource-folds.ts), fenced by this replica's token, and the tracker's rows take what Redis holds.
import type { Logger } from 'pino';
import type { ResourceEvent, ResourceState } from '../../core/resource-state-model.js';
import type { EventLogStore, StoredBuildLog } from '../../store/event-log.js';
import type { FoldRequest, ResourceFolds, VersionedState } from '../../store/resource-folds.js';
import type { FailedBuilds } from './failed-builds.js';
import type { ResourceTracker } from './resource-tracker.js';
import type { ChangeSink, TrackedChange } from './tracked-change.js';

/** What the leader asks of the prefix's resource states. */
export type FoldStore = Pick<ResourceFolds, 'fold' | 'read' | 'readAll' | 'states' | 'stateVersion'>;

/** What the daemon reads of the event log besides the states: the failed builds' log lines. */
export type RecordStore = Pick<EventLogStore, 'buildLogs' | 'setBuildLog'>;

/** Events the worker that ran a job folds where it ran (src/jobs/runner/processor.ts): never folded again here. */
const FOLDED_BY_WORKER: ReadonlySet<ResourceEvent['type']> = new Set(['job-completed', 'job-failed']);

/**
 * Events folded unfenced: a job an interrupt left (a fact of the job). Every other is fenced by the term that noted
 * it, the poller's revision readings included: a reading of a former term (held on a paused Redis connection) would
 * fold an old revision over the newer state another leader wrote; the leader of now reads the service itself.
 */
const FACTS: ReadonlySet<ResourceEvent['type']> = new Set(['interrupted']);

/**
 * Folds the tracker's changes into Redis while this replica leads. The tracker's rows are a cache: after each fold
 * they take the state Redis answered (the worker's folds of job results included), and before a reconcile decides,
 * `refresh` reads the versions of the rows and takes every state that moved. A fold that fails is logged and counted,
 * and the next reconcile decides again (level-triggered): nothing is kept to be written later.
 */
export class StateFolds implements ChangeSink {
  /** Changes noted and not yet folded, each with the fencing token of the term that made it (undefined: no lease). */
  private queued: Array<
    { key: string; fence: number | undefined } & (
      { events: ResourceEvent[]; manifests: TrackedChange['manifests'] } | { remove: true }
    )
  > = [];
  private writing: Promise<void> | undefined;
  private failing = false;
  private fencedSaid = false;
  /** Folds that could not be written (Redis down): said in the log, counted here. */
  dropped = 0;

  constructor(
    private readonly store: FoldStore,
    /** `fence`: this replica's token while it leads (absent: the daemon runs without a lease, nothing is fenced). */
    private readonly options: {
      by: string;
      log: Logger;
      leading: () => boolean;
      fence?: (() => number | undefined) | undefined;
      /** The failed builds' log lines kept in Redis (src/store/event-log.ts), taken up with the states. */
      buildLogs: () => Promise<Map<string, StoredBuildLog>>;
      now?: () => string;
    },
    private readonly tracker: ResourceTracker,
  ) {
    tracker.record(this);
  }

  /**
   * Takes up every resource's state in Redis (a restart, a failover): the rows the last leader and the workers folded,
   * and the failed builds' log lines.
   */
  async restore(failedBuilds: FailedBuilds): Promise<number> {
    failedBuilds.restore(await this.options.buildLogs());
    const restored = this.tracker.restore(present(await this.store.readAll()));
    if (restored > 0) this.options.log.info({ resources: restored }, 'resource states taken up from Redis');
    return restored;
  }

  /** Redis lost its records: every row stays shown, to be written by the next decision (`reconcile` asks for it now). */
  lost(reconcile: () => unknown): void {
    this.tracker.restore(new Map());
    reconcile();
  }

  /**
   * Before a reconcile's decisions fold: reads the versions of `keys` and takes each state that moved (a worker folded
   * a job's result); a row Redis has no state of is rebuilt by the decision.
   */
  async refresh(keys: readonly string[]): Promise<void> {
    try {
      this.tracker.adopt(await this.store.read(keys));
    } catch (error) {
      this.options.log.warn(
        { error: (error as Error).message.split('\n')[0] },
        'could not read the resource states from Redis; the rows stay as this replica knew them',
      );
    }
  }

  changed(change: TrackedChange): void {
    if (!this.options.leading()) return;
    const events = change.events.filter((event) => !FOLDED_BY_WORKER.has(event.type));
    this.queued.push({ key: change.key, fence: this.options.fence?.(), events, manifests: change.manifests });
    this.schedule();
  }

  removed(keys: readonly string[]): void {
    if (!this.options.leading()) return;
    const fence = this.options.fence?.();
    for (const key of keys) this.queued.push({ key, fence, remove: true });
    this.schedule();
  }

  /** Resolves when every change noted so far is folded (or its fold failed). */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private schedule(): void {
    this.writing ??= Promise.resolve()
      .then(() => this.drain())
      .finally(() => {
        this.writing = undefined;
      });
  }

  private async drain(): Promise<void> {
    while (this.queued.length > 0) {
      const batch = this.queued;
      this.queued = [];
      const at = this.options.now?.() ?? new Date().toISOString();
      const fenced = new Map<number | undefined, Batch>();
      const facts = new Batch();
      for (const item of batch) {
        const meta = { at, by: this.options.by, manifests: 'manifests' in item ? item.manifests : undefined };
        const request: FoldRequest =
          'remove' in item
            ? { key: item.key, events: [], meta, remove: true }
            : { key: item.key, events: item.events, meta };
        if (!('remove' in item) && item.events.every((e) => FACTS.has(e.type))) facts.add(request);
        else {
          const list = fenced.get(item.fence) ?? new Batch();
          list.add(request);
          fenced.set(item.fence, list);
        }
      }
      for (const [fence, requests] of fenced) await this.write(requests.requests, fence);
      await this.write(facts.requests, undefined);
    }
  }

  private async write(requests: FoldRequest[], fence: number | undefined): Promise<void> {
    if (requests.length === 0) return;
    try {
      const outcomes = await this.store.fold(requests, { fence });
      if (this.failing) this.options.log.info({}, 'resource states folded in Redis again');
      this.failing = false;
      const states = new Map<string, VersionedState>();
      for (const outcome of outcomes) {
        if (outcome.status === 'fenced') this.sayFenced(outcome.key);
        else states.set(outcome.key, { state: outcome.state, version: outcome.version });
      }
      this.tracker.adopt(states);
    } catch (error) {
      this.dropped += requests.length;
      const line = (error as Error).message.split('\n')[0];
      if (!this.failing)
        this.options.log.warn(
          { error: line, folds: requests.length },
          'could not fold resource states in Redis; the next reconcile decides them again',
        );
      this.failing = true;
    }
  }

  private sayFenced(key: string): void {
    if (this.fencedSaid) return;
    this.fencedSaid = true;
    this.options.log.warn(
      { key },
      "a decision was not written: this replica no longer holds the leader lease (its fencing token is not the lease's)",
    );
  }
}

/**
 * The fold requests of one batch, one per resource: the requests of one batch read their states at once, so a second
 * request of the same resource would fold over the state before the first (a failed revision's hold after the decision
 * that made the state); its events join the first's instead. A removal stays a request of its own. Found by key, so a
 * reconcile's 10,000 decisions are batched in one pass.
 */
class Batch {
  readonly requests: FoldRequest[] = [];
  private readonly byKey = new Map<string, FoldRequest>();

  add(request: FoldRequest): void {
    const same = request.remove ? undefined : this.byKey.get(request.key);
    if (same) same.events = [...same.events, ...request.events];
    else this.requests.push(request);
    if (!request.remove && !same) this.byKey.set(request.key, request);
  }
}

/** The states of a read that exist. */
function present(states: ReadonlyMap<string, VersionedState>): Map<string, ResourceState> {
  const out = new Map<string, ResourceState>();
  for (const [key, { state }] of states) if (state) out.set(key, state);
  return out;
}
