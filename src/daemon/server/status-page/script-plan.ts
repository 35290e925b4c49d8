// The status page's script, the plan part (browser JavaScript as text): holds the plan by run, and merges a `planDelta` (docs/contracts.md §5, `plan=delta`) into it.

import { planRuns } from '../plan-sequence.js';

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
    for (const key of value.removed) runs.delete(key);
    for (const run of value.changed) runs.set(run.key, run);
    const list = chained(runs);
    if (!list) return null;
    plan[name] = list;
    held[name] = runs;
  }
  planRunsHeld = held;
  return plan;
}
`;
