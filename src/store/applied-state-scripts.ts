// The applied-state store's Lua scripts (each one atomic command over its applied and pending hashes).
import type { Redis } from 'ioredis';

/**
 * The Lua scripts of the store (each one command, atomic). KEYS[1] is the applied hash, KEYS[2] the pending hash,
 * ARGV[1] the resource key. A missing field reads as false in Lua and as null in the reply.
 */
const SCRIPTS = {
  /** The applied record and the pending write of one resource. */
  convergeAppliedRead: `return {redis.call('HGET', KEYS[1], ARGV[1]), redis.call('HGET', KEYS[2], ARGV[1])}`,
  /** Stores the applied record (ARGV[2]) and removes the pending write of the resource. */
  convergeRecordWrite: `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1`,
  /**
   * The settle of a lost write: while the pending write is still the one read (ARGV[3] its job id, ARGV[4] its send
   * time), stores the applied record (ARGV[2], empty: store none) and removes the pending write; 1 if it did, else 0.
   */
  convergeSettlePending: `
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return 0 end
local ok, pending = pcall(cjson.decode, raw)
if not ok or type(pending) ~= 'table' or pending.jobId ~= ARGV[3] or pending.sentAt ~= ARGV[4] then return 0 end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('HDEL', KEYS[2], ARGV[1])
return 1`,
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
