// The end of `converge apply`: its verdict from the folded states and the lines or JSON document that report it.
import { applyConverged, applyExitCode, type ApplyEnd } from '../core/exit-code.js';
import type { Plan } from '../core/model.js';
import type { Outcome } from '../core/decide.js';
import type { applyStates, jobResults } from '../apply/apply-state.js';
import type { Gathered } from '../observe/gather.js';
import type { CommandIo } from './command.js';
import { failedRolloutLine } from './apply-wait.js';
import { closingLine, failedRollouts, liveIdOf, standingKeys, standingLine } from './apply-report.js';

/** What the end of an apply reports on: the plan, each resource's folded state, the jobs' results, what was gathered. */
export interface ApplyReport {
  text: boolean;
  result: Plan;
  states: ReturnType<typeof applyStates>['states'];
  resources: ReturnType<typeof applyStates>['resources'];
  results: ReturnType<typeof jobResults>;
  outcomes: ReadonlyMap<string, Outcome>;
  gathered: Gathered;
  end: ApplyEnd;
  interrupted: NodeJS.Signals | undefined;
}

/**
 * The apply's verdict (src/core/exit-code.ts) and its last lines: the failed rollouts no job reported (this version's,
 * and the warnings of those standing from earlier manifests), then the closing line, or the JSON document. Its exit code.
 */
export function report(io: CommandIo, r: ApplyReport): 0 | 1 {
  const { gathered, text } = r;
  // A failure that stands from earlier manifests on a resource this apply did not write is a warning (unless --strict).
  const standing = standingKeys(r.states, r.outcomes, gathered.input.applied, gathered.version);
  const verdict = r.states.map((s) => ({ ...s, standing: standing.has(s.key) }));
  const converged = applyConverged(r.result, verdict, r.end);
  // A rollout found failed with nothing to write (a re-run after a failed build): named like one the wait found.
  const failures = failedRollouts(r.resources, r.results, standing);
  const lastWrite = (key: string) => gathered.input.applied.get(key)?.manifestVersion;
  const warnings = failures.standing.map((f) => ({ key: f.key, message: standingLine(f, lastWrite(f.key)).trim() }));
  if (text)
    for (const f of failures.failedBefore)
      io.stdout.write(
        `${failedRolloutLine(f.key, liveIdOf(gathered.resources.get(f.key), gathered.live.deployments), f.health.message)}\n`,
      );
  if (text) for (const f of failures.standing) io.stdout.write(`${standingLine(f, lastWrite(f.key))}\n`);
  if (text) io.stdout.write(closingLine(r.results, converged, r.result, r.interrupted, failures) + '\n');
  else
    io.stdout.write(
      JSON.stringify(
        { format_version: '1', plan: r.result, results: r.results, resources: r.resources, converged, warnings },
        null,
        2,
      ) + '\n',
    );
  return applyExitCode(r.result, verdict, r.end);
}
