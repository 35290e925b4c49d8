// Applied state in Redis: per resource, the hashes of what converge last wrote (never a value), read by plans.
import type { Redis } from 'ioredis';
import type { AppliedRecord } from '../core/model.js';
import type { ResourceHold } from '../core/holds.js';
import { RedisHoldStore } from './holds-store.js';
import type { WrittenState } from '../core/kinds/index.js';
import { recordOf, type WriteStamp } from './applied-record-of-write.js';
import { withScripts, type ScriptedRedis } from './applied-state-scripts.js';
import { connectProducer, closeRedis, type RedisSettings } from './redis.js';
import {
  parseStored,
  parseStoredHash,
  PendingWrite,
  StoredAbsence,
  StoredAppliedRecord,
  StoredConfirmation,
} from './schema.js';
import type { Absence } from '../core/prune-grace.js';
import type { DeleteConfirmation } from '../core/job-intent.js';

/** `${prefix}:applied`: one Redis hash, field resourceKey -> JSON AppliedRecord. */
export function appliedKey(prefix: string): string {
  return `${prefix}:applied`;
}

/** `${prefix}:pending`: one Redis hash, field resourceKey -> JSON PendingWrite (a write whose answer is not known yet). */
export function pendingKey(prefix: string): string {
  return `${prefix}:pending`;
}

/** `${prefix}:keep`: one Redis hash, field resourceKey -> "1" for each resource whose manifest last said converge/prune: "false". */
export function keepKey(prefix: string): string {
  return `${prefix}:keep`;
}

/**
 * `${prefix}:declared-in`: one Redis hash, field resourceKey -> the manifest file (relative path) that last declared it
 * (a path, never a value): prune tells a file that now declares nothing from a removed one.
 */
export function declaredInKey(prefix: string): string {
  return `${prefix}:declared-in`;
}

/** `${prefix}:declared-wave`: one Redis hash, field resourceKey -> the converge/wave its manifest last declared (not 0). */
function declaredWaveKey(prefix: string): string {
  return `${prefix}:declared-wave`;
}

/**
 * `${prefix}:prune-absent`: one Redis hash, field resourceKey -> JSON Absence (since when an owned resource is
 * undeclared, in which manifests, under which live id): the daemon's prune grace survives a restart.
 */
export function absentKey(prefix: string): string {
  return `${prefix}:prune-absent`;
}

/**
 * `${prefix}:prune-confirmed`: one Redis hash, field resourceKey -> JSON DeleteConfirmation (the live id and the
 * absence's since a person confirmed the delete of: `converge reconcile --confirm-delete NAME`). Only a resource with an
 * absence has one; it goes with its absence (declared again, the grace started again) and with its applied record (deleted).
 */
export function confirmedKey(prefix: string): string {
  return `${prefix}:prune-confirmed`;
}

function parseRecord(text: string | null | undefined): AppliedRecord | undefined {
  return parseStored(StoredAppliedRecord, text);
}

