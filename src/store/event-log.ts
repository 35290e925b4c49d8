// The resource event log and its projection in Redis (`${prefix}:record:*`): a bounded stream of every resource's history entries, one bounded stream per resource, each resource's folded state, and the build log tails of failed revisions.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { HISTORY_TYPES, type RecordedEvent } from '../core/resource-record.js';
import type { ResourceState } from '../core/resource-state-model.js';
import { LogCursor } from './log-cursor.js';
import { redisNow } from './clock.js';
import { parseStored, parseStoredHash } from './schema.js';

/** Entries the prefix's log keeps at most (approximately: Redis trims whole stream nodes of up to 100 entries). */
export const LOG_MAX_ENTRIES = 50_000;
/** Entries one resource's history keeps at most (exactly). */
export const HISTORY_MAX_ENTRIES = 200;
/**
 * Entries older than this leave the log and the histories at the next write (approximately, by whole nodes), by
 * Redis' clock: the stream ids are Redis' time, and so is the bound (a writer's wall clock ahead trims nothing more).
 */
export const LOG_MAX_AGE_MS = 30 * 24 * 3600_000;

/** The keys of the record under `prefix`: names of resources and ids only, never a secret. */
export function recordKeys(prefix: string): {
  log: string;
  state: string;
  stateVersion: string;
  buildLogs: string;
  notifyCursor: string;
  history: (key: string) => string;
} {
  return {
    log: `${prefix}:record:log`,
    notifyCursor: `${prefix}:record:cursor:notify`,
    state: `${prefix}:record:state`,
    stateVersion: `${prefix}:record:state-version`,
    buildLogs: `${prefix}:record:build-logs`,
    history: (key) => `${prefix}:record:history:${key}`,
  };
}

const StoredEvent = z.object({
  key: z.string(),
  at: z.string(),
  type: z.enum(HISTORY_TYPES),
  reason: z.string(),
  message: z.string(),
  manifests: z
    .object({ kind: z.enum(['git', 'content']), id: z.string(), uncommitted: z.literal(true).optional() })
    .nullable(),
  job: z.object({ id: z.string(), operation: z.string().optional() }).nullable(),
  revision: z
    .object({ id: z.string(), status: z.string(), createdAt: z.string().optional(), updatedAt: z.string().optional() })
    .nullable(),
  by: z.string(),
  fields: z.array(z.string()).optional(),
});

/** One history entry as stored in a stream's field (undefined: one this converge cannot read). */
export function parseHistoryEntry(text: string | undefined): RecordedEvent | undefined {
  return text === undefined ? undefined : parseStored(StoredEvent, text);
}

/** A projected state as stored: the fields every reader relies on are checked, the rest kept as written by this converge. */
export const StoredState = z
  .object({
    key: z.string(),
    kind: z.string(),
    name: z.string(),
    action: z.string(),
    sync: z.object({ status: z.string(), reason: z.string(), message: z.string() }),
    health: z.object({ status: z.string(), reason: z.string(), message: z.string() }).passthrough(),
  })
  .passthrough();

/** The build log tail of a resource's failed revision (secret values already masked). */
export const StoredBuildLog = z.object({
  revisionId: z.string(),
  lines: z.array(z.string()),
  note: z.string().optional(),
});
export type StoredBuildLog = z.infer<typeof StoredBuildLog>;

/**
 * The event log of a prefix and its projection, shared by every replica and by `converge apply` on that prefix. The
 * states are written by the one fold only (src/store/resource-folds.ts); this store appends entries that fold no state
 * (`converge apply`'s) and reads.
 */
