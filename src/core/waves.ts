// Rollout waves (pure): which wave each write of a change goes in, the plan's summary of them, and the hold of a wave that waits behind a failed one (docs/rollouts.md).
import { heldBack, type Outcome } from './decide.js';
import type { ResourceHold } from './holds.js';
import { resourceKey, type DesiredResource, type PlanChange, type PlanWave } from './model.js';
import { groupBy } from './group-by.js';

/** The wave of a declared resource: its converge/wave annotation, 0 without one. */
export function waveOf(resource: Pick<DesiredResource, 'wave'> | undefined): number {
  return resource?.wave ?? 0;
}

/** The actions a wave orders: the writes to declared resources (a delete has no manifest, and goes after the last wave). */
const WAVED_ACTIONS: ReadonlySet<PlanChange['action']> = new Set(['create', 'update', 'adopt']);

/** Whether a change is a write the waves order: a create, update or adopt that is not suspended. */
export function isWavedWrite(change: Pick<PlanChange, 'action' | 'suspended'>): boolean {
  return WAVED_ACTIONS.has(change.action) && change.suspended !== true;
}

/**
 * The waves of a plan's writes, ascending; undefined when its writes are in one wave or none (the plan then reads
 * exactly as a plan without waves).
 */
export function planWaves(
  changes: readonly PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
): PlanWave[] | undefined {
  const byWave = new Map<number, PlanWave>();
  for (const change of changes) {
    if (!isWavedWrite(change)) continue;
    const wave = waveOf(resources.get(resourceKey(change.kind, change.name)));
    const entry = byWave.get(wave) ?? { wave, create: 0, update: 0, adopt: 0 };
    entry[change.action as 'create' | 'update' | 'adopt'] += 1;
    byWave.set(wave, entry);
  }
  if (byWave.size < 2) return undefined;
  return [...byWave.values()].sort((a, b) => a.wave - b.wave);
}

/**
 * A plan's changes marked with their wave when its writes span several waves: each change of a declared resource
 * (`declared`, by key; `resources` may hold only those with a wave, the others are in wave 0) gets `wave`, noops too,
 * so a reader sees every resource's wave; deletes and orphans get none. Returns the waves (undefined: one wave).
 */
export function markWaves(
  changes: PlanChange[],
  resources: ReadonlyMap<string, DesiredResource>,
  declared: ReadonlySet<string> = new Set(resources.keys()),
): PlanWave[] | undefined {
  const waves = planWaves(changes, resources);
  if (!waves) return undefined;
  for (const change of changes) {
    const key = resourceKey(change.kind, change.name);
    if (declared.has(key) && change.action !== 'delete' && change.action !== 'orphan')
      change.wave = waveOf(resources.get(key));
  }
  return waves;
}

/** "wave 1: 3 to update, after wave 0 is healthy": one wave of a plan in words. */
export function waveLine(wave: PlanWave, previous: PlanWave | undefined): string {
  const parts = (['create', 'update', 'adopt'] as const).filter((a) => wave[a] > 0).map((a) => `${wave[a]} to ${a}`);
  return `wave ${wave.wave}: ${parts.join(', ')}${previous ? `, after wave ${previous.wave} is healthy` : ''}`;
}

/**
 * Groups items by wave, ascending; `waveOfItem` undefined puts an item after the last wave (a delete). Keeps each
 * group's order as given.
 */
export function groupByWave<T>(
  items: readonly T[],
  waveOfItem: (item: T) => number | undefined,
): Array<{ wave: number | 'prune'; items: T[] }> {
  const waves = groupBy(items, waveOfItem);
  const last = waves.get(undefined) ?? [];
  waves.delete(undefined);
  const groups: Array<{ wave: number | 'prune'; items: T[] }> = [...(waves as Map<number, T[]>).entries()]
    .sort(([a], [b]) => a - b)
    .map(([wave, group]) => ({ wave, items: group }));
  if (last.length > 0) groups.push({ wave: 'prune', items: last });
  return groups;
}

/** What stopped a rollout at a wave: the wave and the resource whose rollout failed, and how. */
export interface WaveFailure {
  wave: number;
  key: string;
  /** One line: its revision and status, or the missed progress deadline. */
  said: string;
}

