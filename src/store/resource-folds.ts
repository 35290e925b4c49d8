// The one fold of a resource's state in Redis: read its state and version, fold the events (foldResource), write the new state with the fold's history entries in one compare-and-set script.
import { isDeepStrictEqual } from 'node:util';
import type { Redis } from 'ioredis';
import { lastJobOfRecord, recordsOf, type RecordedEvent, type RecordMeta } from '../core/resource-record.js';
import { foldResource } from '../core/resource-state.js';
import type { JobView, ResourceEvent, ResourceState } from '../core/resource-state-model.js';
import { redisNow } from './clock.js';
import { LOG_MAX_AGE_MS, parseHistoryEntry, recordKeys, StoredState } from './event-log.js';
import { defineFoldScripts, foldInRedis, type FoldWrite, newestEntries, stateVersionsKey } from './fold-script.js';
import { parseStored } from './schema.js';

export { stateVersionsKey };

/** What one source hands the fold of one resource: the events that just happened, and who and when. */
export interface FoldRequest {
  key: string;
  events: readonly ResourceEvent[];
  meta: RecordMeta;
  /** Entries the source writes with the fold besides the fold's own (a worker's write_done for the job it ran). */
  entries?: readonly RecordedEvent[];
  /** The resource is no longer declared: its state goes (its history stays). */
  remove?: true;
  /** The state to fold onto when the resource has none (a leader's job whose decision is not written yet). */
  seed?: ResourceState;
  /**
   * Nothing is folded, nor written, when this says so of the state as read (asked again at each read after a lost
   * race, so two folders of one fact write it once: src/jobs/runner/unfolded-write.ts).
   */
  unless?: (state: ResourceState | undefined) => boolean;
}

/** A state as read, with the version that a write compares against (0: no state). */
export interface VersionedState {
  state: ResourceState | undefined;
  version: number;
}

/**
 * The result of one fold, a value: `written` (state and entries in Redis), `unchanged` (the events changed nothing and
 * recorded nothing: nothing written), `fenced` (the fence is no longer the lease's token: nothing written),
 * `no-state` (events that change a state, on a resource with none: only the source's entries written).
 */
export type FoldOutcome =
  | { key: string; status: 'written' | 'unchanged' | 'no-state'; state: ResourceState | undefined; version: number }
  | { key: string; status: 'fenced' };

/** Who folds: `fence` is the leader's token for decisions, holds and releases; a job's result is folded unfenced. */
export interface FoldOptions {
  fence?: number | undefined;
}

/** How many of a resource's newest history entries are read for its last job (a state made where there was none). */
const LAST_JOB_READ = 20;

/** A fold that lost the race this many times in a row gives up (another writer moves the resource without pause). */
const MAX_ATTEMPTS = 20;
/**
 * The requests one pipeline folds (FOLD_BATCH a script call): a reconcile's 10,000 first decisions in ten pipelines,
 * not one, so their texts and the pipeline's encoding of them are not all in memory at once (docs/performance.md).
 */
export const FOLD_PIPELINE = 1_000;

/**
 * The state after `events` folded over `state` in turn (foldResource; undefined when they need a state and there is
 * none), and the history entries of those folds (src/core/resource-record.ts), one of each type and reason.
 */
function foldAll(
  state: ResourceState | undefined,
  events: readonly ResourceEvent[],
  meta: RecordMeta,
): { state: ResourceState | undefined; entries: RecordedEvent[] } {
  const entries: RecordedEvent[] = [];
  const seen = new Set<string>();
  let current = state;
  for (const event of events) {
    if (event.type !== 'decided' && current === undefined) continue;
    const next = event.type === 'decided' ? foldResource(current, event) : foldResource(current!, event);
    for (const entry of recordsOf(event, current, next, meta)) {
      const id = `${entry.type}|${entry.reason}`;
      if (!seen.has(id)) entries.push(entry);
      seen.add(id);
    }
    current = next;
  }
  return { state: current, entries };
}

/** What one request asks of Redis once folded: nothing (its outcome is known), or a write. */
type Prepared =
  { outcome: FoldOutcome } | { before: VersionedState; after: ResourceState | undefined; write: FoldWrite };

