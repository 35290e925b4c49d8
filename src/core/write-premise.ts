// The decided write a job carries, and the one check its write step makes: does the live state it reads still fit that write (docs/decision.md, "The write step").
import type { DecidedWrite } from './decide.js';
import { JobInputError } from './errors.js';
import type { JobWrite, SyncResult } from './kinds/ports.js';
import type { PlanChange } from './model.js';

/** The job's copy of a decided create, update or rebuild: its operation and the paths of the fields the plan's change found differing. */
export function jobWriteOf(write: Pick<DecidedWrite, 'op'>, change: Pick<PlanChange, 'fields'>): JobWrite {
  if (write.op === 'delete') throw new TypeError('a delete job carries its deletion, not a decided write');
  return { op: write.op, fields: change.fields.map((f) => f.path) };
}

/**
 * The fields of `fresh` (the change against the live state the step just read) that the decided write did not find
 * differing: live state changed since the decision. A rebuild was decided on a change with none.
 */
export function undecidedFields(write: JobWrite, fresh: Pick<PlanChange, 'fields'>): string[] {
  const decided = new Set(write.fields);
  return fresh.fields.map((f) => f.path).filter((path) => !decided.has(path));
}

/** The result of a step that sent nothing because live state no longer fits the decided write: the next reconcile decides again. */
export function liveChanged(message: string): SyncResult {
  return {
    outcome: 'unchanged',
    new_revision: false,
    notRun: 'live_changed',
    message: `not written: live state changed since the decision: ${message}; the next reconcile decides again`,
  };
}

/**
 * The first check of every kind's step: a fresh change the plan would block. A secret this process cannot resolve
 * (`secretErrors`) is a failure of the job (its environment lacks what the deciding process had), not a change of
 * live state; any other block is. Undefined when the fresh change is not blocked.
 */
export function blockedNow(
  fresh: Pick<PlanChange, 'action' | 'reason'>,
  key: string,
  secretErrors: readonly string[],
): SyncResult | undefined {
  if (fresh.action !== 'blocked') return undefined;
  if (secretErrors.length > 0) throw new JobInputError(`${key}: ${secretErrors.join('; ')}`);
  return liveChanged(`the plan would block it now: ${fresh.reason ?? 'blocked'}`);
}

/** The last check of every kind's step: a field differs now that did not when the write was decided. Undefined when none does. */
export function undecidedNow(write: JobWrite, fresh: Pick<PlanChange, 'fields'>): SyncResult | undefined {
  const paths = undecidedFields(write, fresh);
  if (paths.length === 0) return undefined;
  return liveChanged(
    `${paths.join(', ')} ${paths.length === 1 ? 'differs' : 'differ'} now, which the decided write does not cover`,
  );
}
