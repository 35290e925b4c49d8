// The one fold of a resource's state in Redis: read its state and version, fold the events (foldResource), write the new state with the fold's history entries in one compare-and-set script.
import { isDeepStrictEqual } from 'node:util';
import type { Redis } from 'ioredis';
import { lastJobOfRecord, recordsOf, type RecordedEvent, type RecordMeta } from '../core/resource-record.js';
import { foldResource } from '../core/resource-state.js';
import type { JobView, ResourceEvent, ResourceState } from '../core/resource-state-model.js';
import { redisNow } from './clock.js';
import {
  HISTORY_MAX_ENTRIES,
  LOG_MAX_AGE_MS,
  LOG_MAX_ENTRIES,
  parseHistoryEntry,
  recordKeys,
  StoredState,
} from './event-log.js';
import { holdsKey } from './holds-store.js';
import { parseStored } from './schema.js';

/**
 * KEYS: 1 states hash, 2 versions hash, 3 the projection's version counter, 4 the leader lease, 5 the log, 6 the
 * resource's history, 7 the holds hash, 8 the failed builds' log lines (gone with a removed resource). ARGV: 1 resource key, 2 the version read (0: none), 3 the fence ('' unfenced),
 * 4 the new state ('' unchanged, '-' removed), 5 the hold ('' unchanged, '-' released, else its JSON), 6 the log's
 * length, 7 the history's length, 8 the oldest id kept, 9... the history entries.
 * Answers {1, version} when written, {0, version} when the version moved since it was read, {-1, 0} when the fence is
 * not the lease's token (a replica that no longer leads). The version is the counter's value at the write: it never
 * repeats under one counter, so a removed and declared-again resource never shows an old version.
 */
const FOLD = `
if ARGV[3] ~= '' then
  local lease = redis.call('GET', KEYS[4])
  local token = lease and string.match(lease, '|(%d+)|[^|]*$')
  if token ~= ARGV[3] then return {-1, 0} end
end
local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if current ~= tonumber(ARGV[2]) then return {0, current} end
local version = current
if ARGV[4] == '-' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[8], ARGV[1])
  redis.call('INCR', KEYS[3])
  version = 0
elseif ARGV[4] ~= '' then
  version = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
  redis.call('HSET', KEYS[2], ARGV[1], version)
end
if ARGV[5] == '-' then redis.call('HDEL', KEYS[7], ARGV[1]) elseif ARGV[5] ~= '' then redis.call('HSET', KEYS[7], ARGV[1], ARGV[5]) end
for i = 9, #ARGV do
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[6], '*', 'e', ARGV[i])
  redis.call('XADD', KEYS[6], 'MAXLEN', ARGV[7], '*', 'e', ARGV[i])
end
if #ARGV >= 9 then
  redis.call('XTRIM', KEYS[5], 'MINID', '~', ARGV[8])
  redis.call('XTRIM', KEYS[6], 'MINID', '~', ARGV[8])
  redis.call('PEXPIRE', KEYS[6], ${LOG_MAX_AGE_MS})
end
return {1, version}
`;

type FoldReply = [number, number];
type FoldingRedis = Redis & { convergeFold(...args: Array<string | number>): Promise<FoldReply> };

/** `{prefix}:record:state-versions`: per resource, the version of its state (the counter's value at its last write). */
export function stateVersionsKey(prefix: string): string {
  return `${prefix}:record:state-versions`;
}

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

/** The state after `events` (pure over foldResource); undefined when they need a state and there is none. */
function foldAll(state: ResourceState | undefined, events: readonly ResourceEvent[]): ResourceState | undefined {
  let current = state;
  for (const event of events) {
    if (event.type !== 'decided' && current === undefined) continue;
    current = event.type === 'decided' ? foldResource(current, event) : foldResource(current!, event);
  }
  return current;
}

