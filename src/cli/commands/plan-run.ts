// What `converge plan DIR` runs (its flags and --help are in plan.ts, loaded without this).
import { PLAN_FORMATS } from './values.js';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors.js';
import { planExitCode } from '../../core/exit-code.js';
import { savedPlanText } from '../../core/saved-plan/schema.js';
import { versionLabel } from '../../core/manifest-version.js';
import { heldNotes } from '../../plan/outcomes.js';
import { commandCorridor } from '../cli-corridor.js';
import type { Corridor } from '../../observe/corridor.js';
import type { AppliedRecord } from '../../core/model.js';
import type { ResourceHold } from '../../core/holds.js';
import { resolveSettings } from '../settings.js';
import { EMBEDDED, openTarget, requireApiUrl, retryLine, type ServiceSettings } from '../target.js';
import { progressLine } from '../tty.js';
import { planCheckOf, planKeyOf, readPlanFile, writePlanFile } from '../plan-file.js';
import { PLAN_KEY_ENV } from '../../core/saved-plan/signature.js';
import { printPlan, savedPlanContent, showSavedPlan } from '../saved-plan.js';
import { targetsOf } from '../partial-plan.js';
import { shownFrom } from '../paths.js';
import { APPLIED_STATE_URL_ENV, STATE_TOKEN_ENV } from '../../store/applied-state-document.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** Why the plan is blind to what converge last wrote: secrets the service hides, and existing providers. */
const BLIND =
  'secrets and OAuth providers are planned without knowing what converge last wrote, so they may show changes that are not there';

/** The applied records the plan reads, and the note it carries when it read none. */
interface AppliedRead {
  records: Map<string, AppliedRecord>;
  /** The daemon's holds on the prefix (src/store/holds-store.ts), when read. */
  holds?: Map<string, ResourceHold>;
  note?: string;
}

/**
 * The applied state: not read with --no-applied-state or against the embedded emulator (it starts fresh: no
 * record could describe it). A Redis URL the user gave must answer (else one line, exit 1); the shipped default
 * (redis://127.0.0.1:6379) is only tried, and when it does not answer the plan says it ran without.
 */
async function readApplied(
  settings: ServiceSettings,
  skip: boolean,
  saving: boolean,
  from?: { url: string; token: string | undefined },
): Promise<AppliedRead> {
  // A daemon's GET /applied-state serves what the Redis reads below return, so the plan (and a saved one) is the same.
  if (from) return (await import('../applied-state-url.js')).readAppliedStateUrl(from.url, from.token);
  if (settings.apiUrl === EMBEDDED) return { records: new Map() };
  if (skip) return { records: new Map(), note: `applied state not read (--no-applied-state): ${BLIND}` };
  const { readAppliedState } = await import('../../store/applied-state.js');
  const state = await readAppliedState(settings);
  if (!state.warning) return { records: state.records, ...(state.holds ? { holds: state.holds } : {}) };
  const warning = state.warning.replace(/; planning without applied state$/, '');
  // apply --plan decides again with the applied state: a saved plan made without it would never hold.
  if (saving)
    throw new UsageError(
      `${warning}; --out saves a plan that apply --plan checks against the applied state: give the --redis-url and --redis-prefix apply uses`,
    );
  if (settings.explicit.has('redisUrl')) {
    throw new UsageError(`${warning}; give --no-applied-state to plan without it`);
  }
  return {
    records: new Map(),
    note: `applied state not read: no Redis configured (--redis-url, REDIS_URL) and none answers at ${settings.redisUrl}: ${BLIND}`,
  };
}

/** Runs `converge plan DIR`; returns the exit code. */
export async function runPlanCommand(args: ParsedArgs, io: CommandIo, usage: string): Promise<number> {
  const output = (args.values.output as string | undefined) ?? 'text';
  if (!PLAN_FORMATS.includes(output as (typeof PLAN_FORMATS)[number])) {
    throw new UsageError(`--output "${output}" is not one of ${PLAN_FORMATS.join(', ')}`);
  }
  const detailed = args.values['detailed-exitcode'] === true;
  const showOrphans = args.values['show-orphans'] === true;
  const show = args.values.show as string | undefined;
  const out = args.values.out as string | undefined;
  if (show !== undefined) {
    if (args.positionals.length > 0 || out !== undefined)
      throw new UsageError('--show FILE prints a saved plan: give it no DIR and no --out');
    return showSavedPlan(readPlanFile(resolve(io.cwd, show), planCheckOf(args.values, io.env)), output, io, {
      detailed,
      showOrphans,
    });
  }
  if (args.values['skip-signature-check'] === true)
    throw new UsageError('--skip-signature-check is about a saved plan: give it with --show FILE');
  if (args.positionals.length !== 1) throw new UsageError(`wrong number of arguments; usage: ${usage}`);
  if (out !== undefined && args.values['no-applied-state'] === true)
    throw new UsageError(
      '--out cannot be given with --no-applied-state: apply --plan checks the plan against the applied state, so the plan must read it too',
    );
  const stateUrl = appliedStateUrlOf(args.values, io.env);
  const settings = requireApiUrl(await resolveSettings(args, io.env));
  if (stateUrl !== undefined && settings.apiUrl === EMBEDDED)
    throw new UsageError(
      "--applied-state-url reads a daemon's applied state, which cannot describe the embedded emulator (it starts empty): give --api-url the daemon's service",
    );
  // Read (and a short key refused) before anything is listed.
  const key = out === undefined ? undefined : planKeyOf(io.env);
  const targets = targetsOf(args);
  const dir = resolve(io.cwd, args.positionals[0]!);
  // Read (Redis client loaded, connected, one HGETALL) while the live pages are listed.
  const applied = readApplied(
    settings,
    args.values['no-applied-state'] === true,
    out !== undefined,
    stateUrl === undefined ? undefined : { url: stateUrl, token: io.env[STATE_TOKEN_ENV] },
  );
  applied.catch(() => undefined);
  const progress = progressLine(io);
  const target = await openTarget(settings, {
    onRetry: (info) => progress.write(io.stderr, `converge plan: ${retryLine(info)}\n`),
  });
  try {
    const planned = await planDirectory({ io, settings, dir, targets, progress, client: target.client, applied });
    printPlan(planned.plan, output, io, showOrphans, shownFrom(args.positionals[0]!));
    const code = planExitCode(planned.plan, detailed);
    if (out === undefined) return code;
    return savePlan(io, { out, key, code, dir: args.positionals[0]!, settings, targets, planned });
  } finally {
    await target.close();
  }
}

