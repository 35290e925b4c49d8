// What `converge apply DIR [--wait]` runs (its flags and --help are in apply.ts, loaded without this).
import { APPLY_FORMATS } from './values.js';
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { UsageError } from '../../core/errors.js';
import type { SavedPlan } from '../../core/saved-plan/schema.js';
import { planCheckOf, readPlanFile } from '../plan-file.js';
import { checkedChanges, claimPlanned, deletesOfPlan, settingsOfPlan } from '../saved-plan.js';
import { applyExitCode } from '../../core/exit-code.js';
import type { Plan } from '../../core/model.js';
import type { Outcome } from '../../core/decide.js';
import { applyRecordedBy } from '../../apply/apply.js';
import { changesToApply } from '../../apply/apply-jobs.js';
import type { QueueLogger } from '../../jobs/queue/log.js';
import { openJobs, type Jobs } from '../../jobs/open-jobs.js';
import { rolloutsToFollow } from '../../apply/rollouts-to-follow.js';
import { waitAndReport } from '../apply-wait.js';
import { applyStates, jobResults, type ResourceResult } from '../../apply/apply-state.js';
import type { Gathered } from '../../observe/gather.js';
import { recordDeclarations } from '../../observe/corridor.js';
import { commandCorridor } from '../cli-corridor.js';
import type { CommandIo, ParsedArgs } from '../command.js';
import { resolveSettings } from '../settings.js';
import { EMBEDDED, EMBEDDED_BANNER, openTarget, requireApiUrl, retryLine, type ServiceSettings } from '../target.js';
import { progressLine, type Progress } from '../tty.js';
import { shownFrom, shownPlace, shownPlan } from '../paths.js';
import { approveApply } from '../approve.js';
import { interruptedLines, planLines, resultLines } from '../apply-report.js';
import { targetsOf } from '../partial-plan.js';
import { isWaved, waveSteps } from '../../apply/waves.js';
import { applyWaved } from '../apply-waves.js';
import { applyWindow, markOverridden, WINDOW_HELD_EXIT } from '../apply-window.js';
import { catchInterrupt } from '../apply-interrupt.js';
import { lineLogger } from '../apply-stderr.js';
import { report } from '../apply-verdict.js';
import { jobRunner } from '../apply-job-runner.js';

/** apply without --wait on a change in several waves: the first wave written, the others waiting (docs/rollouts.md). */
const WAVES_WAITING_EXIT = 3;

/** Runs `converge apply DIR [--wait]`; returns the exit code. */
export async function runApplyCommand(args: ParsedArgs, io: CommandIo, usage: string): Promise<number> {
  const output = (args.values.output as string | undefined) ?? 'text';
  if (!APPLY_FORMATS.includes(output as (typeof APPLY_FORMATS)[number]))
    throw new UsageError(`--output "${output}" is not one of ${APPLY_FORMATS.join(', ')}`);
  const { saved, settings, dir, targets } = await applyInputs(args, io, usage);
  // Text names files from the working directory: the directory as typed, or as the saved plan's `plan DIR` typed it.
  const shown = shownFrom(saved ? saved.manifests.dir : args.positionals[0]!);
  const embedded = settings.apiUrl === EMBEDDED;
  // First line: nothing an embedded apply does reaches a real service (on stderr with JSON: stdout is one document).
  if (embedded) (output === 'text' ? io.stdout : io.stderr).write(`${EMBEDDED_BANNER}\n`);
  const progress = progressLine(io);
  const log = lineLogger(io, settings.logLevel, progress);
  // Redis first: an unreachable Redis is one line before anything else starts.
  const jobs = await openJobs(settings, {
    private: embedded,
    target: { apiUrl: settings.apiUrl, tenantId: settings.tenantId },
    log,
  });
  let target: Awaited<ReturnType<typeof openTarget>> | undefined;
  // From here on SIGINT/SIGTERM stop the apply in order: one that comes while planning means nothing is enqueued.
  const interrupt = catchInterrupt(io, progress);
  try {
    target = await openTarget(settings, {
      onRetry: (info) => progress.write(io.stderr, `converge apply: ${retryLine(info)}\n`),
    });
    const run: ApplyRun = {
      args,
      io,
      settings,
      saved,
      dir,
      targets,
      shown,
      text: output === 'text',
      output,
      progress,
      log,
      jobs,
      client: target.client,
      interrupt,
    };
    const approved = await planAndApprove(run);
    return typeof approved === 'number' ? approved : await writeAndReport(run, approved);
  } finally {
    interrupt.release();
    await jobs.close();
    await target?.close();
  }
}

