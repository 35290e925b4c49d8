// Each resource's state after an apply, folded as the daemon folds it (src/core/resource-state.ts): its decision, the job that carries its write and that job's raw result, then the rollout --wait read; the JSON's `results` and `resources` and the exit code read that state.
import { applying, type Outcome } from '../core/decide.js';
import type { HealthCondition, SyncCondition } from '../core/health.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import type { FieldChange, PlanChange } from '../core/model.js';
import { recordsOf, type RecordedEvent, type RecordMeta } from '../core/resource-record.js';
import { foldResource } from '../core/resource-state.js';
import type { DecisionContext, ResourceEvent, ResourceState } from '../core/resource-state-model.js';
import type { JobEnd } from './wait-jobs.js';

/** Who started a revision that apply --wait follows (ResourceResult.startedBy). */
export type RevisionStarter = 'apply' | 'earlier';

/**
 * A job's result in one word, read from the folded state: `done` or `unchanged` (sync `Applied`), `interrupted` (the
 * apply was stopped before the job had a result), `failed` (anything else: the job failed, met a Conflict, or sent
 * nothing because live state changed or a newer desired state superseded it); `held` (no job: its wave waits behind
 * an earlier wave whose rollout failed, src/apply/waves.ts).
 */
export type ResultStatus = 'done' | 'unchanged' | 'failed' | 'interrupted' | 'held';

/** What became of one resource's job (an entry of `results`). */
export interface ResourceResult {
  kind: PlanChange['kind'];
  name: string;
  key: string;
  status: ResultStatus;
  outcome?: string;
  new_revision: boolean;
  /** The service's message on failure, or a note (adoption). Never a secret. */
  message?: string;
  deploymentId?: string;
  latestRevisionId?: string | null;
  /** The job that carried the write; absent for a rollout already in progress that no job of this apply touched. */
  jobId?: string;
  /**
   * With --wait: who started the revision it follows: a job of this apply (`apply`), or something before it, an earlier
   * apply, the daemon or a person (`earlier`: the rollout was already in progress, and nothing was written for it).
   */
  startedBy?: RevisionStarter;
  /**
   * With --wait: the revision became active, failed (a failed status, or past the progress deadline), was not
   * active at the timeout, or was still building when the wait stopped at another's failure (undefined: not waited for).
   */
  revision?: 'active' | 'failed' | 'timeout' | 'building';
  /** With --wait: the failed status of the revision (BUILD_FAILED, DEPLOY_FAILED, CREATE_FAILED). */
  revisionStatus?: string;
  /** With --wait: the rollout health the wait read last. */
  health?: HealthCondition;
  /** The fields the job's write sent, as the plan shows them (secret values "(sensitive)"); absent when nothing was written. */
  fields?: FieldChange[];
}

/** One entry of `resources`: a planned resource's sync and health after the apply. */
export interface ResourceConditions {
  key: string;
  sync: SyncCondition;
  health: HealthCondition;
  /** Why nothing was written (the outcome's reason code and message), when nothing was. */
  skip?: { code: string; message: string };
}

/** The folds of one resource, in turn: each event and the state before and after it. */
interface Step {
  event: ResourceEvent;
  before: ResourceState | undefined;
  after: ResourceState;
}

/**
 * The folds of the decision and, when a job carried its write, of that job's end: as the daemon folds them, the
 * decision with its job queued (Applying), then the job's raw result, its failure, or the interrupt. `version`: the
 * manifests the apply planned from (a job that wrote shows them as `appliedFrom`).
 */
function jobSteps(outcome: Outcome, end: JobEnd | undefined, version?: ManifestVersion): Step[] {
  const context: DecisionContext = { file: null, planReason: null, drift: outcome.drift, heldAtLastGood: false };
  const queued =
    end?.jobId && end.operation ? applying(outcome, { jobId: end.jobId, operation: end.operation }) : outcome;
  const decided = { type: 'decided', outcome: queued, context } as const;
  const steps: Step[] = [{ event: decided, before: undefined, after: foldResource(undefined, decided) }];
  if (!end || !outcome.write) return steps;
  const event = end.event.type === 'job-completed' && version ? { ...end.event, version } : end.event;
  const before = steps[0]!.after;
  steps.push({ event, before, after: foldResource(before, event) });
  // The hold the job's fold made in Redis (a refusal for good, a name taken): the state shows it as /status does.
  if (end.event.type === 'job-failed' && end.hold) {
    const failed = steps[1]!.after;
    const held = { type: 'hold', hold: end.hold } as const;
    steps.push({ event: held, before: failed, after: foldResource(failed, held) });
  }
  return steps;
}

/**
 * The sync a resource shows: a job failure the fold held shows the hold's reason and message (WriteRefused, NameTaken),
 * as the daemon's next decision shows it (src/core/decide.ts); anything else as folded.
 */
function shownSync(state: ResourceState): SyncCondition {
  const hold = state.hold;
  if (!hold || state.sync.reason !== 'JobFailed') return state.sync;
  return { status: 'out_of_sync', reason: hold.reason, message: hold.message };
}

/** The state after the decision and, when a job carried its write, that job's end (jobSteps). */
export function stateAfterJob(outcome: Outcome, end: JobEnd | undefined, version?: ManifestVersion): ResourceState {
  return jobSteps(outcome, end, version).at(-1)!.after;
}

