// Saved plans in the CLI: what `plan --out` writes, what `plan --show` prints, and what `apply --plan` checks before it writes anything (docs/saved-plans.md).
import type { Outcome } from '../core/decide.js';
import { ConvergeError, UsageError } from '../core/errors.js';
import { planExitCode } from '../core/exit-code.js';
import { versionLabel } from '../core/manifest-version.js';
import { resourceKey, type Plan } from '../core/model.js';
import {
  SAVED_PLAN_FORMAT,
  SAVED_PLAN_VERSION,
  type SavedPlan,
  type SavedPlanContent,
} from '../core/saved-plan/schema.js';
import { staleLine, stalenessOf } from '../core/saved-plan/stale.js';
import { optionDifferences } from '../core/saved-plan/agree.js';
import { isNoDeletesNote, type DeploymentDeletes } from '../service/deployments.js';
import { changesToApply } from '../apply/apply-jobs.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';
import type { Jobs } from '../jobs/open-jobs.js';
import { observer, plannedChanges, plannedWrites, type Observation } from '../apply/saved-plan.js';
import type { Gathered } from '../observe/gather.js';
import { renderJson } from '../plan/render/json.js';
import { renderMarkdown } from '../plan/render/markdown.js';
import { renderText } from '../plan/render/text.js';
import type { CommandIo } from './command.js';
import { shownFrom, shownPlan, type ShownPath } from './paths.js';
import type { ServiceSettings } from './target.js';
import { useColor } from './tty.js';

/** The manifest inputs a saved plan names: `apply --plan` reads the files the plan names, never its own flags' (their content is checked). */
export const PLAN_FIXED_FLAGS = ['vars', 'overlay'] as const;

/** Prints a plan in one of plan's formats; text and markdown name its diagnostics' files as `shown` does (JSON as the plan holds them). */
export function printPlan(result: Plan, output: string, io: CommandIo, showOrphans: boolean, shown: ShownPath): void {
  if (output === 'json') io.stdout.write(renderJson(result));
  else if (output === 'markdown') io.stdout.write(renderMarkdown(shownPlan(result, shown)));
  else io.stdout.write(renderText(shownPlan(result, shown), { color: useColor(io.stdout, io.env), showOrphans }));
}

/** What one plan read, as the saved plan's writes are recorded from it. */
function observationOf(gathered: Gathered): Observation {
  return {
    resources: gathered.resources,
    secretHashes: gathered.input.secretHashes,
    live: gathered.live,
    applied: gathered.input.applied,
  };
}

/** A service's URL without a trailing slash: the same service however it was spelled. */
function serviceOf(settings: Pick<ServiceSettings, 'apiUrl' | 'tenantId'>): SavedPlan['service'] {
  return { api_url: settings.apiUrl.replace(/\/+$/, ''), tenant_id: settings.tenantId ?? null };
}

/** The saved plan of one `plan --out` run: the plan printed, each decided write and what it was decided against. */
export function savedPlanContent(
  dir: string,
  settings: ServiceSettings,
  gathered: Gathered,
  result: Plan,
  outcomes: ReadonlyMap<string, Outcome>,
  targets: readonly string[] = [],
): SavedPlanContent {
  const changes = changesToApply(
    outcomes,
    result.changes,
    gathered.resources,
    gathered.live.deployments,
    gathered.input.secretHashes,
  );
  return {
    format: SAVED_PLAN_FORMAT,
    format_version: SAVED_PLAN_VERSION,
    created_at: new Date().toISOString(),
    service: serviceOf(settings),
    manifests: {
      dir,
      vars: settings.vars,
      overlays: settings.overlays,
      version: gathered.version,
      content_id: gathered.contentId,
    },
    options: optionsOf(settings, targets),
    plan: result,
    writes: plannedWrites(changes, observationOf(gathered)),
  };
}

/** `plan --show FILE`: the saved plan as plan printed it (files from the directory it was made in), with no service; a line on stderr says what it is. */
export function showSavedPlan(
  saved: SavedPlan,
  output: string,
  io: CommandIo,
  options: { detailed: boolean; showOrphans: boolean },
): number {
  const writes = saved.writes.length;
  io.stderr.write(
    `converge plan: saved plan of ${saved.manifests.dir} (manifests ${versionLabel(saved.manifests.version)}) made ${saved.created_at}: ${writes} write${writes === 1 ? '' : 's'}, ${saved.checksum}\n`,
  );
  printPlan(saved.plan, output, io, options.showOrphans, shownFrom(saved.manifests.dir));
  return planExitCode(saved.plan, options.detailed);
}