/** What one apply works with, once its settings are resolved and Redis and the service are open. */
interface ApplyRun {
  args: ParsedArgs;
  io: CommandIo;
  settings: ServiceSettings;
  saved: SavedPlan | undefined;
  dir: string;
  targets: string[];
  shown: ReturnType<typeof shownFrom>;
  text: boolean;
  output: string;
  progress: Progress;
  log: QueueLogger;
  jobs: Jobs;
  client: Awaited<ReturnType<typeof openTarget>>['client'];
  interrupt: ReturnType<typeof catchInterrupt>;
}

/** What an apply planned and may write: the plan, each resource's decided outcome, and the changes approved. */
interface ApprovedApply {
  gathered: Gathered;
  result: Plan;
  outcomes: Map<string, Outcome>;
  changes: ReturnType<typeof changesToApply>;
}

/**
 * Plans through the corridor, checks a saved plan, prints the plan, and asks the change window and the person at the
 * terminal: the changes to write, or the exit code when nothing may be written.
 */
async function planAndApprove(run: ApplyRun): Promise<ApprovedApply | number> {
  const { io, settings, saved, jobs, progress, text } = run;
  const prune = {
    enabled: settings.prune && run.targets.length === 0,
    maxDeletes: settings.maxDeletes,
    // apply --plan takes whether the service deletes from the plan: a plan refused sends no DELETE probe.
    ...(saved ? { deletes: deletesOfPlan(saved) } : {}),
  };
  // The corridor of every reconcile (src/cli/cli-corridor.ts): health is read, not guessed.
  const {
    gathered,
    plan: result,
    outcomes,
  } = await commandCorridor({
    mode: 'apply',
    settings,
    io,
    dir: run.dir,
    progress,
    prune,
    targets: run.targets,
    client: run.client,
    applied: jobs.applied,
    loaded: () => progress.clear(),
  });
  // A saved plan is checked before anything is written (the keep marks below included); stale: one line, exit 1.
  const planned = saved
    ? await claimPlanned(saved, jobs, () => checkedChanges(saved, gathered, result, outcomes))
    : undefined;
  if (text) io.stdout.write(planLines(shownPlan(result, run.shown), outcomes).join('\n') + '\n');
  // What could not be read is unknown: while a file of the tree fails to load nothing is written, unless --allow-partial.
  const refused = gathered.input.unreadable !== undefined && !settings.allowPartial;
  const changes =
    planned ??
    changesToApply(
      outcomes,
      result.changes,
      gathered.resources,
      gathered.live.deployments,
      gathered.input.secretHashes,
    );
  // A person at a terminal says "yes" to the plan before anything is recorded or enqueued (src/cli/approve.ts).
  const approval = {
    autoApprove: settings.autoApprove,
    text,
    saved: saved !== undefined,
    changes: changes.length,
    apiUrl: settings.apiUrl,
    signal: run.interrupt.signal,
  };
  // Change windows (docs/rollouts.md): in a blocking one, apply writes only where it allows manual writes, or with --override-window.
  const window =
    changes.length > 0 && !refused
      ? applyWindow(settings.windows, await jobs.now(), run.args.values['override-window'] === true)
      : { go: true };
  if ('held' in window) {
    (text ? io.stdout : io.stderr).write(`${text ? '' : 'converge apply: '}${window.held}\n`);
    return WINDOW_HELD_EXIT;
  }
  if ('overridden' in window) {
    run.log.warn({ by: applyRecordedBy() }, window.overridden);
    markOverridden(outcomes);
  }
  if (!refused && !(await approveApply(io, approval))) return 1;
  await recordDeclarations(jobs.applied, gathered);
  if (refused)
    return refuseUnreadable(
      io,
      run.output,
      (gathered.input.unreadable ?? []).map((place) => shownPlace(place, run.shown)),
      result,
      outcomes,
    );
  return { gathered, result, outcomes, changes };
}

