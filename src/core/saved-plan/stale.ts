// Whether a saved plan still holds: what changed since it was made, from the manifests, the secrets and the live state read again. Pure.
import { canonicalJson } from '../hash.js';
import { versionLabel, type ManifestVersion } from '../manifest-version.js';
import { resourceKey, type PlanChange } from '../model.js';
import type { PlannedWrite, SavedPlan, SeenLive } from './schema.js';

/** What `apply --plan` reads again of one resource the plan writes: the same things the plan recorded of it. */
export interface Observed {
  secrets: Readonly<Record<string, string>>;
  desired?: string | undefined;
  live: SeenLive | null;
  applied_at: string | null;
}

/** Everything read again: the manifests' version, the fresh plan's changes and decided writes, and each planned resource. */
export interface FreshState {
  contentId: string;
  version: ManifestVersion;
  changes: readonly PlanChange[];
  writes: readonly PlannedWrite[];
  /** By resourceKey, for every resource the saved plan writes. */
  observed: ReadonlyMap<string, Observed>;
}

export interface Staleness {
  /** What changed since the plan was made, one phrase each (empty: the plan holds, its writes are the fresh plan's). */
  changed: string[];
}

function keyOf(item: { kind: PlanChange['kind']; name: string }): string {
  return resourceKey(item.kind, item.name);
}

/** The secrets of a planned resource that changed: rotated, no longer declared (or not resolvable now), new. */
function secretChanges(
  then: Readonly<Record<string, string>>,
  now: Readonly<Record<string, string>>,
): string | undefined {
  const rotated = Object.keys(then).filter((name) => now[name] !== undefined && now[name] !== then[name]);
  if (rotated.length > 0) return `secret ${rotated.join(', ')} changed (rotated)`;
  const gone = Object.keys(then).filter((name) => now[name] === undefined);
  if (gone.length > 0) return `secret ${gone.join(', ')} is no longer declared or cannot be resolved now`;
  const added = Object.keys(now).filter((name) => then[name] === undefined);
  return added.length > 0 ? `secret ${added.join(', ')} is declared now` : undefined;
}

/** How the live resource moved since the plan read it: created, deleted, replaced, written, a new revision. */
function liveChange(then: SeenLive | null, now: SeenLive | null): string | undefined {
  if (!then && !now) return undefined;
  if (!then) return `it was created live since (id ${now!.id})`;
  if (!now) return `it is gone live (id ${then.id} was deleted since)`;
  if (then.id !== now.id) return `it was replaced live (id ${then.id} then, ${now.id} now)`;
  if (then.latest_revision_id !== now.latest_revision_id)
    return `a new revision started live (latest revision ${then.latest_revision_id ?? 'none'} then, ${now.latest_revision_id ?? 'none'} now)`;
  if (then.updated_at !== now.updated_at)
    return `it changed live (updated_at ${then.updated_at ?? 'none'} then, ${now.updated_at ?? 'none'} now)`;
  return undefined;
}

/** How the decided write differs now, when the resource's state alone did not say why. */
function writeChange(
  saved: PlannedWrite,
  fresh: PlannedWrite | undefined,
  change: PlanChange | undefined,
): string | undefined {
  if (!fresh) {
    if (!change) return 'it is no longer planned';
    return change.action === 'noop'
      ? 'it needs no write now'
      : `it would be ${change.action} now, not ${saved.action}, and is not written`;
  }
  if (fresh.action !== saved.action || fresh.op !== saved.op)
    return `it would be ${fresh.action} now, not ${saved.action}`;
  if (canonicalJson(fresh.fields) !== canonicalJson(saved.fields))
    return `its write would send ${fresh.fields.join(', ') || 'nothing'} now, not ${saved.fields.join(', ') || 'nothing'}`;
  if (fresh.deployment_id !== saved.deployment_id)
    return `it would be written to ${fresh.deployment_id ?? 'a new deployment'} now, not ${saved.deployment_id ?? 'a new deployment'}`;
  return undefined;
}

