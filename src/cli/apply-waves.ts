// `converge apply` on a change in several waves: the jobs run wave by wave through src/apply/waves.ts, each wave's rollouts followed with --wait's report; the held resources folded as WaveHeld (docs/rollouts.md).
import type { Outcome } from '../core/decide.js';
import type { ManifestVersion } from '../core/manifest-version.js';
import { jobResults, type ResourceResult } from '../apply/apply-state.js';
import type { JobEnd } from '../apply/wait-jobs.js';
import { heldResult, runWaves, wavesWaitingLine, type WaveStep } from '../apply/waves.js';
import { inFlightOf, waveGatedOutcome, type WaveLimit } from '../core/waves.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';

/** What a waved apply takes: its steps, how to run a part's jobs and follow its rollouts, and its outcomes (updated for the held). */
export interface WavedApplyInput {
  steps: WaveStep[];
  wait: boolean;
  limit: WaveLimit | undefined;
  outcomes: Map<string, Outcome>;
  version: ManifestVersion | undefined;
  run: (changes: DecidedJob[]) => Promise<JobEnd[]>;
  follow: (results: ResourceResult[]) => Promise<void>;
  interrupted: () => boolean;
}

/** How it ended: every job's end, the results (the held ones included), and without --wait the line saying what waits. */
export interface WavedApplyEnd {
  ends: JobEnd[];
  results: ResourceResult[];
  /** Without --wait, when later waves wait: the closing line (exit code 3). */
  waitingLine?: string;
  /** A wave's rollout failed: the later waves are held. */
  stopped: boolean;
}

/**
 * Runs the waves; each held resource's outcome becomes WaveHeld (behind a failure) or WaveWaiting in `outcomes` (so `resources`, the history and the
 * exit code say it) and it gets a `results` entry of status `held`.
 */
export async function applyWaved(input: WavedApplyInput): Promise<WavedApplyEnd> {
  const waved = await runWaves(
    input.steps,
    {
      run: input.run,
      results: (ends) => jobResults(input.outcomes, ends, input.version),
      follow: input.follow,
      interrupted: input.interrupted,
    },
    { wait: input.wait, maxInFlight: (size) => inFlightOf(input.limit, size) },
  );
  const held: ResourceResult[] = [];
  for (const { key, ...gate } of waved.held) {
    const outcome = input.outcomes.get(key);
    if (!outcome) continue;
    input.outcomes.set(key, waveGatedOutcome(outcome, gate));
    held.push(heldResult(outcome, gate.message));
  }
  const end: WavedApplyEnd = {
    ends: waved.ends,
    results: [...waved.results, ...held],
    stopped: waved.failure !== undefined,
  };
  if (waved.waiting && waved.waiting.length > 0)
    end.waitingLine = wavesWaitingLine(input.steps[0]!.wave, waved.waiting);
  return end;
}
