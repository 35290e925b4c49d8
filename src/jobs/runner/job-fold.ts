// A job's result, or its final failure, folded into its resource's state in Redis by the process that ran it.
import { BlockedError, ServiceError } from '../../core/errors.js';
import { answerSaysDeleting, type JobFailure, type ResourceHold } from '../../core/holds.js';
import { jobRecord, type RecordedEvent } from '../../core/resource-record.js';
import { stateOfJob } from '../../core/resource-state.js';
import type { ResourceEvent } from '../../core/resource-state-model.js';
import type { ReconcileJobData, ReconcileJobResult } from '../../store/schema.js';
import type { FoldRequest, ResourceFolds } from '../../store/resource-folds.js';
import type { QueueLogger } from '../queue/log.js';

/** What the fold of a job needs of the processor's context. */
export interface JobFoldContext {
  log: QueueLogger;
  /** The prefix's resource states: each job's result is folded there by the process that ran it (`by`). */
  record?: { folds: Pick<ResourceFolds, 'fold' | 'read'>; by: string };
  /** The worker's wall clock (Date by default): the time its history entries show. */
  now?: () => Date;
}

/** What a job's final failure was, as data (the fold makes it a hold or not: src/core/resource-state.ts). */
function failureOf(error: unknown): JobFailure {
  if (error instanceof ServiceError)
    return { status: error.status, ...(answerSaysDeleting(error.detail) ? { deleting: true } : {}) };
  if (error instanceof BlockedError && error.nameTaken) return { nameTaken: true };
  return {};
}

/**
 * Folds the job's result (or final failure) into its resource's state in Redis where the job ran, whoever enqueued it
 * (a job's result is a fact: unfenced), with the worker's entry (write_done, pruned, write_failed) in the same write.
 * A failed fold is logged, never the job's failure. `unless`: the fold writes nothing when it holds of the state read.
 * `appliedAt`: the time of the applied record its write left (Redis' clock), the time of the state's `appliedFrom`.
 */
export async function foldJob(
  ctx: JobFoldContext,
  data: ReconcileJobData,
  jobId: string | undefined,
  outcome: { answer: ReconcileJobResult; appliedAt?: string } | { failure: string; error: unknown },
  unless?: FoldRequest['unless'],
): Promise<void> {
  if (!ctx.record || jobId === undefined) return;
  const meta = { at: (ctx.now?.() ?? new Date()).toISOString(), by: ctx.record.by, manifests: data.manifestVersion };
  const job = { jobId, at: meta.at, operation: data.operation, desired: data.desired };
  const [entry, event]: [RecordedEvent, ResourceEvent] =
    'answer' in outcome
      ? [
          jobRecord({ key: data.key, jobId, meta, operation: data.operation, answer: outcome.answer }),
          {
            type: 'job-completed',
            ...job,
            result: outcome.answer,
            version: data.manifestVersion,
            ...(outcome.appliedAt ? { appliedAt: outcome.appliedAt } : {}),
          },
        ]
      : [
          jobRecord({ key: data.key, jobId, meta, operation: data.operation, failure: outcome.failure }),
          { type: 'job-failed', ...job, message: outcome.failure, failure: failureOf(outcome.error) },
        ];
  try {
    // A leader's job (fenced) may end before the leader's decision that enqueued it is folded: what it did starts a
    // state. One that sent nothing (a former leader's, superseded) starts none, nor a delete (a resource with no state
    // left was removed: its delete's result must not bring it back).
    const ran = !('answer' in outcome) || outcome.answer.notRun === undefined;
    const seed =
      data.fence !== undefined && ran && data.remove === undefined ? stateOfJob(data.key, data.operation) : undefined;
    const request = { key: data.key, events: [event], entries: [entry], meta, ...(seed ? { seed } : {}) };
    const [folded] = await ctx.record.folds.fold([{ ...request, ...(unless ? { unless } : {}) }]);
    if (event.type === 'job-failed' && folded?.status === 'written')
      sayHeld(ctx, data, jobId, event.message, folded.state?.hold);
  } catch (error) {
    ctx.log.warn(
      { key: data.key, jobId, error: (error as Error).message.split('\n')[0] },
      "could not fold the job's result into its state in Redis",
    );
  }
}

/** The hold the fold of a job's failure made (read from the fold's output, src/core/resource-state.ts), said once. */
function sayHeld(
  ctx: JobFoldContext,
  data: ReconcileJobData,
  jobId: string,
  error: string,
  hold: ResourceHold | undefined,
): void {
  if (!hold || hold.desired !== data.desired || (hold.reason !== 'WriteRefused' && hold.reason !== 'NameTaken')) return;
  const said =
    hold.reason === 'NameTaken'
      ? 'job failed: the name is taken on the service (NameTaken); held (no POST sent again) until its manifest changes or converge reconcile --retry-failed releases it'
      : 'job failed: the service refused this write for good; held (not sent again) until its manifest changes or converge reconcile --retry-failed releases it';
  ctx.log.warn({ key: data.key, jobId, reason: hold.reason, error }, said);
}
