// The intent check of a job as it runs: what Redis says now (fencing token, desired-state sequence, a delete's absence and confirmation), read in one transaction, through the one rule of src/core/job-intent.ts (no wall clock).
import type { Redis } from 'ioredis';
import { intentLost, type IntentLost } from '../../core/job-intent.js';
import { fenceKey } from '../../leader/lease.js';
import { absentKey, confirmedKey } from '../../store/applied-state.js';
import { parseStored, StoredAbsence, StoredConfirmation, type ReconcileJobData } from '../../store/schema.js';

/** Why a job is not run: its code (the result's `notRun`) and one line. */
export type StaleJob = IntentLost;

/**
 * Whether the job's intent still holds (src/core/job-intent.ts), read from Redis in one MULTI: the lease's fencing
 * token, the resource's desired-state sequence and, for a delete the daemon decided, its absence and its confirmation.
 * A job without a sequence, a token or an intent (older versions, `apply`'s jobs) passes that part.
 */
export async function staleReason(
  redis: Pick<Redis, 'multi'>,
  seqKey: string,
  prefix: string,
  data: ReconcileJobData,
): Promise<StaleJob | undefined> {
  const answers = await redis
    .multi()
    .get(fenceKey(prefix))
    .hget(seqKey, data.key)
    .hget(absentKey(prefix), data.key)
    .hget(confirmedKey(prefix), data.key)
    .exec();
  const value = (i: number): string | null => {
    const [error, reply] = answers?.[i] ?? [new Error('the transaction was discarded'), null];
    if (error) throw error;
    return reply as string | null;
  };
  const [fence, seq, absence, confirmation] = [value(0), value(1), value(2), value(3)];
  return intentLost(
    { fence: data.fence, seq: data.seq, deleteIntent: data.intent },
    {
      fence: fence === null ? 0 : Number(fence),
      ...(seq === null ? {} : { seq: Number(seq) }),
      absence: parseStored(StoredAbsence, absence),
      confirmation: parseStored(StoredConfirmation, confirmation),
    },
  );
}

/**
 * Whether a job's result says it was not run (a former leader's, superseded, or a delete whose intent no longer held):
 * it did not bring its desired state about. Read from the result's data only, its `notRun` (never from its message).
 */
export function wasNotRun(result: unknown): boolean {
  return (result as { notRun?: unknown } | undefined)?.notRun !== undefined;
}