function statusOf(state: ResourceState): ResultStatus {
  if (state.sync.reason === 'Applied') return state.job?.outcome === 'unchanged' ? 'unchanged' : 'done';
  return state.sync.reason === 'Interrupted' ? 'interrupted' : 'failed';
}

/** The `results` entry of a job's end: its status from the folded `state`, the rest as the job answered. */
export function resultOf(end: JobEnd, state: ResourceState): ResourceResult {
  const out: ResourceResult = {
    kind: end.kind,
    name: end.name,
    key: end.key,
    status: statusOf(state),
    new_revision: false,
    jobId: end.jobId,
  };
  const event = end.event;
  if (event.type !== 'job-completed')
    return { ...out, message: state.hold && end.hold ? state.hold.message : event.message };
  const r = event.result;
  if (!r) return { ...out, message: 'the job finished with a result this converge does not understand' };
  out.outcome = r.outcome;
  out.new_revision = r.new_revision;
  const message = r.message ?? (out.status === 'failed' ? (state.reason ?? state.sync.message) : undefined);
  if (message) out.message = message;
  if (r.deploymentId) out.deploymentId = r.deploymentId;
  if (r.latestRevisionId !== undefined) out.latestRevisionId = r.latestRevisionId;
  if (r.fields)
    out.fields = r.fields.map((f) => ({ path: f.path, before: f.before, after: f.after, sensitive: f.sensitive }));
  return out;
}

/** The `results` entries of the jobs' ends, in their order, each read from its resource's folded state. */
export function jobResults(
  outcomes: ReadonlyMap<string, Outcome>,
  ends: readonly JobEnd[],
  version?: ManifestVersion,
): ResourceResult[] {
  return ends.map((end) => resultOf(end, stateAfterJob(outcomeOf(outcomes, end.key), end, version)));
}

function outcomeOf(outcomes: ReadonlyMap<string, Outcome>, key: string): Outcome {
  const outcome = outcomes.get(key);
  // Every job is made from a decided outcome (src/apply/apply-jobs.ts): a job without one is a bug, not an input.
  if (!outcome) throw new TypeError(`${key}: a job of this apply has no decided outcome`);
  return outcome;
}

/**
 * Every planned resource's state after the apply (orphans left out), in plan order: its decision, its job's end, then
 * the rollout --wait read last (`results[].health`); its `resources` entry; and, with `meta`, the history entries of
 * what followed its decision (src/core/resource-record.ts: a Conflict its job met, a revision it started or --wait
 * read, an interrupt). The decision itself is not recorded: apply decides afresh every run, so it would be news every
 * time, and the job's own entry is the worker's that ran it.
 */
export function applyStates(
  outcomes: ReadonlyMap<string, Outcome>,
  ends: readonly JobEnd[],
  results: readonly ResourceResult[],
  options: { version?: ManifestVersion | undefined; meta?: RecordMeta } = {},
): { states: ResourceState[]; resources: ResourceConditions[]; records: RecordedEvent[] } {
  const endOf = new Map(ends.map((end) => [end.key, end]));
  const waited = new Map(results.flatMap((r) => (r.health ? [[r.key, r.health] as const] : [])));
  const states: ResourceState[] = [];
  const resources: ResourceConditions[] = [];
  const records: RecordedEvent[] = [];
  for (const outcome of outcomes.values()) {
    if (outcome.action === 'orphan') continue;
    const steps = jobSteps(outcome, endOf.get(outcome.key), options.version);
    const health = waited.get(outcome.key);
    if (health) {
      const before = steps.at(-1)!.after;
      steps.push({
        event: { type: 'revision', health },
        before,
        after: foldResource(before, { type: 'revision', health }),
      });
    }
    const state = steps.at(-1)!.after;
    states.push(state);
    const entry: ResourceConditions = { key: outcome.key, sync: shownSync(state), health: state.health };
    if (outcome.skip && outcome.skip.code !== 'Synced') entry.skip = outcome.skip;
    resources.push(entry);
    const meta = options.meta;
    if (!meta) continue;
    // A write through a change window (--override-window) keeps its decision's entry too: it says who asked.
    for (const step of outcome.write?.windowOverride ? steps : steps.slice(1)) {
      // A hold read back from Redis is the worker's fold's, recorded there with its write_failed.
      if (step.event.type === 'hold') continue;
      records.push(...startedWhenCreated(recordsOf(step.event, step.before, step.after, meta), health));
    }
  }
  return { states, resources, records };
}

/**
 * The start of a revision that --wait read afterwards is timed at the revision's `created_at` (the service's word),
 * not when apply saw its job end: the job's result names the revision, the wait's read tells when it began.
 */
function startedWhenCreated(records: RecordedEvent[], health: HealthCondition | undefined): RecordedEvent[] {
  const createdAt = health?.revisionCreatedAt;
  if (!createdAt) return records;
  return records.map((r) => {
    const revision = r.revision;
    if (r.type !== 'revision' || !revision) return r;
    if (revision.id !== health.revisionId || revision.status !== 'STARTED') return r;
    return { ...r, at: createdAt, revision: { ...revision, createdAt } };
  });
}
