// Opt-in prune, pure: which live deployments converge owns whose manifest is gone become deletes, and the guards that refuse them all.
import type { AppliedRecord, PlanChange } from '../core/model.js';
import { resourceKey } from '../core/model.js';
import { ownershipOf } from '../core/ownership.js';
import { countedByKind, type LiveOrphan } from '../core/kinds/index.js';
import { unseenFilesOf, type UnseenFile } from '../core/declared-files.js';
import { ORPHAN_REASON, RELEASED_REASON } from './notes.js';

/** What the plan knows about pruning: whether it is asked for, and whether it may happen. */
export interface PruneOptions {
  /** --prune: deletes are planned (and applied); without it owned, undeclared deployments show as released. */
  enabled: boolean;
  /** --max-deletes: more planned deletes than this and none is planned. */
  maxDeletes: number;
  /** Whether the service deletes deployments (probed once at the edge): a note when it cannot, and prune stays off. */
  available: true | { note: string };
  /** Resources the manifest directory yields (valid and blocked): none at all and nothing is deleted. */
  declared: number;
}

/** The reason (and the line every format shows after the name) of a planned delete. */
export const DELETE_REASON = 'owned by converge, no longer declared';

const KEPT_REASON =
  'no longer declared, and its manifest last carried converge/prune: "false": converge keeps it and stopped managing it';
/** An owned resource whose manifest is gone, without --prune: what deletes it. */
const PRUNE_HINT_REASON =
  'no longer declared: converge owns it and its manifest is gone; converge apply --prune deletes it';
/** An owned resource whose manifest is gone, --prune on, and a guard refused every delete. */
const REFUSED_REASON =
  'no longer declared: converge owns it and its manifest is gone; not deleted: prune refused (see the note on prune)';
const BEING_DELETED = 'no longer declared, and the service is already deleting it (status AWAITING_DELETE)';

/** "a.yaml:3:1 fails to load", "a.yaml:3:1 and b.yaml:1:1 fail to load": each file of the tree that fails to load. */
function failing(unreadable: readonly string[]): string {
  const names =
    unreadable.length === 1 ? unreadable[0]! : `${unreadable.slice(0, -1).join(', ')} and ${unreadable.at(-1)!}`;
  return `${names} ${unreadable.length === 1 ? 'fails' : 'fail'} to load`;
}

/**
 * The reason of a resource converge applied that no file that loads declares, while a file fails to load: it may be
 * declared there, so it is unknown, never "no longer declared".
 */
function unknownReason(unreadable: readonly string[]): string {
  return `unknown: no file that loads declares it, and ${failing(unreadable)} (${unreadable.length === 1 ? 'it' : 'they'} may declare it); neither deleted nor released until every file loads`;
}

/** Why prune deletes nothing while a file fails to load and `withheld` owned resources would be candidates. */
function unreadableRefusal(unreadable: readonly string[], withheld: number): string {
  const which =
    withheld === 1
      ? 'the owned resource no file that loads declares is unknown'
      : `the ${withheld} owned resources no file that loads declares are unknown`;
  return `prune refused, nothing is deleted: ${failing(unreadable)}; until every file loads, a removed manifest cannot be told from one that cannot be read, so ${which}, not deleted; fix ${unreadable.length === 1 ? 'the file' : 'the files'} and run again`;
}

/** "a.yaml:1:1 declares", "a.yaml:1:1 and b.yaml:1:1 declare". */
function declaring(files: readonly UnseenFile[]): string {
  const at = files.map((f) => `${f.file}:1:1`);
  return `${listed(at)} ${at.length === 1 ? 'declares' : 'declare'}`;
}

/** "a, b and c". */
function listed(items: readonly string[]): string {
  return items.length === 1 ? items[0]! : `${items.slice(0, -1).join(', ')} and ${items.at(-1)!}`;
}

/** "b.yaml:1:1 is a directory and c.yaml:1:1 declares nothing": each path with what converge found there. */
function seenAs(files: readonly UnseenFile[]): string {
  return listed(files.map((f) => `${f.file}:1:1 ${f.what}`));
}

/** What to do about each path: one fix when they share it, else each named. */
function fixes(files: readonly UnseenFile[]): string {
  const distinct = [...new Set(files.map((f) => f.fix))];
  return distinct.length === 1 ? distinct[0]! : files.map((f) => `${f.file}: ${f.fix}`).join('; ');
}

/**
 * The reason of a resource converge applied that no file declares, while the file that declared it (or, when
 * converge has no record of which file did, any such file) is present and declares nothing, or could not be read:
 * unknown, never absent.
 */
function unseenReason(files: readonly UnseenFile[], known: boolean): string {
  const which = known ? 'which declared it before' : 'and converge has no record of which file declared it';
  if (files.every((f) => f.empty)) {
    return `unknown: ${declaring(files)} nothing now, ${which}; a file caught while it is written looks the same, so it is neither deleted nor released while ${files.length === 1 ? 'that file is' : 'those files are'} present and empty: ${fixes(files)}`;
  }
  return `unknown: ${seenAs(files)}, ${which}; what could not be read is unknown, never absent, so it is neither deleted nor released while ${files.length === 1 ? 'that path stays so' : 'those paths stay so'}: ${fixes(files)}`;
}