/** Folds one request over its state as read (pure): the outcome when nothing is to be written, else the write. */
function prepare(request: FoldRequest, before: VersionedState, lastJob: JobView | undefined): Prepared {
  if (request.unless?.(before.state))
    return { outcome: { key: request.key, status: before.state ? 'unchanged' : 'no-state', ...before } };
  const from = before.state ?? request.seed;
  const folded = foldAll(from, request.events, request.meta);
  const state = request.remove ? undefined : folded.state;
  // A state made where there was none shows the last job its record lists (one `converge apply` ran before).
  const after = state?.job === null && lastJob ? { ...state, job: lastJob } : state;
  const entries = [...(request.entries ?? []), ...folded.entries];
  const same = !request.remove && (after === undefined || isDeepStrictEqual(before.state, after));
  if (same && entries.length === 0)
    return { outcome: { key: request.key, status: after ? 'unchanged' : 'no-state', ...before } };
  const text = request.remove ? (before.state === undefined ? '' : '-') : same ? '' : JSON.stringify(after);
  const hold = request.remove ? '' : holdChange(before.state, after);
  const texts = entries.map((e) => JSON.stringify(e));
  return { before, after, write: { key: request.key, version: before.version, state: text, hold, entries: texts } };
}

/**
 * The resource states of a prefix in Redis (`{prefix}:record:state`, a version per resource in
 * `{prefix}:record:state-versions`), folded where each event happens by whoever it happens to. Concurrency is
 * optimistic per resource: a fold reads the state and its version, folds, and writes only if the version is still the
 * one it read; otherwise that resource alone is read again and folded again. The writes of a batch are script calls of
 * up to FOLD_BATCH resources each (src/store/fold-script.ts), sent in one pipeline per FOLD_PIPELINE resources. What
 * this process read or wrote stays in memory as a cache that the version invalidates: the one copy of each state that
 * the leader's rows and the projection's readers (src/daemon/status/projection.ts) share.
 */
