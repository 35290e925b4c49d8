// The guard against flapping, pure: from a resource's recent writes, whether the next one is a fight (A-B-A, or healing too often).
import { z } from 'zod';
import { ManifestVersion, sameVersion, versionLabel } from './manifest-version.js';

const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/** The guard's settings (flap_window, flap_limit). */
export interface FlapSettings {
  /** How far back writes and heals are looked at, in ms. */
  windowMs: number;
  /** Heals of one desired state allowed within the window; the next is refused (a conflict). */
  limit: number;
}

export const DEFAULT_FLAP: FlapSettings = { windowMs: 30 * 60_000, limit: 3 };

/** Reasons of a conflict, as the metric labels them. desired_alternates: A, B, A; changed_outside: healed too often. */
export const CONFLICT_REASONS = ['desired_alternates', 'changed_outside'] as const;

/** Why converge stopped writing to a resource. No secret: fingerprints, versions and field paths only. */
export const Conflict = z.strictObject({
  reason: z.enum(CONFLICT_REASONS),
  /** One line for status and logs. */
  message: z.string(),
  /** ISO time the conflict was found. */
  since: z.string(),
  /** The desired states (fingerprints) the conflict holds: a job of any other one releases it. */
  desired: z.array(Sha256Hex).min(1),
  /** desired_alternates: the two versions that alternate. */
  versions: z.array(ManifestVersion).optional(),
  /** changed_outside: the fields converge kept putting back. */
  fields: z.array(z.string()).optional(),
});
export type Conflict = z.infer<typeof Conflict>;

/** One write converge sent to a resource; `fence`: the fencing token of the daemon leader that enqueued it (none from apply). */
const FlapWrite = z.strictObject({
  desired: Sha256Hex,
  version: ManifestVersion.optional(),
  fence: z.number().int().positive().optional(),
  at: z.string(),
});
/** One write that put back what changed outside converge (the same desired state as the write before it). */
const FlapHeal = z.strictObject({ desired: Sha256Hex, at: z.string(), fields: z.array(z.string()) });

/** A resource's recent writes and heals (kept in Redis by src/store/flap-store.ts). */
export const FlapHistory = z.strictObject({ writes: z.array(FlapWrite), heals: z.array(FlapHeal) });
export type FlapHistory = z.infer<typeof FlapHistory>;

export const EMPTY_HISTORY: FlapHistory = { writes: [], heals: [] };

/** Writes kept per resource: enough to see A-B-A; older ones fall out of the window anyway. */
const MAX_WRITES = 16;

/** Manifest versions kept per leader term (`WriteAttempt.reads`): the newest, a version read again counting as new. */
export const MAX_READS = 64;

/** How a version read is kept in a term's reads: its kind and id (edits not committed keep their commit's identity, as in sameVersion). */
export function readOf(version: Pick<ManifestVersion, 'kind' | 'id'>): string {
  return `${version.kind}:${version.id}`;
}

/** A write a job is about to send. */
export interface WriteAttempt {
  /** The fingerprint of the job's desired state; a job without one is never judged (nothing to compare). */
  desired: string | undefined;
  version?: ManifestVersion | undefined;
  /** The fencing token of the leader that enqueued the job (src/leader/lease.ts); undefined: not a daemon's job (apply). */
  fence?: number | undefined;
  /**
   * The manifest versions the leader of term `fence` read, oldest first (`readOf`; kept in Redis per term by
   * src/store/flap-store.ts); absent or empty: unknown, and then only `oneLeader` tells a rollback.
   */
  reads?: readonly string[] | undefined;
  /** The applied record's last write came from this same desired state: this write puts back a change made outside. */
  heal: boolean;
  now: Date;
}

export type WriteDecision = { allow: true } | { allow: false; conflict: Conflict; declared: boolean };

function windowStart(now: Date, settings: FlapSettings): number {
  return now.getTime() - settings.windowMs;
}

/** The history without entries older than the window. */
export function pruneHistory(history: FlapHistory, now: Date, settings: FlapSettings): FlapHistory {
  const from = windowStart(now, settings);
  return {
    writes: history.writes.filter((w) => Date.parse(w.at) >= from).slice(-MAX_WRITES),
    heals: history.heals.filter((h) => Date.parse(h.at) >= from),
  };
}

