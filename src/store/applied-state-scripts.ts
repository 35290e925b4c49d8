// The applied-state store's Lua scripts (each one atomic command over its applied and pending hashes).
import type { Redis } from 'ioredis';

/**
 * Lua: `iso_of(seconds, ms)`, that time as an ISO 8601 string in UTC (what Date's toISOString writes: the civil date of
 * a day count by integer arithmetic), and `now_iso()`, Redis' TIME so written. Exported for its test.
 */
export const LUA_ISO_TIME = `
local function iso_of(s, ms)
  local z = math.floor(s / 86400) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  local sod = s % 86400
  local h, mi = math.floor(sod / 3600), math.floor((sod % 3600) / 60)
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d, h, mi, sod % 60, ms)
end
local function now_iso()
  local t = redis.call('TIME')
  return iso_of(tonumber(t[1]), math.floor(tonumber(t[2]) / 1000))
end
`;

/**
 * The record ARGV[2] (JSON of a record without its time, which always starts with its `secrets`) stamped with `at`.
 */
const STAMPED = `local function stamped(record, at) return '{"appliedAt":"' .. at .. '",' .. string.sub(record, 2) end`;

/**
 * The Lua scripts of the store (each one command, atomic). KEYS[1] is the applied hash, KEYS[2] the pending hash,
 * ARGV[1] the resource key. A missing field reads as false in Lua and as null in the reply.
 */
const SCRIPTS = {
  /** The applied record and the pending write of one resource. */
  convergeAppliedRead: `return {redis.call('HGET', KEYS[1], ARGV[1]), redis.call('HGET', KEYS[2], ARGV[1])}`,
  /**
   * Stores the applied record (ARGV[2], stamped with Redis' time now: the write and its time are one step) and removes
   * the pending write of the resource; answers the time stamped.
   */
  convergeRecordWrite: `${LUA_ISO_TIME}${STAMPED}
local at = now_iso()
redis.call('HSET', KEYS[1], ARGV[1], stamped(ARGV[2], at))
redis.call('HDEL', KEYS[2], ARGV[1])
return at`,
  /**
   * The settle of a lost write: while the pending write is still the one read (ARGV[3] its job id, ARGV[4] its send
   * time), stores the applied record (ARGV[2] stamped with Redis' time now; empty: store none) and removes the pending
   * write: answers the time stamped (1 when no record was stored); 0 when the pending write is another.
   */
  convergeSettlePending: `${LUA_ISO_TIME}${STAMPED}
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return 0 end
local ok, pending = pcall(cjson.decode, raw)
if not ok or type(pending) ~= 'table' or pending.jobId ~= ARGV[3] or pending.sentAt ~= ARGV[4] then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
if ARGV[2] == '' then return 1 end
local at = now_iso()
redis.call('HSET', KEYS[1], ARGV[1], stamped(ARGV[2], at))
return at`,
  /** Removes the applied record and the pending write of the resource (it was deleted). */
  convergeForget: `
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1`,
} as const;

type ScriptName = keyof typeof SCRIPTS;
export type ScriptedRedis = Redis &
  Record<ScriptName, (applied: string, pending: string, ...args: string[]) => Promise<unknown>>;

/** The connection with the store's scripts defined on it (once per connection; ioredis sends EVALSHA, EVAL after a NOSCRIPT). */
export function withScripts(redis: Redis): ScriptedRedis {
  for (const [name, lua] of Object.entries(SCRIPTS)) {
    if (typeof (redis as unknown as Record<string, unknown>)[name] !== 'function')
      redis.defineCommand(name, { numberOfKeys: 2, lua });
  }
  return redis as ScriptedRedis;
}
