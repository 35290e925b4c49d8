// The in-process run of `converge apply`'s jobs (all of them, or a wave's part), printing each result as its job ends.
import type { Outcome } from '../core/decide.js';
import { runApply, STALLED_CHECK_MS } from '../apply/apply.js';
import type { JobEnd } from '../apply/wait-jobs.js';
import { jobResults } from '../apply/apply-state.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';
import type { QueueLogger } from '../jobs/queue/log.js';
import type { Jobs } from '../jobs/open-jobs.js';
import type { Gathered } from '../observe/gather.js';
import type { CommandIo } from './command.js';
import type { openTarget, ServiceSettings } from './target.js';
import type { Progress } from './tty.js';
import { resultLines } from './apply-report.js';
import { behindReporter } from './apply-stderr.js';

/** What the in-process run of a part of the apply's jobs reads. */
export interface JobRunnerContext {
  jobs: Jobs;
  client: Awaited<ReturnType<typeof openTarget>>['client'];
  io: CommandIo;
  progress: Progress;
  log: QueueLogger;
  settings: ServiceSettings;
  version: Gathered['version'];
  outcomes: ReadonlyMap<string, Outcome>;
  text: boolean;
  signal: AbortSignal;
}

/** Runs jobs (all of the apply's, or a wave's part) through runApply, printing each result as its job ends. */
export function jobRunner(c: JobRunnerContext): (part: DecidedJob[]) => Promise<JobEnd[]> {
  return (part) =>
    runApply({
      signal: c.signal,
      onWaitingBehind: behindReporter(c.io, c.progress),
      jobs: c.jobs,
      client: c.client,
      env: c.io.env,
      changes: part,
      jobOptions: {
        deleteTracingProjects: c.settings.pruneTracingProjects,
        ...(c.version ? { manifestVersion: c.version } : {}),
      },
      log: c.log,
      // Each write is printed below with its fields: the runner's own info line would repeat it on stderr. The jobs of a
      // run that died are handed on 5 s after their lock expires (BullMQ's default check comes every 30 s).
      worker: { logWrites: false, stalledInterval: STALLED_CHECK_MS },
      onProgress: (finished, total, latest) => {
        if (c.text) c.progress.write(c.io.stdout, resultLines(jobResults(c.outcomes, [latest])[0]!).join('\n') + '\n');
        c.progress.show(`applying ${finished}/${total} ...`);
      },
    });
}
