// Whether a job's intent still holds when it runs (pure): one rule for every job kind, asked as the job starts and again right before its first write or its DELETE.
import type { Absence } from './prune-grace.js';

/**
 * Why the daemon decided a delete, carried by its job: its grace passed (`grace`, prune_mode auto) or a person
 * confirmed it (`confirmed`), and the absence it was decided on (src/core/prune-grace.ts: since, manifests, live id).
 */
export interface DeleteIntent {
  by: 'grace' | 'confirmed';
  since: number;
  manifests: string;
  id: string;
}

/** A person's confirmation of one pending delete (`converge reconcile --confirm-delete NAME`): the absence they saw pending. */
export interface DeleteConfirmation {
  id: string;
  since: number;
}

/** What a job says of its intent: the leader's fencing token and the desired-state sequence it was enqueued with, and a delete's intent. */
export interface JobIntent {
  fence?: number | undefined;
  seq?: number | undefined;
  deleteIntent?: DeleteIntent | undefined;
}

/** What Redis says now (read in one transaction): the newest fencing token and sequence, the resource's absence and confirmation. */
export interface IntentFacts {
  fence?: number | undefined;
  seq?: number | undefined;
  absence?: Absence | undefined;
  confirmation?: DeleteConfirmation | undefined;
}

/** Why a job is not run: the result's `notRun` code, and one line. */
export interface IntentLost {
  code: 'former_leader' | 'superseded' | 'declared_again' | 'not_due' | 'not_confirmed';
  message: string;
}

/** The opening words of the two messages of a job not run (the result's `notRun` says it as data: src/jobs/runner/stale-job.ts). */
const FORMER_LEADER = 'enqueued by a former leader';
const SUPERSEDED = 'superseded by a newer desired state enqueued since';

/** Whether `confirmation` confirms the delete of the resource undeclared as `absence` says (the same live id, the same absence). */
export function confirms(confirmation: DeleteConfirmation | undefined, absence: Absence | undefined): boolean {
  return (
    confirmation !== undefined &&
    absence !== undefined &&
    confirmation.id === absence.id &&
    confirmation.since === absence.since
  );
}

/** The intent of a delete decided now on `absence`: by a person's confirmation when it confirms that absence, else by its grace. */
export function deleteIntentOf(absence: Absence, confirmed: boolean): DeleteIntent {
  return { by: confirmed ? 'confirmed' : 'grace', since: absence.since, manifests: absence.manifests, id: absence.id };
}

/**
 * Whether the job's intent still holds, or why not. Every job: it was enqueued by the leader that holds the lease now
 * (its fencing token is the newest) and carries the newest desired state of its resource (its sequence). A delete the
 * daemon decided besides: its resource is still undeclared with the very absence the delete was decided on (the
 * manifests read since, the same live id; its grace, which had passed then, stays passed), and, when a person's
 * confirmation decided it, that confirmation is still stored. A job without a token, a sequence or an intent (`apply`'s,
 * older versions') passes that part.
 */
export function intentLost(job: JobIntent, facts: IntentFacts): IntentLost | undefined {
  if (job.fence !== undefined && facts.fence !== undefined && facts.fence > job.fence) {
    return {
      code: 'former_leader',
      message: `${FORMER_LEADER} (fencing token ${job.fence}, current ${facts.fence}); dropped, nothing sent`,
    };
  }
  if (job.seq !== undefined && facts.seq !== undefined && facts.seq > job.seq)
    return { code: 'superseded', message: `${SUPERSEDED}; nothing sent` };
  const intent = job.deleteIntent;
  if (!intent) return undefined;
  const absence = facts.absence;
  if (!absence) {
    return {
      code: 'declared_again',
      message:
        'not deleted: declared again in the manifests read since its delete was decided (no absence is recorded any more); nothing sent',
    };
  }
  if (absence.id !== intent.id || absence.since !== intent.since || absence.manifests !== intent.manifests) {
    return {
      code: 'not_due',
      message:
        'not deleted: the absence its delete was decided on changed since (other manifests or another live id: the grace started again); nothing sent',
    };
  }
  if (intent.by === 'confirmed' && !confirms(facts.confirmation, absence)) {
    return {
      code: 'not_confirmed',
      message: 'not deleted: the confirmation its delete was decided on is no longer stored; nothing sent',
    };
  }
  return undefined;
}