export class EventLogStore {
  private readonly keys: ReturnType<typeof recordKeys>;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    /** The age bound's clock: Redis' own (src/store/clock.ts), the clock of the stream ids it is compared with. */
    private readonly clock: () => Promise<number> = () => redisNow(redis),
  ) {
    this.keys = recordKeys(prefix);
  }

  /** Appends entries that fold no state, in one MULTI, each stream trimmed by count and age. */
  async append(events: readonly RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    const now = await this.clock();
    const multi = this.redis.multi();
    const minId = `${Math.max(0, now - LOG_MAX_AGE_MS)}-0`;
    const touched = new Set<string>();
    for (const event of events) {
      const text = JSON.stringify(event);
      multi.xadd(this.keys.log, 'MAXLEN', '~', LOG_MAX_ENTRIES, '*', 'e', text);
      multi.xadd(this.keys.history(event.key), 'MAXLEN', HISTORY_MAX_ENTRIES, '*', 'e', text);
      touched.add(this.keys.history(event.key));
    }
    multi.xtrim(this.keys.log, 'MINID', '~', minId);
    // A history goes whole once its newest entry is LOG_MAX_AGE_MS old: a pruned or renamed resource's too, which no
    // later write would trim (`converge history` reads it until then).
    for (const key of touched) multi.xtrim(key, 'MINID', '~', minId).pexpire(key, LOG_MAX_AGE_MS);
    const replies = await multi.exec();
    const failed = replies?.find(([error]) => error);
    if (failed?.[0]) throw failed[0];
  }

  /**
   * A resource's history, newest first by when each happened (a revision's entry at the service's time of it, which
   * can precede the write_done recorded after the answer): the newest `limit` entries, none before `since` (ISO time).
   */
  async history(
    key: string,
    options: { limit?: number | undefined; since?: string | undefined } = {},
  ): Promise<RecordedEvent[]> {
    const limit = options.limit ?? HISTORY_MAX_ENTRIES;
    // Stream ids are Redis' clock, `at` the recorder's: a minute's margin, then `at` decides.
    const end = options.since === undefined ? '-' : `${Math.max(0, Date.parse(options.since) - 60_000)}-0`;
    const entries = await this.redis.xrevrange(this.keys.history(key), '+', end, 'COUNT', limit);
    const out: RecordedEvent[] = [];
    for (const [, fields] of entries) {
      const event = parseStored(StoredEvent, fields[1]);
      if (event && (options.since === undefined || event.at >= options.since)) out.push(event);
    }
    // A stable sort: entries of the same time keep the order they were recorded in.
    return out.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  }

  /** The newest entries of the whole log (every resource), newest first. */
  async recent(limit: number): Promise<RecordedEvent[]> {
    const entries = await this.redis.xrevrange(this.keys.log, '+', '-', 'COUNT', limit);
    return entries.flatMap(([, fields]) => parseStored(StoredEvent, fields[1]) ?? []);
  }

  /** The log's entries after stream id `after` (exclusive), oldest first, at most `count`; one this converge cannot read has no event. */
  async after(after: string, count: number): Promise<Array<{ id: string; event: RecordedEvent | undefined }>> {
    const entries = await this.redis.xrange(this.keys.log, `(${after}`, '+', 'COUNT', count);
    return entries.map(([id, fields]) => ({ id, event: parseStored(StoredEvent, fields[1]) }));
  }

  /** The notifier's position in the log (src/store/log-cursor.ts). */
  notifyCursor(): LogCursor {
    return new LogCursor(this.redis, this.keys.log, this.keys.notifyCursor);
  }

  /** The projected states of `keys` (absent or unreadable: not in the map). */
  async statesOf(keys: readonly string[]): Promise<Map<string, ResourceState>> {
    if (keys.length === 0) return new Map();
    const values = await this.redis.hmget(this.keys.state, ...keys);
    const found = Object.fromEntries(keys.flatMap((key, i) => (values[i] ? [[key, values[i]]] : [])));
    return parseStoredHash(StoredState, found) as unknown as Map<string, ResourceState>;
  }

  /** The resources that have a history (their keys), from the projection. */
  async keysWithState(): Promise<string[]> {
    return this.redis.hkeys(this.keys.state);
  }

  async setBuildLog(key: string, tail: StoredBuildLog): Promise<void> {
    await this.redis.hset(this.keys.buildLogs, key, JSON.stringify(tail));
  }

  async buildLogs(): Promise<Map<string, StoredBuildLog>> {
    return parseStoredHash(StoredBuildLog, await this.redis.hgetall(this.keys.buildLogs));
  }

  /** Bytes Redis reports for the log and one resource's history (MEMORY USAGE; 0 when absent). */
  async memoryUsage(key: string): Promise<{ log: number; history: number }> {
    const usage = async (k: string): Promise<number> =>
      Number((await this.redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')) ?? 0);
    return { log: await usage(this.keys.log), history: await usage(this.keys.history(key)) };
  }
}