/** What one plan reads: its settings, the manifest directory and targets, and the applied state being read. */
interface PlanInputs {
  io: CommandIo;
  settings: ServiceSettings;
  dir: string;
  targets: string[];
  progress: ReturnType<typeof progressLine>;
  client: Awaited<ReturnType<typeof openTarget>>['client'];
  applied: Promise<AppliedRead>;
}

/** The plan of the directory through the corridor, with the notes of the writes the daemon holds. */
async function planDirectory(p: PlanInputs): Promise<Corridor> {
  const { io, settings, dir, targets, progress } = p;
  const appliedRead = { records: new Map<string, AppliedRecord>() } as AppliedRead;
  const records = {
    getAll: async () => {
      Object.assign(appliedRead, await p.applied);
      return appliedRead.records;
    },
  };
  const prune = { enabled: settings.prune && targets.length === 0, maxDeletes: settings.maxDeletes };
  // The corridor of every reconcile (src/cli/cli-corridor.ts): health is read, not guessed (a note per rollout).
  const planned = await commandCorridor({
    mode: 'plan',
    settings,
    io,
    dir,
    progress,
    prune,
    targets,
    client: p.client,
    applied: records,
    loaded: (loaded) => {
      progress.write(io.stderr, filesLine(loaded.files.length, dir));
      progress.clear();
      if (!appliedRead.note) return;
      loaded.input.notes = [appliedRead.note, ...(loaded.input.notes ?? [])];
      loaded.input.ownershipKnown = false;
    },
  });
  const result = planned.plan;
  // The writes the daemon holds (NameTaken, WriteRefused, RevisionFailed) are said, as the daemon will not send them.
  const held = heldNotes(result.changes, planned.fingerprints, appliedRead.holds);
  if (held.length > 0) result.notes = [...(result.notes ?? []), ...held];
  return planned;
}

/** What `--out FILE` saves: the plan made, where, signed with which key, and the plan's exit code. */
interface PlanToSave {
  out: string;
  /** The signing key (`CONVERGE_PLAN_KEY`), when set. */
  key: string | undefined;
  code: number;
  /** The manifest directory as typed. */
  dir: string;
  settings: ServiceSettings;
  targets: string[];
  planned: Corridor;
}

/** Saves the plan to `--out FILE` (signed when a key is set), unless it holds errors; the plan's exit code. */
function savePlan(io: CommandIo, s: PlanToSave): number {
  const { out, key, code } = s;
  const { gathered, plan: result, outcomes } = s.planned;
  // A plan with an error (a file that fails to load, a blocked resource, a refused prune) is not saved: apply --plan could only refuse it.
  if (code === 1) {
    io.stderr.write(
      `converge plan: no plan saved to ${out}: the plan holds errors (listed in it); fix them and plan again\n`,
    );
    return code;
  }
  const file = resolve(io.cwd, out);
  writePlanFile(file, savedPlanText(savedPlanContent(s.dir, s.settings, gathered, result, outcomes, s.targets), key));
  io.stderr.write(
    `converge plan: ${key === undefined ? 'plan' : `plan signed (${PLAN_KEY_ENV}) and`} saved to ${out} (manifests ${versionLabel(gathered.version)}); apply exactly it with "converge apply --plan ${out}"\n`,
  );
  return code;
}

/**
 * --applied-state-url (or CONVERGE_APPLIED_STATE_URL), checked against the other ways of reading the applied state: with
 * it the plan reads no Redis, so --no-applied-state, --redis-url and --redis-prefix on the command line are refused (two
 * sources asked for at once); REDIS_URL and the config file's redis keys are left unread (a CI job may set them for
 * other steps).
 */
function appliedStateUrlOf(values: Readonly<Record<string, unknown>>, env: NodeJS.ProcessEnv): string | undefined {
  const flag = values['applied-state-url'] as string | undefined;
  const url = flag ?? (env[APPLIED_STATE_URL_ENV] || undefined);
  if (url === undefined) return undefined;
  const named = flag !== undefined ? '--applied-state-url' : APPLIED_STATE_URL_ENV;
  if (values['no-applied-state'] === true)
    throw new UsageError(`--no-applied-state cannot be given with ${named}: give one of them`);
  const redis = ['redis-url', 'redis-prefix'].filter((flagName) => values[flagName] !== undefined);
  if (redis.length > 0)
    throw new UsageError(
      `--${redis.join(' and --')} cannot be given with ${named}: the plan reads the applied state from the daemon's endpoint, not from Redis; give one of them`,
    );
  return url;
}

/** How many manifest files were read, for stderr (stdout holds the plan): an empty or wrong directory shows at once. */
function filesLine(files: number, dir: string): string {
  return `converge plan: read ${files} manifest file${files === 1 ? '' : 's'} in ${dir}\n`;
}
