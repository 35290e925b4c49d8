// The decision (src/core/decide.ts) about every planned resource, for plan and apply, and the health notes a plan carries.
import { decide, type DecisionMode, type Outcome } from '../core/decide.js';
import { liveOf, type RevisionReading } from '../core/kinds/index.js';
import { resourceKey, type DesiredResource, type DriftPolicy, type HealthNote, type LiveDeployment, type Plan } from '../core/model.js';

export interface OutcomeInputs {
  mode: Extract<DecisionMode, 'plan' | 'apply'>;
  resources: ReadonlyMap<string, DesiredResource>;
  live: readonly LiveDeployment[];
  /** The latest revisions read (src/observe/revisions.ts), by resourceKey. */
  revisions: ReadonlyMap<string, RevisionReading>;
  driftPolicy?: DriftPolicy;
  /** For the progress deadline of a revision read (its created_at). */
  now: number;
  progressDeadlineMs?: number;
}

/** One outcome per planned change (orphans included: their outcome says why they are not written), by resourceKey. */
export function planOutcomes(plan: Plan, inputs: OutcomeInputs): Map<string, Outcome> {
  const liveByName = new Map(inputs.live.map((d) => [d.name, d]));
  const out = new Map<string, Outcome>();
  for (const change of plan.changes) {
    const key = resourceKey(change.kind, change.name);
    const resource = inputs.resources.get(key);
    out.set(
      key,
      decide({
        change,
        ...(resource ? { desired: { suspend: resource.suspend, driftPolicy: resource.driftPolicy } } : {}),
        live: change.action === 'orphan' ? undefined : liveOf(change.kind, change.name, liveByName),
        revision: inputs.revisions.get(key),
        settings: { mode: inputs.mode, driftPolicy: inputs.driftPolicy ?? 'heal' },
        clock: { now: inputs.now, deadlineMs: inputs.progressDeadlineMs ?? Number.POSITIVE_INFINITY },
      }),
    );
  }
  return out;
}

/** The rollouts a plan notes: every planned resource whose health is progressing or degraded, in plan order. */
export function healthNotes(outcomes: ReadonlyMap<string, Outcome>): HealthNote[] {
  const notes: HealthNote[] = [];
  for (const o of outcomes.values()) {
    if (o.action === 'orphan' || (o.health.status !== 'progressing' && o.health.status !== 'degraded')) continue;
    notes.push({ kind: o.kind, name: o.name, ...o.health });
  }
  return notes;
}