function minutes(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

function labelOf(version: ManifestVersion | undefined, desired: string): string {
  return version ? versionLabel(version) : `desired state ${desired.slice(0, 7)}`;
}

/**
 * Whether a write may go out. A conflict already standing refuses every write (release it first). Otherwise:
 * - the desired state returns to one written earlier in the window from the same version, after another was written
 *   in between from another version (A, then B, then A): two sources of manifests disagree (replicas a commit apart,
 *   two converge on one workspace); a revert is a new commit (another version), and a change that is not in the
 *   manifests (a secret's value from the environment) keeps the version, so neither is taken for one;
 * - the write puts back what changed outside converge, and the window already holds `limit` such heals of this
 *   desired state: something else keeps changing it.
 * A conflict never costs more than `limit` writes: the refused write is the one past the limit.
 *
 * A return is no fight when the writer of the return read the manifests go back: it is the one leader that wrote the
 * desired state before it (see oneLeader), or its leader term read the version of that last write before the version it
 * writes now (see wentBack: a restart, a kill -9 or a failover to a standby on the same directory, then a checkout of
 * an earlier commit). A writer that never read the version in between (a replica on another commit) still fights.
 */
export function decideWrite(
  history: FlapHistory,
  standing: Conflict | undefined,
  attempt: WriteAttempt,
  settings: FlapSettings,
): WriteDecision {
  if (standing) return { allow: false, conflict: standing, declared: false };
  const desired = attempt.desired;
  if (!desired) return { allow: true };
  const recent = pruneHistory(history, attempt.now, settings);
  const last = recent.writes.at(-1);
  // Two sources of manifests fight only when the write in between came from other manifests: desired states of one
  // version that differ (a secret from the environment rotated and rotated back) are changes, not a fight.
  if (
    last &&
    last.desired !== desired &&
    !sameVersion(last.version, attempt.version) &&
    !oneLeader(last, attempt) &&
    !wentBack(attempt, last)
  ) {
    const earlier = recent.writes
      .slice(0, -1)
      .findLast((w) => w.desired === desired && sameVersion(w.version, attempt.version));
    if (earlier) {
      const a = labelOf(attempt.version, desired);
      const b = labelOf(last.version, last.desired);
      const conflict: Conflict = {
        reason: 'desired_alternates',
        message: `the desired state alternates between ${a} and ${b} within flap_window (${minutes(settings.windowMs)}): two sources of manifests disagree (replicas a commit apart, or two converge on one workspace); nothing written until the desired state changes to a new one or an operator releases it`,
        since: attempt.now.toISOString(),
        desired: [desired, last.desired],
      };
      const versions = [attempt.version, last.version].filter((v): v is ManifestVersion => v !== undefined);
      if (versions.length > 0) conflict.versions = versions;
      return { allow: false, conflict, declared: true };
    }
  }
  if (attempt.heal) {
    const heals = recent.heals.filter((h) => h.desired === desired);
    if (heals.length >= settings.limit) {
      const fields = [...new Set(heals.flatMap((h) => h.fields))].sort();
      const what = fields.length > 0 ? fields.join(', ') : 'the resource';
      return {
        allow: false,
        declared: true,
        conflict: {
          reason: 'changed_outside',
          message: `changed outside converge: ${what} put back ${heals.length} times within flap_window (${minutes(settings.windowMs)}) and changed again; something else (another tool, a person, another converge) keeps changing it; nothing written until the desired state changes or an operator releases it`,
          since: attempt.now.toISOString(),
          desired: [desired],
          fields,
        },
      };
    }
  }
  return { allow: true };
}

/**
 * Whether the write before and this one were enqueued by the same daemon leader, in the same term (one fencing token):
 * then the change between them is in the manifests that one leader read, an operator's change, never two writers
 * taking turns. Two replicas that read different commits write under different tokens (only the leader enqueues, and
 * each new leader holds a newer token), and apply's jobs carry none: both are still judged A, B, A.
 */
export function oneLeader(last: { fence?: number | undefined }, attempt: Pick<WriteAttempt, 'fence'>): boolean {
  return attempt.fence !== undefined && last.fence === attempt.fence;
}

/**
 * Whether the leader term that enqueued this write read the version of the last write (B) and, after it, the version
 * it writes now (A): the manifests it reads went from B back to A, one source going back (a rollback), not two sources
 * taking turns. A term that never read B (a replica that reads another commit, `converge apply`, reads expired or
 * unknown) is no evidence: judged A, B, A.
 */
export function wentBack(
  attempt: Pick<WriteAttempt, 'version' | 'reads'>,
  last: { version?: ManifestVersion | undefined },
): boolean {
  const reads = attempt.reads;
  if (!reads || !attempt.version || !last.version) return false;
  const from = reads.indexOf(readOf(last.version));
  return from >= 0 && reads.lastIndexOf(readOf(attempt.version)) > from;
}

/** The history after a write went out (pruned to the window). `fields`: the field paths the write sent. */
export function recordWrite(
  history: FlapHistory,
  attempt: WriteAttempt,
  fields: readonly string[],
  settings: FlapSettings,
): FlapHistory {
  const recent = pruneHistory(history, attempt.now, settings);
  if (!attempt.desired) return recent;
  const at = attempt.now.toISOString();
  const write = {
    desired: attempt.desired,
    ...(attempt.version ? { version: attempt.version } : {}),
    ...(attempt.fence !== undefined ? { fence: attempt.fence } : {}),
    at,
  };
  return {
    writes: [...recent.writes, write].slice(-MAX_WRITES),
    heals: attempt.heal ? [...recent.heals, { desired: attempt.desired, at, fields: [...fields] }] : recent.heals,
  };
}

/** Whether a job of desired state `desired` releases the conflict: it asks for a desired state the conflict does not hold. */
export function releasedBy(conflict: Conflict, desired: string | undefined): boolean {
  return desired !== undefined && !conflict.desired.includes(desired);
}