/** Writes the approved changes (wave by wave when they span waves), follows them with --wait, and reports: the exit code. */
async function writeAndReport(run: ApplyRun, approved: ApprovedApply): Promise<number> {
  const { io, settings, jobs, progress, log, text, client, interrupt } = run;
  const { gathered, result, outcomes, changes } = approved;
  const runJobs = jobRunner({
    jobs,
    client,
    io,
    progress,
    log,
    settings,
    version: gathered.version,
    outcomes,
    text,
    signal: interrupt.signal,
  });
  // A change in several waves goes wave by wave (src/cli/apply-waves.ts); in one wave, all at once as ever.
  const steps = waveSteps(changes, gathered.resources, run.saved?.writes, gathered.input.applied);
  const waitAsked = run.args.values.wait === true;
  const follow = (rs: ResourceResult[]) =>
    waitAndReport({ client, results: rs, settings, io, progress, text, resources: gathered.resources });
  const waved = isWaved(steps)
    ? await applyWaved({
        steps,
        wait: waitAsked,
        limit: settings.waveMaxInFlight,
        outcomes,
        version: gathered.version,
        run: runJobs,
        interrupted: () => interrupt.signal.aborted,
        follow,
      })
    : undefined;
  const ends = waved?.ends ?? (await runJobs(changes));
  interrupt.release();
  progress.clear();
  // Each job's raw result folded as the daemon folds it (src/apply/apply-state.ts): `results` and the exit code read that.
  const applied = waved?.results ?? jobResults(outcomes, ends, gathered.version);
  if (text) for (const line of interruptedLines(applied)) io.stdout.write(`${line}\n`);
  if (text)
    for (const r of applied.filter((a) => a.status === 'held')) io.stdout.write(`${resultLines(r).join('\n')}\n`);
  // --wait follows the revisions the jobs started and the rollouts already in progress (nothing is written for those).
  const waiting = waitAsked && !interrupt.signal.aborted;
  const results = waiting ? rolloutsToFollow(applied, outcomes, gathered.live.deployments) : applied;
  // The waves followed their own rollouts: only those already in progress before the apply are left (none after a failed wave).
  const toFollow = waved
    ? waved.stopped
      ? []
      : results.filter((r) => r.startedBy === 'earlier' && r.revision === undefined)
    : results;
  if (waiting && toFollow.length > 0) await follow(toFollow);
  const meta = { at: new Date().toISOString(), by: applyRecordedBy(), manifests: gathered.version };
  const { states, resources, records } = applyStates(outcomes, ends, results, { version: gathered.version, meta });
  // What followed each decision (a Conflict its job met, a revision --wait read) joins the worker's entries of its jobs.
  await jobs.record
    .append(records)
    .catch((error: unknown) =>
      log.warn({ error: (error as Error).message.split('\n')[0] }, 'could not record the apply in the event log'),
    );
  const end = { interrupted: interrupt.reason !== undefined, waited: waiting, strict: run.args.values.strict === true };
  const verdict = report(io, {
    text,
    result,
    states,
    resources,
    results,
    outcomes,
    gathered,
    end,
    interrupted: interrupt.reason,
  });
  // Without --wait, later waves wait: one line, and exit 3 (docs/commands.md), unless the first wave failed already.
  if (waved?.waitingLine)
    (text ? io.stdout : io.stderr).write(`${text ? '' : 'converge apply: '}${waved.waitingLine}\n`);
  const code = waved?.waitingLine && firstWaveDone(applied, result) ? WAVES_WAITING_EXIT : verdict;
  // A handed-back job's request may still be open: it must not hold the process until the service answers.
  if (interrupt.reason) setTimeout(() => process.exit(code), INTERRUPTED_EXIT_MS).unref();
  return code;
}

