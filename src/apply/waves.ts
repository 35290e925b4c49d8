// apply's waves: the decided jobs sent wave by wave (each after the one before is healthy), stopping at the first failed rollout, the rest held (docs/rollouts.md).
import type { Outcome } from '../core/decide.js';
import { resourceKey, type AppliedRecord, type DesiredResource } from '../core/model.js';
import { groupByWave, waveHeldMessage, waveOf, type WaveFailure, type WaveGate } from '../core/waves.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';
import type { PlannedWrite } from '../core/saved-plan/schema.js';
import type { ResourceResult } from './apply-state.js';
import type { JobEnd } from './wait-jobs.js';

/** One wave of an apply: its number (`prune`: deletes, after the last; `deleteWave` the wave they were declared in) and its jobs, in plan order. */
export interface WaveStep {
  wave: number | 'prune';
  deleteWave?: number;
  changes: DecidedJob[];
}

/**
 * The apply's jobs by wave, ascending; the deletes (no manifest) after the last, in descending order of the wave their
 * manifest last declared (`applied`: the applied records, which keep it). With `saved` (apply --plan), each write's
 * wave is the one the saved plan recorded, so the order is the plan's.
 */
export function waveSteps(
  changes: readonly DecidedJob[],
  resources: ReadonlyMap<string, DesiredResource>,
  saved?: readonly PlannedWrite[],
  applied?: ReadonlyMap<string, AppliedRecord>,
): WaveStep[] {
  const recorded = saved ? new Map(saved.map((w) => [resourceKey(w.kind, w.name), w.wave ?? 0])) : undefined;
  const keyOf = (job: DecidedJob): string => resourceKey(job.change.kind, job.change.name);
  const wave = (job: DecidedJob): number | undefined => {
    if (job.change.action === 'delete') return undefined;
    return recorded ? recorded.get(keyOf(job)) : waveOf(resources.get(keyOf(job)));
  };
  const deleteWave = (job: DecidedJob): number =>
    (recorded ? recorded.get(keyOf(job)) : applied?.get(keyOf(job))?.wave) ?? 0;
  return groupByWave(changes, wave).flatMap((group): WaveStep[] => {
    if (group.wave !== 'prune') return [{ wave: group.wave, changes: group.items }];
    const descending = groupByWave(group.items, deleteWave).reverse();
    if (descending.length === 1) return [{ wave: 'prune', changes: group.items }];
    return descending.map((part) => ({ wave: 'prune', deleteWave: part.wave as number, changes: part.items }));
  });
}

/** Whether an apply's jobs span several waves, or its deletes do (then they go wave by wave; otherwise all at once, as ever). */
export function isWaved(steps: readonly WaveStep[]): boolean {
  return (
    steps.filter((step) => step.wave !== 'prune').length > 1 || steps.some((step) => step.deleteWave !== undefined)
  );
}

/** What a waved apply does with each part: run jobs, fold their ends into results, follow the rollouts of results. */
export interface WavePorts {
  /** Runs the jobs (runApply) and resolves with one end per job. */
  run(changes: DecidedJob[]): Promise<JobEnd[]>;
  /** The `results` entries of the jobs' ends (jobResults). */
  results(ends: JobEnd[]): ResourceResult[];
  /** Follows the rollouts of the results marked `startedBy` until each is active or failed (waitAndReport). */
  follow(results: ResourceResult[]): Promise<void>;
  /** Whether the apply was interrupted: no further wave is started. */
  interrupted(): boolean;
}

/** How a waved apply ended. */
export interface WavedApply {
  ends: JobEnd[];
  results: ResourceResult[];
  /** The rollout (or job) that stopped the change, when one did. */
  failure?: WaveFailure;
  /** Without --wait: the waves not written, ascending (nothing can tell the first is healthy). */
  waiting?: Array<number | 'prune'>;
  /** The resources held behind the failure (WaveHeld), or left waiting without --wait (WaveWaiting), with their messages. */
  held: Array<{ key: string } & WaveGate>;
}

/** Why a part of a wave is not healthy: its job failed or was interrupted, or its rollout failed or did not end in time. */
function unhealthy(r: ResourceResult): string | undefined {
  if (r.status === 'failed' || r.status === 'interrupted') return `its write ${r.status}: ${r.message ?? r.status}`;
  if (r.revision === 'failed') return r.health?.message ?? `its new revision ended ${r.revisionStatus ?? 'failed'}`;
  if (r.revision === 'timeout') return 'its new revision was not active before --wait-timeout';
  return undefined;
}