/** The message of a resource of a later wave held behind a failed one: what happened, and what to do. */
export function waveHeldMessage(wave: number | 'prune', failure: WaveFailure): string {
  const name = failure.key.slice(failure.key.indexOf('/') + 1);
  const what = wave === 'prune' ? 'the deletes after the last wave' : `wave ${wave}`;
  return `${what} waits behind wave ${failure.wave}, where ${failure.key} failed (${failure.said}); fix its manifest and commit (a new change starts from the first wave), or after a fix outside git run "converge reconcile --retry-failed ${name}" (or "converge apply --wait" again)`;
}

/** The message of a resource of a later wave waiting for wave `going`, still being written or rolled out. */
function waitingForWave(wave: number | 'prune', going: number): string {
  const what = wave === 'prune' ? 'the deletes after the last wave' : `wave ${wave}`;
  return `${what} waits until wave ${going} is written and healthy (every new revision DEPLOYED); it is written at the reconcile after that`;
}

/** The hold of a resource waiting behind a failed wave (reason WaveHeld), about the desired state `desired`. */
export function waveHeldHold(desired: string, wave: number | 'prune', failure: WaveFailure, now: Date): ResourceHold {
  return { reason: 'WaveHeld', desired, since: now.toISOString(), message: waveHeldMessage(wave, failure) };
}

/**
 * Why the waves keep a write back: WaveHeld, behind an earlier wave of the change that failed (a hold, notified once);
 * WaveWaiting, for an earlier wave still going, a place under wave_max_in_flight, or the deletes of a higher wave.
 */
export interface WaveGate {
  reason: 'WaveHeld' | 'WaveWaiting';
  message: string;
}

/** A decided outcome the waves keep back: nothing written, sync reason WaveHeld or WaveWaiting with its message. */
export function waveGatedOutcome(outcome: Outcome, gate: WaveGate): Outcome {
  return heldBack(outcome, gate.reason, gate.message);
}

/** Sync reasons of a resource whose write failed for good or whose rollout failed: its wave failed. */
const FAILED_REASONS: ReadonlySet<string> = new Set(['RevisionFailed', 'WriteRefused', 'NameTaken', 'JobFailed']);

/** Where one wave stands in a reconcile: `done` (every resource synced and healthy), `going` (a write or rollout under way), `failed`. */
function waveState(
  outcomes: readonly Outcome[],
): { state: 'done' | 'going' } | { state: 'failed'; key: string; said: string } {
  const failed = outcomes.find((o) => o.health.status === 'degraded' || FAILED_REASONS.has(o.sync.reason));
  if (failed)
    return {
      state: 'failed',
      key: failed.key,
      said: failed.health.status === 'degraded' ? failed.health.message : failed.sync.message,
    };
  const going = outcomes.some(
    (o) => o.write !== null || o.sync.reason === 'Applying' || o.health.status === 'progressing',
  );
  return { state: going ? 'going' : 'done' };
}

/** wave_max_in_flight: a count of writes, or a percentage of the wave's. */
export type WaveLimit = { count: number } | { percent: number };

/** How many writes of a wave of `size` go at once under wave_max_in_flight (a percentage rounds down, at least one). */
export function inFlightOf(limit: WaveLimit | undefined, size: number): number {
  if (!limit) return size;
  if ('count' in limit) return Math.min(size, limit.count);
  return Math.max(1, Math.floor((size * limit.percent) / 100));
}

/** What the daemon's gate reads besides the outcomes. */
export interface GateOptions {
  /** wave_max_in_flight: at most this many writes of the current wave in flight (undefined: the whole wave). */
  limit?: WaveLimit | undefined;
  /** Resources whose decided write already has a job waiting, active or just finished: in flight, not new. */
  inFlight?: ReadonlySet<string>;
  /** The wave each resource to delete was last declared in (its manifest is gone; 0 when not known). */
  deleteWaves?: ReadonlyMap<string, number>;
}

/** The current wave's new writes past wave_max_in_flight: each waits for a place, the others in flight. */
function overLimit(
  wave: number,
  outcomes: readonly Outcome[],
  options: GateOptions,
  gated: Map<string, WaveGate>,
): void {
  if (!options.limit) return;
  const inFlight = options.inFlight ?? new Set<string>();
  const allowed = inFlightOf(options.limit, outcomes.length);
  const busy = outcomes.filter(
    (o) => inFlight.has(o.key) || o.sync.reason === 'Applying' || o.health.status === 'progressing',
  ).length;
  const fresh = outcomes.filter((o) => o.write && o.write.op !== 'delete' && !inFlight.has(o.key));
  const message = `wave ${wave} waits for a place: wave_max_in_flight lets ${allowed} of its writes build at once; it is written when one of them is healthy`;
  for (const o of fresh.slice(Math.max(0, allowed - busy))) gated.set(o.key, { reason: 'WaveWaiting', message });
}