/** The history entries of folding `events` over `state` in turn (src/core/resource-record.ts), one of each type and reason. */
function entriesOf(
  state: ResourceState | undefined,
  events: readonly ResourceEvent[],
  meta: RecordMeta,
): RecordedEvent[] {
  const out: RecordedEvent[] = [];
  const seen = new Set<string>();
  let current = state;
  for (const event of events) {
    if (event.type !== 'decided' && current === undefined) continue;
    const next = event.type === 'decided' ? foldResource(current, event) : foldResource(current!, event);
    for (const entry of recordsOf(event, current, next, meta)) {
      const id = `${entry.type}|${entry.reason}`;
      if (!seen.has(id)) out.push(entry);
      seen.add(id);
    }
    current = next;
  }
  return out;
}

/**
 * The resource states of a prefix in Redis (`{prefix}:record:state`, a version per resource in
 * `{prefix}:record:state-versions`), folded where each event happens by whoever it happens to. Concurrency is
 * optimistic per resource: a fold reads the state and its version, folds, and writes only if the version is still the
 * one it read; otherwise it reads again and folds again. A batch of folds is one pipeline per attempt. What this
 * process read stays in memory as a cache that the version invalidates.
 */
export class ResourceFolds {
  private readonly keys: ReturnType<typeof recordKeys>;
  private readonly versionsKey: string;
  private readonly holdsKey: string;
  private readonly leaseKey: string;
  private readonly cache = new Map<string, { version: number; state: ResourceState }>();

  constructor(
    private readonly redis: Redis,
    prefix: string,
    /** The leader lease's key (src/leader/lease.ts leaseKey), whose token fences a fold. */
    lease: string,
    private readonly clock: () => Promise<number> = () => redisNow(redis),
  ) {
    this.keys = recordKeys(prefix);
    this.versionsKey = stateVersionsKey(prefix);
    this.holdsKey = holdsKey(prefix);
    this.leaseKey = lease;
    if (!('convergeFold' in redis)) redis.defineCommand('convergeFold', { numberOfKeys: 8, lua: FOLD });
  }

  /** The states of `keys` with their versions: the cache where the version has not moved, else read. */
  async read(keys: readonly string[]): Promise<Map<string, VersionedState>> {
    const out = new Map<string, VersionedState>();
    if (keys.length === 0) return out;
    const versions = await this.redis.hmget(this.versionsKey, ...keys);
    const missing: string[] = [];
    keys.forEach((key, i) => {
      const cached = this.cache.get(key);
      if (cached !== undefined && cached.version === Number(versions[i] ?? 0)) out.set(key, cached);
      else missing.push(key);
    });
    if (missing.length === 0) return out;
    const pipeline = this.redis.pipeline();
    pipeline.hmget(this.keys.state, ...missing);
    pipeline.hmget(this.versionsKey, ...missing);
    const [[, texts], [, again]] = (await pipeline.exec()) as [
      [null, Array<string | null>],
      [null, Array<string | null>],
    ];
    missing.forEach((key, i) => {
      const state = texts[i] ? (parseStored(StoredState, texts[i]) as ResourceState | undefined) : undefined;
      const version = state ? Number(again[i] ?? 0) : 0;
      // Version 0 with a state: one no fold wrote (the event log's own write); read again each time, never cached.
      if (state && version > 0) this.cache.set(key, { version, state });
      else this.cache.delete(key);
      out.set(key, { state, version });
    });
    return out;
  }

  /** Every resource's state (a new leader's start, /status of a standby). */
  async readAll(): Promise<Map<string, VersionedState>> {
    return this.read(await this.redis.hkeys(this.keys.state));
  }

