// Lists of /status by run (docs/contracts.md §5, `plan=delta` and `keys=delta`): the plan's changes and health notes by resource, its diagnostics by file, and the document's lists of resource keys by key, each run of entries with a change sequence, so that a delta carries only the runs changed since a token.
import { KeyedSequence, type Clock } from './keyed-sequence.js';

type Entry = Record<string, unknown>;

/** The plan's lists a delta carries by run, and the key of an entry of each (the status page keys them alike: script-plan.ts). */
export const PLAN_LISTS: Readonly<Record<string, (entry: Entry) => string>> = {
  changes: (c) => `${String(c.kind)}/${String(c.name)}`,
  health: (h) => `${String(h.kind)}/${String(h.name)}`,
  diagnostics: (d) => String(d.file),
};

/** The document's top-level lists of resource keys that a delta carries by run (`keys=delta`): each run is one key. */
export const KEY_LISTS = ['secretsUnknown', 'held', 'conflicts', 'deletesPending', 'orphans'] as const;

/** The key of an entry of a list of keys: the key itself. */
export const keyOfKey = (entry: unknown): string => String(entry);

/** Consecutive entries of a list with the same key, and the key of the run before it (null: the first). */
export interface PlanRun {
  key: string;
  after: string | null;
  entries: unknown[];
}

/** What a delta carries of one list: the runs changed (or moved) since the token, and the keys of those gone. */
export interface ListDelta {
  changed: PlanRun[];
  removed: string[];
}

/**
 * A list cut into runs of consecutive entries of the same key. A run's key is the entries' key; a later run of a key
 * already used is `key#2`, `key#3`… (the first such not yet used), so that every run's key is unique.
 */
export function planRuns(list: readonly unknown[], keyOf: (entry: Entry) => string): PlanRun[] {
  const runs: PlanRun[] = [];
  const used = new Set<string>();
  let last: string | undefined;
  for (const entry of list) {
    const base = keyOf(entry as Entry);
    const previous = runs[runs.length - 1];
    if (previous && base === last) {
      previous.entries.push(entry);
      continue;
    }
    last = base;
    let key = base;
    for (let n = 2; used.has(key); n++) key = `${base}#${n}`;
    used.add(key);
    runs.push({ key, after: previous?.key ?? null, entries: [entry] });
  }
  return runs;
}

/** Whether a plan can be sent by run: an object whose lists (those present) are arrays. */
function byRun(plan: unknown): plan is Record<string, unknown> {
  if (typeof plan !== 'object' || plan === null || Array.isArray(plan)) return false;
  return Object.keys(PLAN_LISTS).every(
    (name) => !(name in plan) || Array.isArray((plan as Record<string, unknown>)[name]),
  );
}

function listOf(plan: Record<string, unknown>, name: string): unknown[] {
  const list = plan[name];
  return Array.isArray(list) ? list : [];
}

/**
 * A change sequence per run of one list. A run's text holds the key of the run before it, so a run whose place moved
 * counts as changed: a client that follows the `after` keys rebuilds the list in its order.
 */
export class RunSequence {
  private readonly runs: KeyedSequence;
  /** The number at which the value last became a list, or stopped being one. */
  private shapeSeq = 0;
  private wasList = false;

  constructor(
    private readonly keyOf: (entry: Entry) => string,
    maxTombstones = Infinity,
  ) {
    this.runs = new KeyedSequence(maxTombstones);
  }

  /** Takes the current value in (call it when its text changed: runs of an unchanged list are unchanged). */
  observe(value: unknown, clock: Clock): void {
    const ok = Array.isArray(value);
    if (ok !== this.wasList) {
      this.shapeSeq = clock();
      this.wasList = ok;
    }
    const runs = ok ? planRuns(value, this.keyOf) : [];
    this.runs.observe(
      runs.map((run) => [run.key, JSON.stringify([run.after, run.entries])] as const),
      clock,
    );
  }

  /** The oldest number a delta of the list can start from. */
  get floor(): number {
    return this.runs.floor;
  }

  /**
   * The list as the runs changed since number `n` and the keys removed since; undefined when it is not a list now or
   * was not at `n` (then it is sent whole). The sequence must have observed `value`.
   */
  deltaSince(n: number, value: unknown): ListDelta | undefined {
    if (!Array.isArray(value) || this.shapeSeq > n) return undefined;
    const changed = planRuns(value, this.keyOf).filter((run) => (this.runs.seqOf(run.key) ?? Infinity) > n);
    return { changed, removed: this.runs.removedSince(n) };
  }
}

/** A change sequence per run of the plan's lists (a list absent from the plan is an empty one). */
export class PlanSequence {
  private readonly lists: Map<string, RunSequence>;
  /** The number at which the plan last became one that can be sent by run, or stopped being one. */
  private shapeSeq = 0;
  private wasByRun = false;

  constructor(maxTombstones = Infinity) {
    this.lists = new Map(
      Object.entries(PLAN_LISTS).map(([name, keyOf]) => [name, new RunSequence(keyOf, maxTombstones)]),
    );
  }

  /** Takes the current plan in (call it when the plan's text changed: runs of an unchanged plan are unchanged). */
  observe(plan: unknown, clock: Clock): void {
    const ok = byRun(plan);
    if (ok !== this.wasByRun) {
      this.shapeSeq = clock();
      this.wasByRun = ok;
    }
    for (const [name, sequence] of this.lists) sequence.observe(ok ? listOf(plan, name) : [], clock);
  }

  /** The oldest number a delta of the plan can start from. */
  get floor(): number {
    return Math.max(...[...this.lists.values()].map((sequence) => sequence.floor));
  }

  /**
   * The plan as a delta since number `n`: its fields in its order, each list as the runs changed since and the keys
   * removed since, every other field whole. Undefined when the plan cannot be sent by run now or was not at `n` (then
   * it is sent whole). The sequence must have observed `plan`.
   */
  deltaSince(n: number, plan: unknown): Record<string, unknown> | undefined {
    if (!byRun(plan) || this.shapeSeq > n) return undefined;
    const delta: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(plan)) {
      const sequence = this.lists.get(name);
      const list = sequence?.deltaSince(n, listOf(plan, name));
      if (sequence && !list) return undefined;
      delta[name] = sequence ? list : value;
    }
    return delta;
  }
}
