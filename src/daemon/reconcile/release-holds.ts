// The operator's release of holds (converge reconcile --retry-failed): a failed revision's hold and a Conflict of the flap guard, in Redis and in status.
import type { Logger } from 'pino';
import { holdsNamed, type ResourceHold } from '../../core/holds.js';
import type { CycleContext } from '../cycle/cycle-context.js';
import type { ResourceTracker } from '../status/resource-tracker.js';

/** The command that asks for a release, as the history names it (src/core/resource-record.ts). */
const RETRY_FAILED = 'converge reconcile --retry-failed';

/** What a release reads and changes: the stores of holds and conflicts, the rows, and the watch scope to touch. */
export interface ReleaseDeps {
  context: Pick<CycleContext, 'holds' | 'conflicts'>;
  tracker: ResourceTracker;
  log: Logger;
  /** Marks the released resources for the next reconcile (a targeted one decides them again). */
  touch(keys: readonly string[]): void;
}

/**
 * Releases the holds of the named resources (true: every one) in Redis and in status, so the next reconcile writes
 * them again. Only a failed revision is rebuilt when nothing differs (`rebuild`): a released Conflict is written again
 * only where its plan differs.
 */
export async function releaseHolds(
  deps: ReleaseDeps,
  request: true | readonly string[],
  /** Told the failed revisions' holds to rebuild before they are released (kept with the operator's request). */
  beforeRelease?: (rebuild: readonly string[]) => Promise<void>,
): Promise<{ released: string[]; unmatched: string[]; rebuild: string[] }> {
  const { holds: store, conflicts } = deps.context;
  const stored = store ? await store.getAll() : new Map<string, ResourceHold>();
  const failed = new Set([...stored.keys(), ...deps.tracker.heldKeys()]);
  // A Conflict of the flap guard is a hold too: released the same way, its recent writes forgotten.
  const standing = conflicts ? [...(await conflicts.all()).keys()] : [];
  const conflicted = new Set([...standing, ...deps.tracker.conflicts()]);
  const named = holdsNamed([...new Set([...failed, ...conflicted])], request);
  const revisionHeld = named.released.filter((key) => failed.has(key));
  const conflictHeld = named.released.filter((key) => conflicted.has(key));
  if (revisionHeld.length > 0) await beforeRelease?.(revisionHeld);
  if (store && revisionHeld.length > 0) await store.release(revisionHeld);
  if (conflicts && conflictHeld.length > 0) await conflicts.release(conflictHeld, true);
  for (const key of revisionHeld) deps.tracker.releaseHold(key, stored.get(key)?.revisionId, RETRY_FAILED);
  for (const key of conflictHeld) deps.tracker.clearConflict(key, RETRY_FAILED);
  deps.touch(named.released);
  if (named.released.length > 0)
    deps.log.info(
      { released: named.released },
      'holds released on request (converge reconcile --retry-failed): written again where their plan differs, rebuilt where a revision failed and the plan does not differ',
    );
  return { ...named, rebuild: revisionHeld };
}
