// What `converge plan DIR` runs (its flags and --help are in plan.ts, loaded without this): its arguments checked and its manifests' load started, then plan-live.ts.
import { PLAN_FORMATS } from './values.js';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors.js';
import { EMBEDDED, requireApiUrl } from '../api-url.js';
import { commandTree } from '../environment.js';
import { resolveSettings } from '../settings.js';
import { planCheckOf, planKeyOf, readPlanFile } from '../plan-file.js';
import { targetsOf } from '../partial-plan.js';
import { APPLIED_STATE_URL_ENV } from '../../store/applied-state-document.js';
import { startTreeLoad } from '../../observe/tree-load.js';
import type { ListingAhead } from '../../observe/listing-ahead.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/**
 * Runs `converge plan DIR`; returns the exit code. `ahead`: the directory's listing plan.ts began before this module
 * loaded (plan.ts closes the compile threads it started). The manifests start loading here, before the service client,
 * Redis and the rest of the plan load (plan-live.ts), so the compile threads get their first batches meanwhile.
 */
export async function runPlanCommand(
  args: ParsedArgs,
  io: CommandIo,
  usage: string,
  ahead?: ListingAhead,
): Promise<number> {
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
    const saved = readPlanFile(resolve(io.cwd, show), planCheckOf(args.values, io.env));
    return (await import('../saved-plan.js')).showSavedPlan(saved, output, io, { detailed, showOrphans });
  }
  if (args.values['skip-signature-check'] === true)
    throw new UsageError('--skip-signature-check is about a saved plan: give it with --show FILE');
  if (args.positionals.length !== 1) throw new UsageError(`wrong number of arguments; usage: ${usage}`);
  if (out !== undefined && args.values['no-applied-state'] === true)
    throw new UsageError(
      '--out cannot be given with --no-applied-state: apply --plan checks the plan against the applied state, so the plan must read it too',
    );
  const stateUrl = appliedStateUrlOf(args.values, io.env);
  const settings = requireApiUrl(resolveSettings(args, io.env));
  if (stateUrl !== undefined && settings.apiUrl === EMBEDDED)
    throw new UsageError(
      "--applied-state-url reads a daemon's applied state, which cannot describe the embedded emulator (it starts empty): give --api-url the daemon's service",
    );
  // Read (and a short key refused) before anything is listed.
  const key = out === undefined ? undefined : planKeyOf(io.env);
  const targets = targetsOf(args);
  const dir = resolve(io.cwd, args.positionals[0]!);
  const stop = new AbortController();
  const started = startTreeLoad(commandTree(settings, io, dir, ahead), stop.signal);
  try {
    // The walk and the read of the files come first on this thread: the rest loads while the threads compile.
    await started.compiling;
    const { planLive } = await import('./plan-live.js');
    return await planLive(
      { io, settings, dir, targets, started, output, detailed, showOrphans, key, out },
      args,
      stateUrl,
    );
  } finally {
    // On every way out: a load the plan no longer waits for (the service could not be opened) stops reading and compiling.
    stop.abort();
  }
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