export class ResourceFolds {
  private readonly keys: ReturnType<typeof recordKeys>;
  private readonly versionsKey: string;
  private readonly cache = new Map<string, { version: number; state: ResourceState }>();
  /** States this process parsed from Redis (each a read the cache could not answer): counted for tests and figures. */
  parsed = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    /** The leader lease's key (src/leader/lease.ts leaseKey), whose token fences a fold. */
    private readonly lease: string,
    private readonly clock: () => Promise<number> = () => redisNow(redis),
  ) {
    this.keys = recordKeys(prefix);
    this.versionsKey = stateVersionsKey(prefix);
    defineFoldScripts(redis);
  }

  /** The states of `keys` with their versions: the cache where the version has not moved, else read. */
  async read(keys: readonly string[]): Promise<Map<string, VersionedState>> {
    if (keys.length === 0) return new Map();
    const versions = await this.redis.hmget(this.versionsKey, ...keys);
    return this.take(keys.map((key, i) => [key, Number(versions[i] ?? 0)]));
  }

  /** Every resource's state (a new leader's start). */
  async readAll(): Promise<Map<string, VersionedState>> {
    return this.read(await this.redis.hkeys(this.keys.state));
  }

  /** The projection's version: a number each write of states moves on, or null when there is none (never written, or lost). */
  async stateVersion(): Promise<string | null> {
    return this.redis.get(this.keys.stateVersion);
  }

  /**
   * Every resource's state that a fold wrote, by the versions hash (one HGETALL): each taken from the cache where its
   * version matches, only the states that moved read (HMGET) and parsed. Forgets what it held of a resource that is
   * gone. /status and the gauges read the projection through this (src/daemon/status/projection.ts).
   */
  async states(): Promise<Map<string, ResourceState>> {
    const versions = Object.entries(await this.redis.hgetall(this.versionsKey));
    const read = await this.take(versions.map(([key, version]) => [key, Number(version)]));
    const out = new Map<string, ResourceState>();
    for (const [key, { state }] of read) if (state) out.set(key, state);
    for (const key of this.cache.keys()) if (!read.has(key)) this.cache.delete(key);
    return out;
  }

  /** The states of `versions`' keys: the cache's where the version is the one given, else read and parsed. */
  private async take(versions: ReadonlyArray<[string, number]>): Promise<Map<string, VersionedState>> {
    const out = new Map<string, VersionedState>();
    const missing: string[] = [];
    for (const [key, version] of versions) {
      const cached = this.cache.get(key);
      if (cached !== undefined && cached.version === version) out.set(key, cached);
      else missing.push(key);
    }
    if (missing.length === 0) return out;
    const pipeline = this.redis.pipeline();
    pipeline.hmget(this.keys.state, ...missing);
    pipeline.hmget(this.versionsKey, ...missing);
    const [[, texts], [, again]] = (await pipeline.exec()) as [
      [null, Array<string | null>],
      [null, Array<string | null>],
    ];
    missing.forEach((key, i) => {
      if (texts[i]) this.parsed += 1;
      const state = texts[i] ? (parseStored(StoredState, texts[i]) as ResourceState | undefined) : undefined;
      const version = state ? Number(again[i] ?? 0) : 0;
      // Version 0 with a state: one no fold wrote (the event log's own write); read again each time, never cached.
      if (state && version > 0) this.cache.set(key, { version, state });
      else this.cache.delete(key);
      out.set(key, { state, version });
    });
    return out;
  }

  /**
   * Folds each request's events into its resource's state and writes the new state with the fold's entries (and the
   * source's), up to FOLD_BATCH resources a script call; a resource whose fold lost the race is read again and folded
   * again, alone. Fenced folds are written only while `options.fence` is the lease's token. Outcomes are in the order
   * of `requests`.
   */
  async fold(requests: readonly FoldRequest[], options: FoldOptions = {}): Promise<FoldOutcome[]> {
    const outcomes: FoldOutcome[] = [];
    // FOLD_PIPELINE at a time: the states' and entries' texts of one pipeline are all in memory at once.
    for (let at = 0; at < requests.length; at += FOLD_PIPELINE)
      for (const outcome of await this.foldSome(requests.slice(at, at + FOLD_PIPELINE), options))
        outcomes.push(outcome);
    return outcomes;
  }

  /** `fold` of up to FOLD_PIPELINE requests: one read, one pipeline of script calls per attempt. */
  private async foldSome(requests: readonly FoldRequest[], options: FoldOptions): Promise<FoldOutcome[]> {
    const outcomes = new Map<number, FoldOutcome>();
    let pending = requests.map((request, index) => ({ request, index }));
    for (let attempt = 0; pending.length > 0 && attempt < MAX_ATTEMPTS; attempt++) {
      const read = await this.read([...new Set(pending.map((p) => p.request.key))]);
      const recorded = await this.lastJobs(
        pending
          .map((p) => p.request)
          .filter((r) => read.get(r.key)?.state === undefined && r.events.some((e) => e.type === 'decided')),
      );
      const now = await this.clock();
      const sent: Array<{ index: number; request: FoldRequest } & Exclude<Prepared, { outcome: FoldOutcome }>> = [];
      for (const { request, index } of pending) {
        const prepared = prepare(request, read.get(request.key)!, recorded.get(request.key));
        if ('outcome' in prepared) outcomes.set(index, prepared.outcome);
        else sent.push({ index, request, ...prepared });
      }
      pending = [];
      if (sent.length === 0) break;
      const fence = options.fence === undefined ? '' : String(options.fence);
      const minId = `${Math.max(0, now - LOG_MAX_AGE_MS)}-0`;
      const writes = sent.map((s) => s.write);
      const replies = await foldInRedis(this.redis, { prefix: this.prefix, lease: this.lease }, writes, {
        fence,
        minId,
      });
      sent.forEach(({ index, request, before, after }, i) => {
        const reply = replies[i]!;
        if (reply === 'fenced') outcomes.set(index, { key: request.key, status: 'fenced' });
        else if (!reply.written) pending.push({ request, index });
        else outcomes.set(index, this.written(request, before, after, reply.version));
      });
    }
    if (pending.length > 0)
      throw new Error(`the state of ${pending[0]!.request.key} kept moving: ${MAX_ATTEMPTS} folds lost the race`);
    return requests.map((_, index) => outcomes.get(index)!);
  }

  /**
   * The last job the record lists for each resource a decision makes a state for (none in Redis): the newest entries
   * of its history, read by one script call per FOLD_BATCH resources. Only a resource new to the prefix's states is
   * read (once, or after a loss).
   */
  private async lastJobs(requests: readonly FoldRequest[]): Promise<Map<string, JobView>> {
    const out = new Map<string, JobView>();
    const histories = requests.map((request) => this.keys.history(request.key));
    const texts = await newestEntries(this.redis, histories, LAST_JOB_READ);
    requests.forEach((request, i) => {
      const job = lastJobOfRecord(texts[i]!.flatMap((text) => parseHistoryEntry(text) ?? []));
      if (job) out.set(request.key, job);
    });
    return out;
  }

  /** The outcome of a written fold, and the cache set to it. */
  private written(
    request: FoldRequest,
    before: VersionedState,
    after: ResourceState | undefined,
    version: number,
  ): FoldOutcome {
    if (request.remove || after === undefined) {
      this.cache.delete(request.key);
      return {
        key: request.key,
        status: after === undefined && !request.remove ? 'no-state' : 'written',
        state: undefined,
        version,
      };
    }
    if (version !== before.version) this.cache.set(request.key, { version, state: after });
    return { key: request.key, status: version === before.version ? 'unchanged' : 'written', state: after, version };
  }
}

/** The hold argument of the script: '' when the fold left the hold as it was, '-' when it went, else the new hold. */
function holdChange(before: ResourceState | undefined, after: ResourceState | undefined): string {
  if (!after || isDeepStrictEqual(before?.hold, after.hold)) return '';
  return after.hold ? JSON.stringify(after.hold) : before?.hold ? '-' : '';
}