/**
 * The settings and manifest directory of this apply: the user's with DIR; with --plan FILE, the saved plan's (read
 * whole and checked before Redis or the service is opened) and no DIR.
 */
async function applyInputs(
  args: ParsedArgs,
  io: CommandIo,
  usage: string,
): Promise<{ saved: SavedPlan | undefined; settings: ServiceSettings; dir: string; targets: string[] }> {
  const file = args.values.plan as string | undefined;
  const settings = requireApiUrl(await resolveSettings(args, io.env));
  if (file === undefined) {
    if (args.values['skip-signature-check'] === true)
      throw new UsageError('--skip-signature-check is about a saved plan: give it with --plan FILE');
    if (args.positionals.length !== 1) throw new UsageError(`wrong number of arguments; usage: ${usage}`);
    return { saved: undefined, settings, dir: resolve(io.cwd, args.positionals[0]!), targets: targetsOf(args) };
  }
  if (args.positionals.length > 0)
    throw new UsageError('--plan FILE applies the manifests the plan names: give no DIR');
  const saved = readPlanFile(resolve(io.cwd, file), planCheckOf(args.values, io.env));
  const dir = resolve(io.cwd, saved.manifests.dir);
  if (!isAbsolute(saved.manifests.dir) && !existsSync(dir)) {
    const named = saved.manifests.dir;
    throw new UsageError(
      `the plan's manifest directory "${named}" is relative to the directory the plan was made in, and ${dir} does not exist from here: run apply --plan in the directory where "converge plan ${named} --out" ran, or give it with "converge --chdir DIR apply --plan FILE" (FILE is then read from DIR too)`,
    );
  }
  const targets = targetsOf(args);
  return { saved, settings: settingsOfPlan(saved, settings, args.values, targets), dir, targets };
}

/**
 * While a file of the tree fails to load, apply writes nothing: one line naming each such file at its first error (in
 * JSON, on stderr, after the document: the plan, no results, not converged). Exit 1.
 */
function refuseUnreadable(
  io: CommandIo,
  output: string,
  unreadable: readonly string[],
  result: Plan,
  outcomes: ReadonlyMap<string, Outcome>,
): 1 {
  const them = unreadable.length === 1 ? 'it' : 'them';
  const line = `Apply refused: nothing was written: ${unreadable.join(', ')} ${unreadable.length === 1 ? 'fails' : 'fail'} to load; fix ${them} and run again, or give --allow-partial to write the resources of the files that load (nothing is deleted while a file fails to load).`;
  if (output === 'text') {
    io.stdout.write(`${line}\n`);
    return 1;
  }
  io.stdout.write(
    JSON.stringify(
      {
        format_version: '1',
        plan: result,
        results: [],
        resources: applyStates(outcomes, [], []).resources,
        converged: false,
      },
      null,
      2,
    ) + '\n',
  );
  io.stderr.write(`converge apply: ${line}\n`);
  return 1;
}

/** apply without --wait on several waves: whether its first wave was written whole (no job failed) from a plan with no error. */
function firstWaveDone(applied: readonly ResourceResult[], result: Plan): boolean {
  return (
    applyExitCode(result, [], {}) === 0 &&
    applied.every((r) => r.status === 'done' || r.status === 'unchanged' || r.status === 'held')
  );
}

/** After an interrupt, how long the process may take to close its connections before it exits anyway. */
const INTERRUPTED_EXIT_MS = 1_000;
