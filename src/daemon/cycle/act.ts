// Acting on the daemon's outcomes: the decided writes become jobs, and each outcome takes what the queue answers.
import { applying, withWriteInFlight, type DecisionInput, type Outcome } from '../../core/decide.js';
import type { DeleteIntent } from '../../core/job-intent.js';
import type { ManifestVersion } from '../../core/manifest-version.js';
import type { DesiredResource } from '../../core/model.js';
import type { PlanInput } from '../../plan/plan.js';
import { decidedJob, jobDataOf } from '../../jobs/queue/decided-jobs.js';
import type { ReconcileJobData } from '../../store/schema.js';
import { gateWaves, waveGatedOutcome, waveOf, type WaveGate } from '../../core/waves.js';
import type { CycleContext, EnqueuedJob } from './cycle-context.js';
import { gateWindows } from './window-gate.js';

export interface ToAct {
  /** Every outcome by resourceKey; updated in place as the queue answers. */
  outcomes: Map<string, Outcome>;
  /** The inputs each outcome was decided from (the job's change, live id and fingerprint). */
  inputs: ReadonlyMap<string, DecisionInput>;
  resources: ReadonlyMap<string, DesiredResource>;
  secretHashes: PlanInput['secretHashes'];
  version: ManifestVersion | undefined;
  /** The intent of each delete decided now (src/core/job-intent.ts), by resourceKey: its job carries it. */
  intents?: ReadonlyMap<string, DeleteIntent> | undefined;
  /** The wave each resource to delete was last declared in (its applied record's), for their descending order. */
  deleteWaves?: ReadonlyMap<string, number> | undefined;
}

/** SecretsUnknown outcomes whose job of this desired state is in flight or just finished: that job records the hashes. */
async function settleSecretsUnknown(ctx: CycleContext, act: ToAct): Promise<void> {
  const held = [...act.outcomes.values()].filter(
    (o) => o.skip?.code === 'SecretsUnknown' && act.inputs.get(o.key)?.fingerprint,
  );
  const lookups = await Promise.all(
    held.map((o) => ctx.enqueuer.inFlightJob(o.key, act.inputs.get(o.key)!.fingerprint!)),
  );
  held.forEach((o, i) => {
    const job = lookups[i];
    const input = act.inputs.get(o.key)!;
    const fingerprint = input.fingerprint!;
    if (job && !job.finished) {
      const tracked: EnqueuedJob = {
        key: o.key,
        jobId: job.jobId,
        operation: 'in-flight',
        desired: fingerprint,
        fingerprint,
        inFlight: true,
      };
      ctx.onEnqueued?.(tracked);
      act.outcomes.set(o.key, withWriteInFlight(o, { state: 'queued', jobId: job.jobId, operation: 'in-flight' }));
    } else if (job?.finished || ctx.finishedSince?.(o.key, fingerprint)) {
      act.outcomes.set(o.key, withWriteInFlight(o, { state: 'finished' }));
    }
  });
}

/** The job data of one decided write (src/jobs/queue/decided-jobs.ts: the step apply takes too). */
function jobData(ctx: CycleContext, act: ToAct, outcome: Outcome): ReconcileJobData | undefined {
  const input = act.inputs.get(outcome.key)!;
  const job = decidedJob(outcome, {
    change: input.change,
    resource: act.resources.get(outcome.key),
    liveId: input.live?.id,
    fingerprint: input.fingerprint,
    secretHashes: act.secretHashes.get(outcome.key) ?? {},
  });
  if (!job) return undefined;
  const intent = outcome.write?.op === 'delete' ? act.intents?.get(outcome.key) : undefined;
  const data = jobDataOf(job, {
    origin: 'daemon',
    deleteTracingProjects: ctx.settings.pruneTracingProjects === true,
    manifestVersion: act.version,
    intent,
  });
  // The reconcile's trace context (tracing on only), so the job's span links to the reconcile that enqueued it.
  const traceparent = ctx.steps?.traceparent();
  return traceparent ? { ...data, traceparent } : data;
}

/** Whether the declared resources span two waves or more. */
function severalWaves(resources: ReadonlyMap<string, DesiredResource>): boolean {
  let first: number | undefined;
  for (const resource of resources.values()) {
    const wave = waveOf(resource);
    if (first === undefined) first = wave;
    else if (wave !== first) return true;
  }
  return false;
}

