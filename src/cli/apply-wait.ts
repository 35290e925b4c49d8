// `converge apply --wait` as the CLI shows it: which rollouts it waits for, their progress on stderr, and one line per revision at the end.
import type { DesiredResource } from '../core/model.js';
import { formatElapsed } from '../core/health.js';
import type { ResourceResult } from '../apply/apply-state.js';
import { waitForRevisions, type WaitProgress } from '../apply/wait-revisions.js';
import type { CommandIo } from './command.js';
import { failedBuildLines } from './log-tail.js';
import type { Settings } from './settings.js';
import type { openTarget } from './target.js';
import type { Progress } from './tty.js';

/** What --wait needs: the service, the results to follow (rolloutsToFollow), the wait settings, where to print, and the declared resources (for masking). */
export interface WaitReport {
  client: Awaited<ReturnType<typeof openTarget>>['client'];
  results: ResourceResult[];
  settings: Settings;
  io: CommandIo;
  progress: Progress;
  text: boolean;
  resources: ReadonlyMap<string, DesiredResource>;
}

/**
 * --wait: says which rollouts already in progress it waits for (on stdout, or stderr with JSON: stdout is one document),
 * follows each new revision and each of those until it is active or fails, then prints one line per revision and,
 * under a failed one, the last lines of its build log (secret values masked): why it failed, where the failure is told.
 */
export async function waitAndReport(w: WaitReport): Promise<void> {
  for (const r of w.results) {
    if (r.startedBy === 'earlier')
      (w.text ? w.io.stdout : w.io.stderr).write(`${w.text ? '  ' : 'converge apply: '}${inProgressLine(r)}\n`);
  }
  await waitForRevisions(w.client, w.results, {
    timeoutMs: w.settings.waitTimeout,
    progressDeadlineMs: w.settings.progressDeadline,
    pollMs: w.settings.healthPoll,
    onProgress: waitReporter(w.io, w.progress),
  });
  w.progress.clear();
  if (!w.text) return;
  for (const r of w.results) {
    if (!r.revision) continue;
    w.io.stdout.write(revisionLine(r, w.settings) + '\n');
    const failedRevision =
      r.revision === 'failed' && r.revisionStatus ? (r.health?.revisionId ?? r.latestRevisionId) : undefined;
    if (!failedRevision || !r.deploymentId) continue;
    const lines = await failedBuildLines(w.client, r.deploymentId, failedRevision, w.resources.get(r.key), w.io.env);
    if (lines.length > 0) w.io.stdout.write(lines.join('\n') + '\n');
  }
}

/** "waiting for revision r-123 of Deployment/foo, already building (not started by this apply)". */
function inProgressLine(r: ResourceResult): string {
  const what = r.latestRevisionId ? `revision ${r.latestRevisionId} of ${r.key}` : `the rollout of ${r.key}`;
  return `waiting for ${what}, already building (not started by this apply)`;
}

/** The revision a line is about: "new revision" (this apply's), or the one already in progress, by its id. */
function revisionNoun(r: ResourceResult): string {
  if (r.startedBy !== 'earlier') return 'new revision';
  return `${r.latestRevisionId ? `revision ${r.latestRevisionId}` : 'the rollout'} (already building, not started by this apply)`;
}

/**
 * The line of a failed rollout, with the deployment's id always named (its build log is read by it): one the wait
 * followed, or one found failed with nothing to write (a re-run after a failed build).
 */
export function failedRolloutLine(key: string, deploymentId: string | undefined, said: string): string {
  return `  ${'failed'.padEnd(9)} ${key} (deployment ${deploymentId ?? 'id not known'}): ${said}`;
}

function revisionLine(r: ResourceResult, settings: Settings): string {
  const noun = revisionNoun(r);
  switch (r.revision) {
    case 'active':
      if (r.startedBy === 'earlier') return `  ${'active'.padEnd(9)} ${r.key}: ${noun} is active`;
      return `  ${'active'.padEnd(9)} ${r.key}: new revision is active${r.latestRevisionId ? ` (revision ${r.latestRevisionId})` : ''}`;
    case 'failed': {
      const said = r.health
        ? `${r.health.message}${r.startedBy === 'earlier' ? ' (not started by this apply)' : ''}`
        : `its ${noun} failed`;
      return failedRolloutLine(r.key, r.deploymentId, said);
    }
    case 'building':
      return `  ${'building'.padEnd(9)} ${r.key}: ${noun} still building; not waited for after another failed`;
    default:
      return `  ${'timeout'.padEnd(9)} ${r.key}: ${noun} not active after ${Math.round(settings.waitTimeout / 1000)}s`;
  }
}

/** How often the wait's progress is written when stderr is not a terminal (and whenever the counts change). */
const WAIT_REPORT_MS = 10_000;

/** The wait's progress: "waiting for 3 revisions: 1 active, 2 building [1m20s elapsed]", on stderr. */
function waitReporter(io: CommandIo, progress: Progress): (p: WaitProgress) => void {
  const tty = io.stderr.isTTY === true;
  let lastCounts = '';
  let lastAt = 0;
  return (p) => {
    const counts = `waiting for ${p.total} revision${p.total === 1 ? '' : 's'}: ${p.active} active, ${p.building} building${p.failed ? `, ${p.failed} failed` : ''}`;
    const line = `${counts} [${formatElapsed(p.elapsedMs)} elapsed]`;
    if (tty) {
      progress.show(line);
      return;
    }
    if (counts === lastCounts && Date.now() - lastAt < WAIT_REPORT_MS) return;
    lastCounts = counts;
    lastAt = Date.now();
    io.stderr.write(`converge apply: ${line}\n`);
  };
}