/** Why prune deletes none of the `withheld` owned resources that files present but empty or unreadable declared before. */
function unseenRefusal(files: readonly UnseenFile[], withheld: number, head: string): string {
  const which =
    withheld === 1
      ? 'the owned resource it declared before is unknown'
      : `the ${withheld} owned resources ${files.length === 1 ? 'it' : 'they'} declared before are unknown`;
  if (files.every((f) => f.empty)) {
    return `${head}: ${declaring(files)} nothing; a file that is present but empty may be one caught while it is written, so ${which}, not deleted; ${fixes(files)}`;
  }
  return `${head}: ${seenAs(files)}; nothing could be read where a manifest was, which is not a removal, so ${which}, not deleted; ${fixes(files)}`;
}

/** How a refusal starts when prune deletes nothing at all, and how the note starts when it deletes the rest. */
const REFUSED_HEAD = 'prune refused, nothing is deleted';
const WITHHELD_HEAD = 'prune deletes only what is known to be removed';

/** Why prune deletes nothing this time although it is on (a guard), or undefined. */
function refusal(options: PruneOptions, candidates: readonly LiveOrphan[]): string | undefined {
  if (candidates.length === 0) return undefined;
  if (options.declared === 0) {
    return `prune refused, nothing is deleted: the manifest directory yields no resources at all, and an empty checkout or a wrong path must not delete a workspace (${countedByKind(candidates, 'owned')} left in place); check the directory`;
  }
  if (candidates.length > options.maxDeletes) {
    return `prune refused, nothing is deleted: it would delete ${candidates.length} resources, more than --max-deletes ${options.maxDeletes}; check that the manifests are complete, then raise --max-deletes (setting max_deletes) to let it`;
  }
  return undefined;
}

/**
 * The changes of live deployments in no manifest: plain orphans (converge never owned them), released ones (owned,
 * kept or prune off), and deletes (owned, --prune on, the service deletes, no guard refused), plus the notes that say
 * why prune deleted nothing (and, when a guard refused it, `refused`: the same words). An orphan converge does not own is
 * never deleted. While a file of the tree fails to load (`unreadable`: each one's "file:line:column"), every one converge
 * applied is blocked as unknown instead (it may be declared in that file), and nothing is deleted. So is one whose file
 * is present and declares nothing or could not be read (`unseen`: such paths; any of them when converge has no record
 * of its file), but only that one: the other deletes go ahead, with a note naming what was withheld.
 */
export function orphanChanges(
  orphans: readonly LiveOrphan[],
  applied: ReadonlyMap<string, AppliedRecord>,
  options: PruneOptions | undefined,
  unreadable: readonly string[] = [],
  unseen: readonly UnseenFile[] = [],
): { changes: PlanChange[]; notes: string[]; refused?: string } {
  const changes: PlanChange[] = [];
  const candidates: Array<{ change: PlanChange; live: LiveOrphan }> = [];
  const prunes = options?.enabled === true && options.available === true;
  let withheld = 0;
  // Unseen paths that declared an owned resource prune would otherwise delete, and how many such resources.
  const unseenBy = new Map<string, UnseenFile>();
  let withheldUnseen = 0;
  for (const live of orphans) {
    const record = applied.get(resourceKey(live.kind, live.name));
    if (!record && !live.reportUnowned) continue;
    const change: PlanChange = {
      kind: live.kind,
      name: live.name,
      action: 'orphan',
      new_revision: false,
      fields: [],
      reason: ORPHAN_REASON,
    };
    changes.push(change);
    if (!record) continue;
    if (unreadable.length > 0) {
      change.action = 'blocked';
      change.reason = unknownReason(unreadable);
      change.unknown = true;
      if (prunes && ownershipOf(record, live.id) === 'owned' && !record.keep && live.status !== 'AWAITING_DELETE')
        withheld++;
      continue;
    }
    const seenBy = unseenFilesOf(record.file, unseen);
    if (seenBy.length > 0) {
      change.action = 'blocked';
      change.reason = unseenReason(seenBy, record.file !== undefined);
      change.unknown = true;
      if (prunes && ownershipOf(record, live.id) === 'owned' && !record.keep && live.status !== 'AWAITING_DELETE') {
        withheldUnseen++;
        for (const entry of seenBy) unseenBy.set(entry.file, entry);
      }
      continue;
    }
    change.released = true;
    change.reason = RELEASED_REASON;
    if (ownershipOf(record, live.id) !== 'owned') continue;
    if (record.keep) change.reason = KEPT_REASON;
    else if (live.status === 'AWAITING_DELETE') change.reason = BEING_DELETED;
    else if (prunes) candidates.push({ change, live });
    else change.reason = PRUNE_HINT_REASON;
  }
  const notes: string[] = [];
  if (options?.enabled && options.available !== true) notes.push(options.available.note);
  const seen = [...unseenBy.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  // An empty or unreadable path withholds only what it declared: the other deletes go ahead unless another guard refuses them.
  const refused = !prunes
    ? undefined
    : withheld > 0
      ? unreadableRefusal(unreadable, withheld)
      : withheldUnseen > 0 && candidates.length === 0
        ? unseenRefusal(seen, withheldUnseen, REFUSED_HEAD)
        : refusal(
            options,
            candidates.map((c) => c.live),
          );
  if (refused) notes.push(refused);
  else if (prunes && withheldUnseen > 0) notes.push(unseenRefusal(seen, withheldUnseen, WITHHELD_HEAD));
  for (const { change, live } of candidates) {
    if (refused) {
      change.reason = REFUSED_REASON;
      continue;
    }
    change.action = 'delete';
    change.reason = DELETE_REASON;
    change.id = live.id;
    delete change.released;
  }
  return refused ? { changes, notes, refused } : { changes, notes };
}