/**
 * The writes the waves hold (src/core/waves.ts gateWaves). Under wave_max_in_flight, the writes the gate lets through
 * are first looked up in the queue: one whose job of this desired state is waiting, active or just finished is in
 * flight (it takes a place), not a new write.
 */
async function wavesGated(ctx: CycleContext, act: ToAct): Promise<Map<string, WaveGate>> {
  const options = { deleteWaves: act.deleteWaves ?? new Map<string, number>() };
  const gated = gateWaves(act.outcomes, act.resources, options);
  const limit = ctx.settings.waveMaxInFlight;
  // Declared resources all in one wave: no limit applies, and the queue is not asked (the single-wave path as ever).
  if (!limit || !severalWaves(act.resources)) return gated;
  const open = [...act.outcomes.values()].filter(
    (o) => o.write && o.write.op !== 'delete' && !gated.has(o.key) && act.inputs.get(o.key)?.fingerprint,
  );
  const found = await Promise.all(
    open.map((o) => ctx.enqueuer.inFlightJob(o.key, act.inputs.get(o.key)!.fingerprint!)),
  );
  const inFlight = new Set(
    open
      .filter((o, i) => found[i] !== undefined || ctx.finishedSince?.(o.key, act.inputs.get(o.key)!.fingerprint!))
      .map((o) => o.key),
  );
  return gateWaves(act.outcomes, act.resources, { ...options, limit, inFlight });
}

/**
 * Enqueues every decided write that its wave lets through (deletes too: by live id, the newest job of a key
 * wins). A resource whose waiting or active job already carries this desired state gets no second job, and one whose
 * job finished during the reconcile none at all: their decided outcomes take that knowledge (Applying, Applied; no
 * drift). Returns the jobs added.
 */
export async function enqueueOutcomes(ctx: CycleContext, act: ToAct): Promise<number> {
  await settleSecretsUnknown(ctx, act);
  // Waves (docs/rollouts.md): no write of a wave while an earlier one is not yet healthy, or failed (WaveWaiting, WaveHeld).
  for (const [key, gate] of await wavesGated(ctx, act))
    act.outcomes.set(key, waveGatedOutcome(act.outcomes.get(key)!, gate));
  // Change windows (docs/rollouts.md): inside a blocking one, no write goes unless an operator's reconcile may (WindowHeld).
  if (ctx.windows?.configured) gateWindows(ctx.windows, ctx.now ? await ctx.now() : Date.now(), act.outcomes);
  const writes: Outcome[] = [];
  const datas: ReconcileJobData[] = [];
  for (const outcome of act.outcomes.values()) {
    if (!outcome.write) continue;
    const data = jobData(ctx, act, outcome);
    if (!data) continue;
    writes.push(outcome);
    datas.push(data);
  }
  let added = 0;
  await ctx.enqueuer.enqueue(
    datas,
    (enqueued, i) => {
      const outcome = writes[i]!;
      const data = datas[i]!;
      const input = act.inputs.get(outcome.key)!;
      if (enqueued.how === 'finished') {
        act.outcomes.set(outcome.key, withWriteInFlight(outcome, { state: 'finished' }));
        return;
      }
      const job: EnqueuedJob = {
        key: outcome.key,
        jobId: enqueued.jobId,
        operation: data.operation,
        desired: data.desired!,
        ...(data.manifestVersion ? { version: data.manifestVersion } : {}),
      };
      if (input.fingerprint) job.fingerprint = input.fingerprint;
      if (enqueued.how === 'in-flight') {
        job.inFlight = true;
        const queued = { state: 'queued', jobId: enqueued.jobId, operation: data.operation } as const;
        act.outcomes.set(outcome.key, withWriteInFlight(outcome, queued));
      } else {
        added += 1;
        act.outcomes.set(outcome.key, applying(outcome, { jobId: enqueued.jobId, operation: data.operation }));
      }
      if (outcome.write?.secretsApproved) ctx.secretWrites?.done(outcome.key);
      if (outcome.write?.op === 'rebuild') ctx.rebuilds?.done(outcome.key);
      if (outcome.write?.op === 'delete') ctx.deleteConfirms?.done(outcome.key);
      ctx.onEnqueued?.(job);
    },
    {
      skipInFlight: true,
      finishedSince: (data) => data.desired !== undefined && ctx.finishedSince?.(data.key, data.desired) === true,
      ...(ctx.fence ? { fence: ctx.fence } : {}),
    },
  );
  return added;
}
