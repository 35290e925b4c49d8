// The status page's script, the lists by run (browser JavaScript as text): holds the plan and the lists of keys by run, and merges a `planDelta` and a `keysDelta` (docs/contracts.md §5, `plan=delta`, `keys=delta`) into them.

import { KEY_LISTS, planRuns } from '../plan-sequence.js';

/** Browser JavaScript; joined with the other parts into one IIFE by page-script.ts. */
export const SCRIPT_PLAN = String.raw`
/** The plan's lists the daemon sends by run, and the key of an entry of each (as src/daemon/server/plan-sequence.ts). */
const PLAN_LISTS = {
  changes: (c) => c.kind + '/' + c.name,
  health: (h) => h.kind + '/' + h.name,
  diagnostics: (d) => String(d.file),
};
/** The plan's lists held by run: per list, a Map of key to { key, after, entries }. */
let planRunsHeld = {};
/** The document's top-level lists of keys the daemon sends by run (src/daemon/server/plan-sequence.ts KEY_LISTS): a run is one key. */
const KEY_LISTS = ${JSON.stringify(KEY_LISTS)};
/** Those lists held by run, as planRunsHeld. */
let keyRunsHeld = {};

/** A list cut into runs (src/daemon/server/plan-sequence.ts planRuns, the daemon's own function: one rule on both sides). */
const planRuns = ${planRuns.toString()};

/** Holds a plan that came whole, by run (null or not an object: nothing held). */
function holdPlan(plan) {
  planRunsHeld = {};
  if (!plan || typeof plan !== 'object') return;
  for (const name of Object.keys(PLAN_LISTS)) {
    if (Array.isArray(plan[name])) planRunsHeld[name] = new Map(planRuns(plan[name], PLAN_LISTS[name]).map((run) => [run.key, run]));
  }
}

/** The entries of held runs in order, following each run's after key from the first; null when they do not chain. */
function chained(runs) {
  const next = new Map();
  for (const run of runs.values()) next.set(run.after, run);
  const out = [];
  let count = 0;
  for (let run = next.get(null); run && count <= runs.size; run = next.get(run.key)) {
    count += 1;
    for (const entry of run.entries) out.push(entry);
  }
  return count === runs.size ? out : null;
}

/** A list's held runs less those a delta removed, with those it changed, in order; null when they do not chain. */
function mergedRuns(runs, delta) {
  for (const key of delta.removed) runs.delete(key);
  for (const run of delta.changed) runs.set(run.key, run);
  return chained(runs);
}

/**
 * The plan a planDelta makes of the one held: its fields in its order, each list's held runs less those removed, with
 * those changed. Null when the runs do not chain (what the page holds is not what the token stood for).
 */
function mergedPlan(delta) {
  const plan = {};
  const held = {};
  for (const [name, value] of Object.entries(delta)) {
    if (!PLAN_LISTS[name]) {
      plan[name] = value;
      continue;
    }
    const runs = planRunsHeld[name] || new Map();
    const list = mergedRuns(runs, value);
    if (!list) return null;
    plan[name] = list;
    held[name] = runs;
  }
  planRunsHeld = held;
  return plan;
}

/** Holds, by run, the lists of keys that came whole in an answer (a value not a list: nothing held of it). */
function holdKeys(doc) {
  for (const name of KEY_LISTS) {
    if (!(name in doc)) continue;
    if (Array.isArray(doc[name])) keyRunsHeld[name] = new Map(planRuns(doc[name], String).map((run) => [run.key, run]));
    else delete keyRunsHeld[name];
  }
}

/** The lists a keysDelta makes of those held, by name; null when the runs of one do not chain. */
function mergedKeys(delta) {
  const lists = {};
  for (const [name, value] of Object.entries(delta)) {
    const runs = keyRunsHeld[name] || new Map();
    const list = mergedRuns(runs, value);
    if (!list) return null;
    keyRunsHeld[name] = runs;
    lists[name] = list;
  }
  return lists;
}
`;