/** The deletes (prune) in descending wave order: a delete of wave N waits while one of a higher wave is not done. */
function deletesInOrder(
  outcomes: ReadonlyMap<string, Outcome>,
  options: GateOptions,
  gated: Map<string, WaveGate>,
): void {
  const deletes = [...outcomes.values()].filter((o) => o.action === 'delete');
  const waveOfDelete = (o: Outcome): number => options.deleteWaves?.get(o.key) ?? 0;
  const pending = deletes.filter(
    (o) => o.write !== null || o.sync.reason === 'Applying' || options.inFlight?.has(o.key) === true,
  );
  // The waves of the pending deletes, each once: a prune of 10,000 resources of a few waves compares a few each.
  const pendingWaves = [...new Set(pending.map(waveOfDelete))];
  for (const o of deletes) {
    if (o.write?.op !== 'delete') continue;
    const higher = pendingWaves.filter((wave) => wave > waveOfDelete(o));
    if (higher.length === 0) continue;
    const message = `the delete of wave ${waveOfDelete(o)} waits until the deletes of wave ${Math.min(...higher)} are done (deletes go in descending wave order); it is sent at the reconcile after that`;
    gated.set(o.key, { reason: 'WaveWaiting', message });
  }
}

/**
 * The daemon's gate of waves (docs/rollouts.md): of one reconcile's outcomes (by key) and the declared resources, the
 * writes that must wait, each with its reason (WaveHeld behind a failure, WaveWaiting otherwise) and message. Waves are taken in ascending order; the first wave not done
 * (a write decided or queued, a rollout progressing) lets no write of a later wave through, and at most
 * wave_max_in_flight of its own in flight; a failed one (a degraded rollout, a write refused or failed) holds them
 * naming it; the deletes wait for every wave, and go in descending wave order. Nothing is gated when the declared
 * resources are all in one wave and the deletes too. Pure: it reads only what the reconcile decided, so a restarted or
 * standby daemon, reading the same service and Redis, gates the same way.
 */
export function gateWaves(
  outcomes: ReadonlyMap<string, Outcome>,
  resources: ReadonlyMap<string, DesiredResource>,
  options: GateOptions = {},
): Map<string, WaveGate> {
  const waved = [...outcomes.values()].filter((outcome) => {
    const resource = resources.get(outcome.key);
    return resource !== undefined && outcome.action !== 'orphan' && outcome.sync.status !== 'suspended';
  });
  const byWave = groupBy(waved, (outcome) => waveOf(resources.get(outcome.key)));
  const gated = new Map<string, WaveGate>();
  if (byWave.size < 2) {
    deletesInOrder(outcomes, options, gated);
    return gated;
  }
  const waves = [...byWave.keys()].sort((a, b) => a - b);
  let blocker: { reason: WaveGate['reason']; message: (what: number | 'prune') => string } | undefined;
  for (const wave of waves) {
    if (blocker) {
      const gate = { reason: blocker.reason, message: blocker.message(wave) };
      for (const o of byWave.get(wave)!) if (o.write && o.write.op !== 'delete') gated.set(o.key, gate);
      continue;
    }
    const state = waveState(byWave.get(wave)!);
    if (state.state !== 'done') overLimit(wave, byWave.get(wave)!, options, gated);
    if (state.state === 'failed') {
      const failure = { wave, key: state.key, said: state.said };
      blocker = { reason: 'WaveHeld', message: (what) => waveHeldMessage(what, failure) };
    } else if (state.state === 'going')
      blocker = { reason: 'WaveWaiting', message: (what) => waitingForWave(what, wave) };
  }
  if (!blocker) deletesInOrder(outcomes, options, gated);
  else {
    const gate = { reason: blocker.reason, message: blocker.message('prune') };
    for (const o of outcomes.values()) if (o.write?.op === 'delete') gated.set(o.key, gate);
  }
  return gated;
}