/** The store. Plans only read it (getAll); workers write after each successful write to the service. */
export class AppliedStateStore {
  private readonly redis: ScriptedRedis;
  private readonly key: string;
  private readonly pending: string;
  private readonly keep: string;
  private readonly declaredIn: string;
  private readonly declaredWave: string;
  private readonly absent: string;
  private readonly confirmed: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = withScripts(redis);
    this.key = appliedKey(prefix);
    this.pending = pendingKey(prefix);
    this.keep = keepKey(prefix);
    this.declaredIn = declaredInKey(prefix);
    this.declaredWave = declaredWaveKey(prefix);
    this.absent = absentKey(prefix);
    this.confirmed = confirmedKey(prefix);
  }

  /** The daemon's prune absences (src/core/prune-grace.ts); an unreadable entry is left out (its grace starts again). */
  async absences(): Promise<Map<string, Absence>> {
    return parseStoredHash(StoredAbsence, await this.redis.hgetall(this.absent));
  }

  /**
   * Replaces the absences with `next`, writing only what changed since `before`. A confirmation goes with the absence it
   * confirmed: when the resource is declared again, or its absence starts again (other manifests, another live id).
   */
  async recordAbsences(before: ReadonlyMap<string, Absence>, next: ReadonlyMap<string, Absence>): Promise<void> {
    const gone = [...before.keys()].filter((key) => !next.has(key));
    const changed = [...next].filter(([key, a]) => JSON.stringify(before.get(key)) !== JSON.stringify(a));
    if (gone.length === 0 && changed.length === 0) return;
    const restarted = changed
      .filter(([key, a]) => before.has(key) && before.get(key)!.since !== a.since)
      .map(([key]) => key);
    const multi = this.redis.multi();
    if (gone.length > 0) multi.hdel(this.absent, ...gone);
    if (gone.length + restarted.length > 0) multi.hdel(this.confirmed, ...gone, ...restarted);
    if (changed.length > 0)
      multi.hset(
        this.absent,
        Object.fromEntries(changed.map(([key, a]) => [key, JSON.stringify(StoredAbsence.parse(a))])),
      );
    await multi.exec();
  }

  /** The stored confirmations of pending deletes; an unreadable entry is left out (its delete waits for a new one). */
  async confirmations(): Promise<Map<string, DeleteConfirmation>> {
    return parseStoredHash(StoredConfirmation, await this.redis.hgetall(this.confirmed));
  }

  /**
   * Stores a person's confirmation of each pending delete whose resource key `wanted` accepts: the absence as it stands
   * (its live id and since). Resolves once Redis holds them (a new leader finds them); returns the keys confirmed.
   */
  async confirmDeletes(wanted: (key: string) => boolean): Promise<string[]> {
    const absences = await this.absences();
    const confirmed = [...absences].filter(([key]) => wanted(key));
    if (confirmed.length === 0) return [];
    await this.redis.hset(
      this.confirmed,
      Object.fromEntries(
        confirmed.map(([key, a]) => [key, JSON.stringify(StoredConfirmation.parse({ id: a.id, since: a.since }))]),
      ),
    );
    return confirmed.map(([key]) => key);
  }

  /**
   * Every record, each marked `keep` when its manifest last carried converge/prune: "false" and with the `file` that
   * last declared it; unreadable entries (another version, corruption) are left out, so those resources plan as unknown.
   */
  async getAll(): Promise<Map<string, AppliedRecord>> {
    const [raw, kept, files, waves] = await Promise.all([
      this.redis.hgetall(this.key),
      this.redis.hkeys(this.keep),
      this.redis.hgetall(this.declaredIn),
      this.redis.hgetall(this.declaredWave),
    ]);
    const keep = new Set(kept);
    const out = new Map<string, AppliedRecord>();
    for (const [field, text] of Object.entries(raw)) {
      const record = parseRecord(text);
      if (!record) continue;
      if (keep.has(field)) record.keep = true;
      const file = files[field];
      if (file) record.file = file;
      const wave = Number(waves[field]);
      if (Number.isInteger(wave) && wave !== 0) record.wave = wave;
      out.set(field, record);
    }
    return out;
  }

  /**
   * Records the manifest file that declares each resource of `files` (resourceKey -> relative path), writing only what
   * changed since `known` (the records as this plan read them); a resource not declared keeps its last file.
   */
  async recordFiles(files: ReadonlyMap<string, string>, known?: ReadonlyMap<string, AppliedRecord>): Promise<void> {
    const changed = [...files].filter(([key, file]) => known?.get(key)?.file !== file);
    if (changed.length > 0) await this.redis.hset(this.declaredIn, Object.fromEntries(changed));
  }

  /**
   * Records the converge/wave of each declared resource (`waves`, by key; 0 for none) that changed since `known` (the
   * records as this plan read them): only waves other than 0 are kept; a resource not declared keeps its last wave.
   */
  async recordWaves(waves: ReadonlyMap<string, number>, known?: ReadonlyMap<string, AppliedRecord>): Promise<void> {
    const changed = [...waves].filter(
      ([key, wave]) => (known?.get(key)?.wave ?? 0) !== wave || (known === undefined && wave !== 0),
    );
    const set = changed.filter(([, wave]) => wave !== 0);
    const drop = changed.filter(([, wave]) => wave === 0).map(([key]) => key);
    if (set.length === 0 && drop.length === 0) return;
    const multi = this.redis.multi();
    if (set.length > 0)
      multi.hset(this.declaredWave, Object.fromEntries(set.map(([key, wave]) => [key, String(wave)])));
    if (drop.length > 0) multi.hdel(this.declaredWave, ...drop);
    await multi.exec();
  }

  /**
   * Records which declared resources carry converge/prune: "false" (`keep`), and that the other `declared` ones no
   * longer do; a resource not declared keeps its last mark (its manifest is gone: the mark decides whether prune may delete it).
   */
  async recordKeep(declared: Iterable<string>, keep: ReadonlySet<string>): Promise<void> {
    const drop = [...declared].filter((key) => !keep.has(key));
    const multi = this.redis.multi();
    if (keep.size > 0) multi.hset(this.keep, Object.fromEntries([...keep].map((key) => [key, '1'])));
    if (drop.length > 0) multi.hdel(this.keep, ...drop);
    if (keep.size + drop.length > 0) await multi.exec();
  }

  /** Forgets a deleted resource: its record and pending write, in one command (its keep mark, file and confirmation go too). */
  async forget(resourceKey: string): Promise<void> {
    await this.redis.convergeForget(this.key, this.pending, resourceKey);
    await this.redis.hdel(this.keep, resourceKey);
    await this.redis.hdel(this.declaredIn, resourceKey);
    await this.redis.hdel(this.declaredWave, resourceKey);
    await this.redis.hdel(this.confirmed, resourceKey);
  }

  async get(resourceKey: string): Promise<AppliedRecord | undefined> {
    return parseRecord(await this.redis.hget(this.key, resourceKey));
  }

  /** Stores the record (validated: hashes only, so a value can never be stored by mistake). */
  async set(resourceKey: string, record: AppliedRecord): Promise<void> {
    const valid = StoredAppliedRecord.parse(record);
    await this.redis.hset(this.key, resourceKey, JSON.stringify(valid));
  }

  /**
   * Records a write: its secret hashes merged over the previous record (secrets not written keep their hash), or
   * replacing them when the write carried the complete set; its field hashes merged over the previous ones by path;
   * the definition hash replaced when given; its time Redis' clock at the write; and the pending entry of the write
   * removed, in one atomic command.
   */
  async recordWrite(
    resourceKey: string,
    written: WrittenState,
    /** The record as the caller read it during this job (null: none); undefined reads it here. */
    known?: AppliedRecord | null,
    /** Where the written desired state came from (the job's fingerprint and manifest version); replaces the recorded one. */
    stamp?: WriteStamp,
  ): Promise<AppliedRecord> {
    const previous = known === undefined ? await this.get(resourceKey) : (known ?? undefined);
    const record = recordOf(written, previous, stamp);
    const at = await this.redis.convergeRecordWrite(this.key, this.pending, resourceKey, JSON.stringify(record));
    return { appliedAt: String(at), ...record };
  }

  /**
   * recordWrite for a write whose answer was lost and that live state shows landed, only while `pending` is still the
   * resource's pending write (the same job and send time): a newer job's pending write is never settled in its stead.
   * Undefined, nothing written, when it is not (or the pending write names no job).
   */
  async recordSettled(
    resourceKey: string,
    pending: PendingWrite,
    written: WrittenState,
    known: AppliedRecord | null,
    stamp?: WriteStamp,
  ): Promise<AppliedRecord | undefined> {
    const record = recordOf(written, known ?? undefined, stamp);
    const at = await this.settle(resourceKey, pending, JSON.stringify(record));
    return typeof at === 'string' ? { appliedAt: at, ...record } : undefined;
  }

  /** Removes the pending write while it is still `pending` (a lost write that did not land); false when it is not. */
  async clearSettled(resourceKey: string, pending: PendingWrite): Promise<boolean> {
    return (await this.settle(resourceKey, pending, '')) !== undefined;
  }

  /** The settle script's answer: the record's time when it stored one, 1 when it only cleared, else undefined. */
  private async settle(resourceKey: string, pending: PendingWrite, record: string): Promise<string | 1 | undefined> {
    if (pending.jobId === undefined) return undefined;
    const { jobId, sentAt } = pending;
    const answer = await this.redis.convergeSettlePending(this.key, this.pending, resourceKey, record, jobId, sentAt);
    return typeof answer === 'string' ? answer : answer === 1 ? 1 : undefined;
  }

  /** The applied record and the pending write of one resource, in one command. */
  async read(resourceKey: string): Promise<{ applied: AppliedRecord | undefined; pending: PendingWrite | undefined }> {
    const [applied, pending] = (await this.redis.convergeAppliedRead(this.key, this.pending, resourceKey)) as [
      string | null,
      string | null,
    ];
    return { applied: parseRecord(applied), pending: parseStored(PendingWrite, pending) };
  }

  /** Resources with a write whose answer is not known yet (a job that died between sending and recording). */
  async pendingKeys(): Promise<Set<string>> {
    return new Set(await this.redis.hkeys(this.pending));
  }

  async getPending(resourceKey: string): Promise<PendingWrite | undefined> {
    return parseStored(PendingWrite, await this.redis.hget(this.pending, resourceKey));
  }

  async setPending(resourceKey: string, pending: PendingWrite): Promise<void> {
    await this.redis.hset(this.pending, resourceKey, JSON.stringify(PendingWrite.parse(pending)));
  }

  async clearPending(resourceKey: string): Promise<void> {
    await this.redis.hdel(this.pending, resourceKey);
  }
}

/**
 * For plan: the applied records (and the daemon's holds) when Redis answers; when it does not, an empty map and a one-line warning
 * (a plan works without Redis; secrets whose values the service hides then show as "written once").
 */
export async function readAppliedState(
  settings: RedisSettings,
): Promise<{ records: Map<string, AppliedRecord>; holds?: Map<string, ResourceHold>; warning?: string }> {
  let redis: Redis | undefined;
  try {
    redis = await connectProducer(settings, { name: 'converge-plan' });
    const prefix = settings.redisPrefix;
    // The daemon's holds too (src/store/holds-store.ts): a plan says which of its writes the daemon will not send.
    const [records, holds] = await Promise.all([
      new AppliedStateStore(redis, prefix).getAll(),
      new RedisHoldStore(redis, prefix).getAll(),
    ]);
    return { records, holds };
  } catch (error) {
    return {
      records: new Map(),
      warning: `${(error as Error).message.split('\n')[0]}; planning without applied state`,
    };
  } finally {
    await closeRedis(redis);
  }
}
