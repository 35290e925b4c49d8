// The daemon's prune rule (pure): an owned resource's absence must hold, with the manifests unchanged, for the grace and across two reconciles (auto), or be confirmed by a person (confirm), before its delete is sent.
import type { PlanChange } from './model.js';
import { resourceKey } from './model.js';

/** `prune_mode`: `auto` deletes once the grace has passed; `confirm` waits for `converge reconcile --confirm-delete NAME`. */
export const PRUNE_MODES = ['auto', 'confirm'] as const;
export type PruneMode = (typeof PRUNE_MODES)[number];

/** The default `prune_grace` (docs/adopting-and-pruning.md says why 60 s). */
export const DEFAULT_PRUNE_GRACE_MS = 60_000;

/** What is remembered of one owned resource that no manifest declares (kept in Redis; no secret in it). */
export interface Absence {
  /** When a reconcile first saw it undeclared with these manifests (ms since the epoch). */
  since: number;
  /** The content id of the manifests it was seen undeclared in: another one starts the grace again. */
  manifests: string;
  /** The reconciles that saw it undeclared with these manifests. */
  seen: number;
  /** The live id the delete is for: another one starts the grace again. */
  id: string;
}

/** The delete that waits: since when, until when (auto), or for a person (confirm). */
export interface PendingDelete {
  since: number;
  /** auto: when the grace ends (a reconcile then sends it); confirm: null. */
  dueAt: number | null;
  confirm: boolean;
}

export interface PruneGraceInput {
  /** The absences remembered before this reconcile, by resourceKey. */
  absent: ReadonlyMap<string, Absence>;
  /** The deletes this reconcile's plan would send (owned, undeclared, no guard refused), with their live ids. */
  candidates: ReadonlyArray<{ key: string; id: string }>;
  /** The content id of the manifests this reconcile read. */
  manifests: string;
  now: number;
  graceMs: number;
  mode: PruneMode;
  /** Whether a person confirmed the delete of this resource as undeclared since `absence` (src/core/job-intent.ts confirms). */
  confirmed: (key: string, absence: Absence) => boolean;
}

export interface PruneGraceResult {
  /** The absences to remember after this reconcile: only the candidates' (a resource declared again is forgotten). */
  absent: Map<string, Absence>;
  /** The deletes to send now. */
  due: Set<string>;
  /** The deletes that wait, by resourceKey. */
  waiting: Map<string, PendingDelete>;
  /** auto: the earliest time a waiting delete falls due (the daemon reconciles then); undefined: none waits on time. */
  recheckAt?: number;
}

/**
 * Which planned deletes are sent now. auto: one whose absence was seen by at least two reconciles of the same
 * manifests and has held for `graceMs`; confirm: none until a person confirms it (a confirmed one is sent in either mode). A resource whose live id or manifests changed
 * starts again; one no longer a candidate is forgotten.
 */
export function pruneGrace(input: PruneGraceInput): PruneGraceResult {
  const absent = new Map<string, Absence>();
  const due = new Set<string>();
  const waiting = new Map<string, PendingDelete>();
  let recheckAt: number | undefined;
  for (const { key, id } of input.candidates) {
    const before = input.absent.get(key);
    const same =
      before !== undefined && before.manifests === input.manifests && before.id === id && before.since <= input.now;
    const absence: Absence = same
      ? { ...before, seen: before.seen + 1 }
      : { since: input.now, manifests: input.manifests, seen: 1, id };
    absent.set(key, absence);
    // A person who confirmed a delete they saw pending need not wait for the grace (either mode).
    if (input.confirmed(key, absence)) {
      due.add(key);
      continue;
    }
    if (input.mode === 'confirm') {
      waiting.set(key, { since: absence.since, dueAt: null, confirm: true });
      continue;
    }
    const dueAt = absence.since + input.graceMs;
    if (absence.seen >= 2 && input.now >= dueAt) {
      due.add(key);
      continue;
    }
    waiting.set(key, { since: absence.since, dueAt, confirm: false });
    // Due on time but seen once: the reconcile that confirms it comes at once (a second look, not a second wait).
    const next = Math.max(dueAt, input.now);
    recheckAt = recheckAt === undefined ? next : Math.min(recheckAt, next);
  }
  return { absent, due, waiting, ...(recheckAt !== undefined ? { recheckAt } : {}) };
}

/** The plan's delete changes, each with its live id: the candidates of pruneGrace. */
export function deleteCandidates(changes: readonly PlanChange[]): Array<{ key: string; id: string }> {
  return changes
    .filter((c) => c.action === 'delete' && c.id !== undefined)
    .map((c) => ({ key: resourceKey(c.kind, c.name), id: c.id! }));
}

/** The reason a waiting delete shows (status page, /status, logs). */
export function pendingDeleteReason(pending: PendingDelete, name: string): string {
  const since = new Date(pending.since).toISOString();
  if (pending.confirm) {
    return `delete pending: owned by converge, no longer declared since ${since}; prune mode confirm: deleted only after "converge reconcile --confirm-delete ${name}"`;
  }
  return `delete pending: owned by converge, no longer declared since ${since}; deleted at ${new Date(pending.dueAt!).toISOString()} if still undeclared with the manifests unchanged (prune_grace)`;
}

/** The plan's changes with each waiting delete marked (its decision sends nothing: DeletePending). */
export function markPendingDeletes(
  changes: readonly PlanChange[],
  waiting: ReadonlyMap<string, PendingDelete>,
): PlanChange[] {
  return changes.map((change) => {
    const pending = change.action === 'delete' ? waiting.get(resourceKey(change.kind, change.name)) : undefined;
    if (!pending) return change;
    return {
      ...change,
      reason: pendingDeleteReason(pending, change.name),
      pending_delete: {
        since: new Date(pending.since).toISOString(),
        due: pending.dueAt === null ? null : new Date(pending.dueAt).toISOString(),
        confirm: pending.confirm,
      },
    };
  });
}
