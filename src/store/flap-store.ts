// The flap guard's state in Redis, shared by every replica: per resource its recent writes and heals, and the conflicts standing.
import type { Redis } from 'ioredis';
import { Conflict, EMPTY_HISTORY, FlapHistory, MAX_READS, readOf } from '../core/flap-guard.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import { parseStored, parseStoredHash } from './schema.js';

/** `${prefix}:flap:history`: one Redis hash, resourceKey -> JSON FlapHistory (fingerprints, versions, field paths). */
export function flapHistoryKey(prefix: string): string {
  return `${prefix}:flap:history`;
}

/** `${prefix}:flap:conflicts`: one Redis hash, resourceKey -> JSON Conflict, for each resource converge stopped writing to. */
export function conflictsKey(prefix: string): string {
  return `${prefix}:flap:conflicts`;
}

/**
 * `${prefix}:flap:reads:${token}`: one Redis list per leader term (its fencing token), the manifest versions that term
 * read, in order ("git:<commit>" or "content:<id>", a version repeated back to back kept once). It expires a flap window
 * after the term's last read: the flap guard asks it whether a return to earlier manifests is that term's rollback.
 */
export function flapReadsKey(prefix: string, token: number): string {
  return `${prefix}:flap:reads:${token}`;
}

// KEYS: the term's reads list. ARGV: the version read, the most kept, the list's TTL in ms. Appends the version unless it
// is the last one already, keeps the newest ARGV[2], and (re)starts the TTL.
const RECORD_READ = `
if redis.call('LINDEX', KEYS[1], -1) ~= ARGV[1] then
  redis.call('RPUSH', KEYS[1], ARGV[1])
  redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

/** The store. One job at a time runs per resource (BullMQ deduplication), so a read-then-write per job does not race itself. */
export class FlapStore {
  private readonly redis: Redis;
  private readonly history: string;
  private readonly conflicts: string;
  private readonly prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
    this.history = flapHistoryKey(prefix);
    this.conflicts = conflictsKey(prefix);
  }

  /** A resource's history and its standing conflict, in one round trip. Unreadable entries read as none. */
  async read(key: string): Promise<{ history: FlapHistory; conflict: Conflict | undefined }> {
    const [history, conflict] = await Promise.all([
      this.redis.hget(this.history, key),
      this.redis.hget(this.conflicts, key),
    ]);
    return { history: parseStored(FlapHistory, history) ?? EMPTY_HISTORY, conflict: parseStored(Conflict, conflict) };
  }

  /**
   * Records that the leader of term `token` read the manifests of `version` (each reconcile, before it enqueues), kept
   * `ttlMs` after this read. One script: the check of the last read and the append are one step.
   */
  async recordRead(token: number, version: ManifestVersion, ttlMs: number): Promise<void> {
    await this.redis.eval(
      RECORD_READ,
      1,
      flapReadsKey(this.prefix, token),
      readOf(version),
      String(MAX_READS),
      String(Math.max(1_000, Math.round(ttlMs))),
    );
  }

  /** The versions the leader of term `token` read, oldest first (none when it read nothing or they expired). */
  async reads(token: number): Promise<string[]> {
    return this.redis.lrange(flapReadsKey(this.prefix, token), 0, -1);
  }

  async setHistory(key: string, history: FlapHistory): Promise<void> {
    if (history.writes.length === 0 && history.heals.length === 0) await this.redis.hdel(this.history, key);
    else await this.redis.hset(this.history, key, JSON.stringify(FlapHistory.parse(history)));
  }

  /** Records a conflict: no write to the resource until it is released. */
  async declare(key: string, conflict: Conflict): Promise<void> {
    await this.redis.hset(this.conflicts, key, JSON.stringify(Conflict.parse(conflict)));
  }

  /** Every standing conflict, by resource key. */
  async all(): Promise<Map<string, Conflict>> {
    return parseStoredHash(Conflict, await this.redis.hgetall(this.conflicts));
  }

  /**
   * Releases the conflicts of `keys` (every one when undefined). `forget`: also forget their histories, so the next
   * write starts afresh (an operator's release); otherwise the writes stay on record (a new desired state released it,
   * and a return to an alternating one is still seen). Returns the keys whose conflict was released.
   */
  async release(keys?: readonly string[], forget = true): Promise<string[]> {
    const held = keys ?? (await this.redis.hkeys(this.conflicts));
    if (held.length === 0) return [];
    const present = await this.redis.hmget(this.conflicts, ...held);
    const released = held.filter((_, i) => present[i] !== null);
    if (released.length === 0) return [];
    const batch = this.redis.multi().hdel(this.conflicts, ...released);
    if (forget) batch.hdel(this.history, ...released);
    await batch.exec();
    return released;
  }
}