/** The parts of a wave of at most `size` jobs (undefined: the whole wave at once). */
function partsOf<T>(items: readonly T[], size: number | undefined): T[][] {
  if (size === undefined || size >= items.length) return [items.slice()];
  const parts: T[][] = [];
  for (let at = 0; at < items.length; at += size) parts.push(items.slice(at, at + size));
  return parts;
}

/**
 * Sends the steps wave by wave. With `wait`, each part of a wave (`maxInFlight` jobs at most, `wave_max_in_flight`)
 * is run and its new revisions followed to the end before the next part; a wave starts only when every part of the one
 * before is healthy. The first part that is not stops the change: the jobs of the later waves are not run, and each is
 * held with a message naming the wave and the resource that failed. Without `wait`, the first wave is run and the
 * others are left waiting.
 */
export async function runWaves(
  steps: readonly WaveStep[],
  ports: WavePorts,
  options: { wait: boolean; maxInFlight?: (waveSize: number) => number },
): Promise<WavedApply> {
  const out: WavedApply = { ends: [], results: [], held: [] };
  for (const [index, step] of steps.entries()) {
    if (out.failure) {
      const message = waveHeldMessage(step.wave, out.failure);
      out.held.push(
        ...step.changes.map(({ change }) => ({
          key: resourceKey(change.kind, change.name),
          reason: 'WaveHeld' as const,
          message,
        })),
      );
      continue;
    }
    if (ports.interrupted()) break;
    // Without --wait nothing tells a wave healthy: after a wave of writes, nothing more (deletes alone go in order).
    if (!options.wait && steps.slice(0, index).some((earlier) => earlier.wave !== 'prune')) {
      out.waiting = steps.slice(index).map((s) => s.wave);
      const message = waitingMessage(step.wave, steps[0]!.wave);
      const gate = { reason: 'WaveWaiting' as const, message };
      for (const later of steps.slice(index))
        out.held.push(...later.changes.map(({ change }) => ({ key: resourceKey(change.kind, change.name), ...gate })));
      break;
    }
    const size = options.maxInFlight?.(step.changes.length);
    for (const part of partsOf(step.changes, size)) {
      if (out.failure || ports.interrupted()) break;
      const ends = await ports.run(part);
      const results = ports.results(ends);
      out.ends.push(...ends);
      out.results.push(...results);
      if (!options.wait) continue;
      for (const r of results) if (r.status === 'done' && r.new_revision && r.deploymentId) r.startedBy = 'apply';
      await ports.follow(results);
      const failed = results.map((r) => ({ r, said: unhealthy(r) })).find((f) => f.said !== undefined);
      // A failed delete stops the deletes of lower waves only when the deletes go by wave (otherwise all go, as ever).
      const wave = step.wave === 'prune' ? step.deleteWave : step.wave;
      if (failed && wave !== undefined) out.failure = { wave, key: failed.r.key, said: failed.said! };
    }
    // A part not run after the failure in its own wave waits too (wave_max_in_flight): held like the later waves.
    const ran = new Set(out.ends.map((end) => end.key));
    if (out.failure) {
      const message = waveHeldMessage(step.wave, out.failure);
      const notRun = step.changes.filter(({ change }) => !ran.has(resourceKey(change.kind, change.name)));
      out.held.push(
        ...notRun.map(({ change }) => ({
          key: resourceKey(change.kind, change.name),
          reason: 'WaveHeld' as const,
          message,
        })),
      );
    }
  }
  return out;
}

/** The message of a resource apply without --wait left unwritten: its wave waits until the first is healthy. */
function waitingMessage(wave: number | 'prune', first: number | 'prune'): string {
  const what = wave === 'prune' ? 'the deletes after the last wave wait' : `wave ${wave} waits`;
  return `not written: ${what} until wave ${String(first)} is healthy, which apply without --wait does not follow; run "converge apply --wait", or let the daemon roll it out`;
}

/** The `results` entry of a held resource: no job, status `held`, its message. */
export function heldResult(outcome: Outcome, message: string): ResourceResult {
  return { kind: outcome.kind, name: outcome.name, key: outcome.key, status: 'held', new_revision: false, message };
}

/** "Applied wave 0 only: waves 1, 2 wait until it is healthy; …": the end of an apply without --wait on several waves. */
export function wavesWaitingLine(first: number | 'prune', waiting: ReadonlyArray<number | 'prune'>): string {
  const names = [...new Set(waiting.map((w) => (w === 'prune' ? 'the deletes after the last wave' : `wave ${w}`)))];
  const them = names.length === 1 ? 'waits' : 'wait';
  return `Applied wave ${String(first)} only: ${names.join(', ')} ${them} until it is healthy, which only a follower of its rollouts can tell; run "converge apply --wait" to roll them out wave by wave, or let the daemon do it.`;
}