/** The options one plan or apply decides with: prune is recorded off under --target (it deletes nothing then). */
function optionsOf(
  settings: Pick<ServiceSettings, 'prune' | 'maxDeletes' | 'adopt' | 'namePrefix'>,
  targets: readonly string[],
): SavedPlan['options'] {
  return {
    prune: settings.prune && targets.length === 0,
    max_deletes: settings.maxDeletes,
    adopt: settings.adopt,
    name_prefix: settings.namePrefix ?? null,
    ...(targets.length > 0 ? { targets: [...targets] } : {}),
  };
}

/**
 * The settings of `apply --plan`: the user's own (prune, max-deletes, adopt, name prefix, targets: from its command
 * line, environment and config file, never from the file), with the manifests the plan names. A plan whose options
 * differ from them is refused (E_PLAN_OPTIONS), so an edited file cannot turn prune on. The service must be the one
 * the plan was made against. Throws before anything is opened: nothing is read or sent.
 */
export function settingsOfPlan(
  saved: SavedPlan,
  settings: ServiceSettings,
  given: Readonly<Record<string, unknown>>,
  targets: readonly string[],
): ServiceSettings {
  const fixed = PLAN_FIXED_FLAGS.filter((flag) => given[flag] !== undefined);
  if (fixed.length > 0)
    throw new UsageError(
      `--${fixed.join(', --')} cannot be given with --plan: the plan names the files it was made from (give them to "converge plan --out")`,
    );
  const ours = serviceOf(settings);
  if (ours.api_url !== saved.service.api_url || ours.tenant_id !== saved.service.tenant_id) {
    const tenant = (id: string | null) => (id ? ` (tenant ${id})` : '');
    throw new ConvergeError(
      'E_PLAN_SERVICE',
      `the plan was made against ${saved.service.api_url}${tenant(saved.service.tenant_id)}, not ${ours.api_url}${tenant(ours.tenant_id)}: apply it to the service it was made against, or plan again`,
    );
  }
  const differ = optionDifferences(saved.options, optionsOf(settings, targets));
  if (differ.length > 0) {
    throw new ConvergeError(
      'E_PLAN_OPTIONS',
      `the plan's options are not this apply's: ${differ.join('; ')}; nothing was written; give apply --plan the --prune, --max-deletes, --adopt, --name-prefix and --target the plan was made with, or plan again`,
    );
  }
  return { ...settings, vars: saved.manifests.vars, overlays: saved.manifests.overlays };
}

/**
 * Whether the service deletes, as the saved plan found it (plan --out probed it): apply --plan sends no probe of its
 * own, so a plan refused sends nothing but reads. A plan whose prune was off for want of the endpoint says so in a note.
 */
export function deletesOfPlan(saved: SavedPlan): DeploymentDeletes {
  const note = saved.plan.notes?.find(isNoDeletesNote);
  return note === undefined ? { deletes: true } : { deletes: false, note };
}

/**
 * What `apply --plan` enqueues: the fresh plan's writes, once they are exactly the saved plan's and nothing they were
 * decided on changed. Throws E_PLAN_STALE (one line, what changed) otherwise: then nothing is written.
 */
export function checkedChanges(
  saved: SavedPlan,
  gathered: Gathered,
  result: Plan,
  outcomes: ReadonlyMap<string, Outcome>,
): DecidedJob[] {
  const fresh = changesToApply(
    outcomes,
    result.changes,
    gathered.resources,
    gathered.live.deployments,
    gathered.input.secretHashes,
  );
  const observation = observationOf(gathered);
  const observe = observer(observation);
  const staleness = stalenessOf(saved, {
    contentId: gathered.contentId,
    version: gathered.version,
    changes: result.changes,
    writes: plannedWrites(fresh, observation),
    observed: new Map(saved.writes.map((w) => [resourceKey(w.kind, w.name), observe(w.kind, w.name)])),
  });
  if (staleness.changed.length > 0) throw new ConvergeError('E_PLAN_STALE', staleLine(staleness.changed));
  return plannedChanges(fresh, saved.writes);
}

/**
 * A plan applied before on this Redis prefix is stale, whatever else holds; else `check` (which throws when it is stale),
 * then the plan is claimed (atomically: of two applies of one plan at once, one goes on).
 */
export async function claimPlanned<T>(saved: SavedPlan, jobs: Pick<Jobs, 'plans'>, check: () => T): Promise<T> {
  const applied = (at: string) =>
    new ConvergeError('E_PLAN_STALE', staleLine([`it was applied (at ${at}; a plan is applied once)`]));
  const before = await jobs.plans.appliedAt(saved.checksum);
  if (before !== undefined) throw applied(before);
  const checked = check();
  const earlier = await jobs.plans.claim(saved.checksum, new Date());
  if (earlier !== undefined) throw applied(earlier);
  return checked;
}
