// The plan of /status by entry (docs/contracts.md §5, `plan=delta`): its changes and health notes by resource, its diagnostics by file, each run of entries with a change sequence, so that a delta carries only the runs changed since a token.
import { KeyedSequence, type Clock } from './keyed-sequence.js';

type Entry = Record<string, unknown>;

/** The plan's lists a delta carries by run, and the key of an entry of each (the status page keys them alike: script-plan.ts). */
export const PLAN_LISTS: Readonly<Record<string, (entry: Entry) => string>> = {
  changes: (c) => `${String(c.kind)}/${String(c.name)}`,
  health: (h) => `${String(h.kind)}/${String(h.name)}`,
  diagnostics: (d) => String(d.file),
};

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
  return Object.keys(PLAN_LISTS).every((name) => !(name in plan) || Array.isArray((plan as Record<string, unknown>)[name]));
}

function runsOf(plan: Record<string, unknown>, name: string): PlanRun[] {
  const list = plan[name];
  return Array.isArray(list) ? planRuns(list, PLAN_LISTS[name]!) : [];
}

/**
 * A change sequence per run of the plan's lists. A run's text holds the key of the run before it, so a run whose
 * place moved counts as changed: a client that follows the `after` keys rebuilds each list in the plan's order.
 */
export class PlanSequence {
  private readonly lists: Map<string, KeyedSequence>;
  /** The number at which the plan last became one that can be sent by run, or stopped being one. */
  private shapeSeq = 0;
  private wasByRun = false;

  constructor(maxTombstones = Infinity) {
    this.lists = new Map(Object.keys(PLAN_LISTS).map((name) => [name, new KeyedSequence(maxTombstones)]));
  }

  /** Takes the current plan in (call it when the plan's text changed: runs of an unchanged plan are unchanged). */
  observe(plan: unknown, clock: Clock): void {
    const ok = byRun(plan);
    if (ok !== this.wasByRun) {
      this.shapeSeq = clock();
      this.wasByRun = ok;
    }
    for (const [name, sequence] of this.lists) {
      const runs = ok ? runsOf(plan, name) : [];
      sequence.observe(runs.map((run) => [run.key, JSON.stringify([run.after, run.entries])] as const), clock);
    }
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
      if (!sequence) {
        delta[name] = value;
        continue;
      }
      const changed = runsOf(plan, name).filter((run) => (sequence.seqOf(run.key) ?? Infinity) > n);
      delta[name] = { changed, removed: sequence.removedSince(n) } satisfies ListDelta;
    }
    return delta;
  }
}