  /**
   * Folds each request's events into its resource's state and writes the new state with the fold's entries (and the
   * source's) in one script per resource; a fold that lost the race reads again and folds again. Fenced folds are
   * written only while `options.fence` is the lease's token. Outcomes are in the order of `requests`.
   */
  async fold(requests: readonly FoldRequest[], options: FoldOptions = {}): Promise<FoldOutcome[]> {
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
      const pipeline = this.redis.pipeline() as unknown as {
        exec(): Promise<Array<[Error | null, FoldReply]>>;
      } & FoldingRedis;
      const sent: Array<{
        index: number;
        request: FoldRequest;
        before: VersionedState;
        after: ResourceState | undefined;
      }> = [];
      for (const { request, index } of pending) {
        const before = read.get(request.key)!;
        if (request.unless?.(before.state)) {
          outcomes.set(index, { key: request.key, status: before.state ? 'unchanged' : 'no-state', ...before });
          continue;
        }
        const from = before.state ?? request.seed;
        const folded = request.remove ? undefined : foldAll(from, request.events);
        const lastJob = recorded.get(request.key);
        // A state made where there was none shows the last job its record lists (one `converge apply` ran before).
        const after = folded?.job === null && lastJob ? { ...folded, job: lastJob } : folded;
        const entries = [...(request.entries ?? []), ...entriesOf(from, request.events, request.meta)];
        const same = !request.remove && (after === undefined || isDeepStrictEqual(before.state, after));
        if (same && entries.length === 0) {
          outcomes.set(index, { key: request.key, status: after ? 'unchanged' : 'no-state', ...before });
          continue;
        }
        const stateArg = request.remove ? (before.state === undefined ? '' : '-') : same ? '' : JSON.stringify(after);
        const holdArg = request.remove ? '' : holdChange(before.state, after);
        const args = [
          request.key,
          before.version,
          options.fence === undefined ? '' : String(options.fence),
          stateArg,
          holdArg,
        ];
        const minId = `${Math.max(0, now - LOG_MAX_AGE_MS)}-0`;
        void pipeline.convergeFold(
          ...this.scriptKeys(request.key),
          ...args,
          LOG_MAX_ENTRIES,
          HISTORY_MAX_ENTRIES,
          minId,
          ...entries.map((e) => JSON.stringify(e)),
        );
        sent.push({ index, request, before, after });
      }
      pending = [];
      if (sent.length === 0) break;
      const replies = await pipeline.exec();
      const lost: typeof pending = [];
      sent.forEach(({ index, request, before, after }, i) => {
        const [error, reply] = replies[i]!;
        if (error) throw error;
        const [status, version] = reply;
        if (status === -1) outcomes.set(index, { key: request.key, status: 'fenced' });
        else if (status === 0) lost.push({ request, index });
        else outcomes.set(index, this.written(request, before, after, version));
      });
      pending = lost;
    }
    if (pending.length > 0)
      throw new Error(`the state of ${pending[0]!.request.key} kept moving: ${MAX_ATTEMPTS} folds lost the race`);
    return requests.map((_, index) => outcomes.get(index)!);
  }

  /**
   * The last job the record lists for each resource a decision makes a state for (none in Redis): the newest entries
   * of its history, read in one pipeline. Only a resource new to the prefix's states is read (once, or after a loss).
   */
  private async lastJobs(requests: readonly FoldRequest[]): Promise<Map<string, JobView>> {
    const out = new Map<string, JobView>();
    if (requests.length === 0) return out;
    const pipeline = this.redis.pipeline();
    for (const request of requests)
      pipeline.xrevrange(this.keys.history(request.key), '+', '-', 'COUNT', LAST_JOB_READ);
    const replies = (await pipeline.exec()) ?? [];
    requests.forEach((request, i) => {
      const [error, entries] = replies[i] as [Error | null, Array<[string, string[]]> | null];
      if (error || !entries) return;
      const parsed = entries.flatMap(([, fields]) => parseHistoryEntry(fields[1]) ?? []);
      const job = lastJobOfRecord(parsed);
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

  private scriptKeys(key: string): string[] {
    const k = this.keys;
    return [
      k.state,
      this.versionsKey,
      k.stateVersion,
      this.leaseKey,
      k.log,
      k.history(key),
      this.holdsKey,
      k.buildLogs,
    ];
  }
}

/** The hold argument of the script: '' when the fold left the hold as it was, '-' when it went, else the new hold. */
function holdChange(before: ResourceState | undefined, after: ResourceState | undefined): string {
  if (!after || isDeepStrictEqual(before?.hold, after.hold)) return '';
  return after.hold ? JSON.stringify(after.hold) : before?.hold ? '-' : '';
}