/** The fields whose values differ between the change planned and the change now (live values read again). */
function changedFields(then: PlanChange | undefined, now: PlanChange | undefined): string | undefined {
  if (!then || !now || canonicalJson(then) === canonicalJson(now)) return undefined;
  const thenByPath = new Map(then.fields.map((f) => [f.path, canonicalJson(f)]));
  const nowByPath = new Map(now.fields.map((f) => [f.path, canonicalJson(f)]));
  const paths = [...new Set([...thenByPath.keys(), ...nowByPath.keys()])].filter(
    (path) => thenByPath.get(path) !== nowByPath.get(path),
  );
  return paths.length > 0 ? `its planned change differs now (${paths.join(', ')})` : 'its planned change differs now';
}

/** The first thing that changed for one planned write, or undefined: it holds. */
function writeStaleness(
  saved: PlannedWrite,
  fresh: FreshState,
  savedChanges: ReadonlyMap<string, PlanChange>,
  freshChanges: ReadonlyMap<string, PlanChange>,
): string | undefined {
  const key = keyOf(saved);
  const observed = fresh.observed.get(key);
  const freshWrite = fresh.writes.find((w) => keyOf(w) === key);
  const why =
    (observed ? secretChanges(saved.secrets, observed.secrets) : undefined) ??
    (observed && saved.desired !== undefined && observed.desired !== saved.desired
      ? 'its manifest changed'
      : undefined) ??
    (observed ? liveChange(saved.seen.live, observed.live) : undefined) ??
    (observed && observed.applied_at !== saved.seen.applied_at
      ? `converge wrote it since (at ${observed.applied_at ?? 'an unknown time'})`
      : undefined) ??
    writeChange(saved, freshWrite, freshChanges.get(key)) ??
    changedFields(savedChanges.get(key), freshChanges.get(key));
  return why === undefined ? undefined : `${key}: ${why}`;
}

/** A write's action as done to the resource. */
const DONE: Record<PlannedWrite['action'], string> = {
  create: 'created',
  update: 'updated',
  adopt: 'adopted',
  delete: 'deleted',
};

/**
 * " (23acd65 then, uncommitted changes on top of 23acd65 now)" when either is a commit; one label when both read the
 * same (edits not committed, edited again since); nothing outside git (the content ids say no more than "changed").
 */
function versionsThenAndNow(then: ManifestVersion, now: ManifestVersion): string {
  if (then.kind !== 'git' && now.kind !== 'git') return '';
  const [before, after] = [versionLabel(then), versionLabel(now)];
  return before === after ? ` (${after}, edited again since)` : ` (${before} then, ${after} now)`;
}

/**
 * Compares a saved plan with what was read again: each difference that makes it stale. The fresh writes must be the
 * saved ones exactly: one the plan does not hold (a resource changed by hand since, or a write an edit left out) is a
 * difference too, so a plan is applied whole or not at all.
 */
export function stalenessOf(saved: SavedPlan, fresh: FreshState): Staleness {
  const changed: string[] = [];
  if (saved.manifests.content_id !== fresh.contentId) {
    const then = saved.manifests.version;
    changed.push(`the manifests, variables files or overlays changed${versionsThenAndNow(then, fresh.version)}`);
  }
  const savedChanges = new Map(saved.plan.changes.map((c) => [keyOf(c), c]));
  const freshChanges = new Map(fresh.changes.map((c) => [keyOf(c), c]));
  for (const write of saved.writes) {
    const why = writeStaleness(write, fresh, savedChanges, freshChanges);
    if (why) changed.push(why);
  }
  const planned = new Set(saved.writes.map(keyOf));
  for (const write of fresh.writes) {
    if (!planned.has(keyOf(write)))
      changed.push(`${keyOf(write)}: it would be ${DONE[write.action]} now, and the plan does not hold that write`);
  }
  return { changed };
}

/** At most this many changes are named in the stale line; the rest are counted. */
const NAMED = 3;

/** "the plan is stale: since it was made, WHAT changed; nothing was written; run plan again" (one line). */
export function staleLine(changed: readonly string[]): string {
  const named = changed.slice(0, NAMED).join('; ');
  const more = changed.length > NAMED ? `; and ${changed.length - NAMED} more` : '';
  return `the plan is stale: since it was made, ${named}${more}; nothing was written; run plan again`;
}
