// The stale-job check: a job superseded by a newer desired state, or enqueued by a former leader, is not run (Redis' counters, no wall clock).
import type { Redis } from 'ioredis';
import { currentFence } from '../../leader/lease.js';
import type { ReconcileJobData, ReconcileJobResult } from '../../store/schema.js';

/** Why a job is not run: its code (the result's `notRun`) and one line. */
export interface StaleJob {
  code: NonNullable<ReconcileJobResult['notRun']>;
  message: string;
}

/**
 * The worker's check of a job against Redis' counters (no wall clock): the resource's desired-state sequence and the
 * lease's fencing token. A job without a sequence or a token (older versions, `apply`'s jobs) passes that check.
 */
export async function staleReason(redis: Pick<Redis, 'hget' | 'get'>, seqKey: string, prefix: string, data: ReconcileJobData): Promise<StaleJob | undefined> {
  const [seq, fence] = await Promise.all([
    data.seq === undefined ? undefined : redis.hget(seqKey, data.key),
    data.fence === undefined ? undefined : currentFence(redis, prefix),
  ]);
  if (fence !== undefined && data.fence !== undefined && fence > data.fence) {
    return { code: 'former_leader', message: `${FORMER_LEADER} (fencing token ${data.fence}, current ${fence}); dropped, nothing sent` };
  }
  if (seq !== undefined && seq !== null && data.seq !== undefined && Number(seq) > data.seq) return { code: 'superseded', message: `${SUPERSEDED}; nothing sent` };
  return undefined;
}

const FORMER_LEADER = 'enqueued by a former leader';
const SUPERSEDED = 'superseded by a newer desired state enqueued since';

/**
 * Whether a job's result says it was not run (a former leader's, or superseded): it did not bring its desired state
 * about. Its `notRun`; a result of an older version says it in its message only.
 */
export function wasNotRun(result: unknown): boolean {
  if ((result as { notRun?: unknown } | undefined)?.notRun !== undefined) return true;
  const message = (result as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && (message.startsWith(FORMER_LEADER) || message.startsWith(SUPERSEDED));
}
