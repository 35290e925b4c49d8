// The Lua scripts of the fold in Redis (src/store/resource-folds.ts): one call writes the folds of many resources, each compare-and-set on its own version; one call reads the newest history entries of many resources.
import type { Redis } from 'ioredis';
import { HISTORY_MAX_ENTRIES, LOG_MAX_AGE_MS, LOG_MAX_ENTRIES, recordKeys } from './event-log.js';
import { holdsKey } from './holds-store.js';

/** `{prefix}:record:state-versions`: per resource, the version of its state (the counter's value at its last write). */
export function stateVersionsKey(prefix: string): string {
  return `${prefix}:record:state-versions`;
}

/** Resources folded by one script call at most: a call holds Redis for about 10 ms at this size (docs/performance.md). */
export const FOLD_BATCH = 250;

/**
 * KEYS: 1 states hash, 2 versions hash, 3 the projection's version counter, 4 the leader lease, 5 the log, 6 the holds
 * hash, 7 the failed builds' log lines (gone with a removed resource), 7+i the history of the i-th resource (every key
 * the script touches is in KEYS, all under the prefix's {hash tag}: one slot on a Redis Cluster). ARGV: 1 the fence
 * ('' unfenced), 2 the log's length, 3 the history's length, 4 the oldest id kept; then per resource: its key, the
 * version read (0: none), the new state ('' unchanged, '-' removed), the hold ('' unchanged, '-' released, else its
 * JSON), the number of entries, the entries.
 * Answers {-1} when the fence is not the lease's token (a replica that no longer leads: nothing written), else per
 * resource in order {1, version} when written, {0, version} when its version moved since it was read (that resource
 * alone is not written). The version is the counter's value at the write, and the counter takes max(INCR, Redis' clock
 * in microseconds) as the lease's token does (src/leader/lease.ts): it never repeats, not for a removed and
 * declared-again resource and not across a Redis that lost the counter (a FLUSHALL, a restart with no persistence, an
 * older snapshot), so a process's cache (src/store/resource-folds.ts) never takes a state it read before the loss for
 * one written after it. Lua numbers are doubles, exact below 2^53; '%.0f' writes them without an exponent.
 */
const FOLD = `
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local function next_version()
  local version = redis.call('INCR', KEYS[3])
  if version < floor then
    version = floor
    redis.call('SET', KEYS[3], string.format('%.0f', version))
  end
  return version
end
if ARGV[1] ~= '' then
  local lease = redis.call('GET', KEYS[4])
  local token = lease and string.match(lease, '|(%d+)|[^|]*$')
  if token ~= ARGV[1] then return {-1} end
end
local out = {}
local logged = false
local at = 5
local n = 0
while at <= #ARGV do
  n = n + 1
  local key, state, hold, count = ARGV[at], ARGV[at + 2], ARGV[at + 3], tonumber(ARGV[at + 4])
  local history = KEYS[7 + n]
  local first = at + 5
  local current = tonumber(redis.call('HGET', KEYS[2], key) or '0')
  if current ~= tonumber(ARGV[at + 1]) then
    out[#out + 1] = 0
    out[#out + 1] = current
  else
    local version = current
    if state == '-' then
      redis.call('HDEL', KEYS[1], key)
      redis.call('HDEL', KEYS[2], key)
      redis.call('HDEL', KEYS[7], key)
      next_version()
      version = 0
    elseif state ~= '' then
      version = next_version()
      redis.call('HSET', KEYS[1], key, state)
      redis.call('HSET', KEYS[2], key, string.format('%.0f', version))
    end
    if hold == '-' then redis.call('HDEL', KEYS[6], key) elseif hold ~= '' then redis.call('HSET', KEYS[6], key, hold) end
    for i = first, first + count - 1 do
      redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[2], '*', 'e', ARGV[i])
      redis.call('XADD', history, 'MAXLEN', ARGV[3], '*', 'e', ARGV[i])
    end
    if count > 0 then
      logged = true
      redis.call('XTRIM', history, 'MINID', '~', ARGV[4])
      redis.call('PEXPIRE', history, ${LOG_MAX_AGE_MS})
    end
    out[#out + 1] = 1
    out[#out + 1] = version
  end
  at = first + count
end
if logged then redis.call('XTRIM', KEYS[5], 'MINID', '~', ARGV[4]) end
return out
`;

/** KEYS: the histories; ARGV: 1 how many of each one's newest entries. Answers each one's entries, newest first. */
const NEWEST = `
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('XREVRANGE', key, '+', '-', 'COUNT', ARGV[1]) end
return out
`;

/** One resource's part of a fold call: the arguments the script reads for it. */
export interface FoldWrite {
  key: string;
  /** The version read (0: none). */
  version: number;
  /** '' unchanged, '-' removed, else the new state's JSON. */
  state: string;
  /** '' unchanged, '-' released, else the new hold's JSON. */
  hold: string;
  /** The history entries, JSON. */
  entries: string[];
}

/** Each resource's answer: `fenced`, or written (`written: true`) or lost the race, with the version then. */
export type FoldReply = 'fenced' | { written: boolean; version: number };

type Scripted = {
  convergeFoldBatch(...args: Array<string | number>): unknown;
  convergeNewestEntries(...args: Array<string | number>): unknown;
};

/** The two scripts, defined once on a connection. */
export function defineFoldScripts(redis: Redis): void {
  if (!('convergeFoldBatch' in redis)) redis.defineCommand('convergeFoldBatch', { lua: FOLD });
  if (!('convergeNewestEntries' in redis)) redis.defineCommand('convergeNewestEntries', { lua: NEWEST });
}

/**
 * Writes `writes` in calls of FOLD_BATCH resources, all sent in one pipeline; answers each resource's reply in order.
 * The histories are the only keys of one resource; the others are the prefix's.
 */
export async function foldInRedis(
  redis: Redis,
  keys: { prefix: string; lease: string },
  writes: readonly FoldWrite[],
  options: { fence: string; minId: string },
): Promise<FoldReply[]> {
  const k = recordKeys(keys.prefix);
  const shared = [k.state, stateVersionsKey(keys.prefix), k.stateVersion, keys.lease, k.log];
  const pipeline = redis.pipeline() as unknown as Scripted & { exec(): Promise<Array<[Error | null, unknown]>> };
  const batches: Array<readonly FoldWrite[]> = [];
  for (let at = 0; at < writes.length; at += FOLD_BATCH) batches.push(writes.slice(at, at + FOLD_BATCH));
  for (const batch of batches) {
    const args: Array<string | number> = [options.fence, LOG_MAX_ENTRIES, HISTORY_MAX_ENTRIES, options.minId];
    for (const w of batch) args.push(w.key, w.version, w.state, w.hold, w.entries.length, ...w.entries);
    const histories = batch.map((w) => k.history(w.key));
    const all = [...shared, holdsKey(keys.prefix), k.buildLogs, ...histories];
    void pipeline.convergeFoldBatch(all.length, ...all, ...args);
  }
  const replies = await pipeline.exec();
  return batches.flatMap((batch, b): FoldReply[] => {
    const [error, reply] = replies[b]!;
    if (error) throw error;
    const numbers = reply as number[];
    if (numbers[0] === -1) return batch.map(() => 'fenced');
    return batch.map((_, i) => ({ written: numbers[2 * i] === 1, version: numbers[2 * i + 1]! }));
  });
}

/** The newest `count` entries' texts of each history (newest first), in calls of FOLD_BATCH, one pipeline. */
export async function newestEntries(redis: Redis, histories: readonly string[], count: number): Promise<string[][]> {
  if (histories.length === 0) return [];
  const pipeline = redis.pipeline() as unknown as Scripted & { exec(): Promise<Array<[Error | null, unknown]>> };
  for (let at = 0; at < histories.length; at += FOLD_BATCH) {
    const batch = histories.slice(at, at + FOLD_BATCH);
    void pipeline.convergeNewestEntries(batch.length, ...batch, count);
  }
  const replies = await pipeline.exec();
  // A call that failed (a history key of another type) reads as no entries for its resources, as a read of none.
  return replies.flatMap(([error, reply], b) => {
    if (error) return Array.from({ length: Math.min(FOLD_BATCH, histories.length - b * FOLD_BATCH) }, () => []);
    return (reply as Array<Array<[string, string[]]>>).map((entries) => entries.map(([, fields]) => fields[1]!));
  });
}
