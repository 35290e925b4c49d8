// `converge plan DIR`: the dry-run plan of a manifest directory against the live service.
import { resolve } from 'node:path';
import { plan } from '../../plan/plan.js';
import { renderJson } from '../../plan/render/json.js';
import { renderMarkdown } from '../../plan/render/markdown.js';
import { renderText } from '../../plan/render/text.js';
import { UsageError } from '../../core/errors.js';
import { planExitCode } from '../../core/exit-code.js';
import { gatherPlanInput } from '../../observe/gather.js';
import { readLatestRevisions } from '../../observe/revisions.js';
import { healthNotes, planOutcomes } from '../../plan/outcomes.js';
import type { Command } from '../command.js';
import type { AppliedRecord } from '../../core/model.js';
import { environmentOf } from '../environment.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { EMBEDDED, openTarget, requireApiUrl, retryLine, type ServiceSettings } from '../target.js';
import { progressLine, useColor } from '../tty.js';
import { narrowToTargets, TARGET_OPTION, targetsOf } from '../partial-plan.js';

const FORMATS = ['text', 'markdown', 'json'] as const;

/** Why the plan is blind to what converge last wrote: secrets the service hides, and existing providers. */
const BLIND = 'secrets and OAuth providers are planned without knowing what converge last wrote, so they may show changes that are not there';

/** The applied records the plan reads, and the note it carries when it read none. */
interface AppliedRead {
  records: Map<string, AppliedRecord>;
  note?: string;
}

/**
 * The applied state: not read with --no-applied-state or against the embedded emulator (it starts fresh: no
 * record could describe it). A Redis URL the user gave must answer (else one line, exit 1); the shipped default
 * (redis://127.0.0.1:6379) is only tried, and when it does not answer the plan says it ran without.
 */
async function readApplied(settings: ServiceSettings, skip: boolean): Promise<AppliedRead> {
  if (settings.apiUrl === EMBEDDED) return { records: new Map() };
  if (skip) return { records: new Map(), note: `applied state not read (--no-applied-state): ${BLIND}` };
  const { readAppliedState } = await import('../../store/applied-state.js');
  const state = await readAppliedState(settings);
  if (!state.warning) return { records: state.records };
  if (settings.explicit.has('redisUrl')) {
    throw new UsageError(`${state.warning.replace(/; planning without applied state$/, '')}; give --no-applied-state to plan without it`);
  }
  return { records: new Map(), note: `applied state not read: no Redis configured (--redis-url, REDIS_URL) and none answers at ${settings.redisUrl}: ${BLIND}` };
}

export const planCommand: Command = {
  name: 'plan',
  summary: 'list live state and print what apply would change (dry run)',
  usage: 'converge plan DIR [--vars FILE]... [--overlay DIR]... [--target NAME]... [--output text|markdown|json] [--detailed-exitcode] [--show-orphans] [options]',
  positionals: [1, 1],
  options: {
    output: { type: 'string', short: 'o', placeholder: 'FMT', description: 'text (default), markdown (at most 60,000 characters) or json (everything)' },
    'detailed-exitcode': { type: 'boolean', description: 'exit 0 when nothing would change (notes on unchanged resources do not count), 2 when something would; 1 on errors, as always' },
    'show-orphans': { type: 'boolean', description: 'text: list every live deployment in no manifest, not only the first three' },
    'no-applied-state': { type: 'boolean', description: 'plan without reading what converge last wrote from Redis (the plan says so)' },
    ...TARGET_OPTION,
    ...settingOptions('apiUrl', 'apiKey', 'tenantId', 'namePrefix', 'progressDeadline', 'redisUrl', 'redisPrefix', 'redisCluster', 'allowLiteralSecrets', 'allowLocalDiscovery', 'emulatorState', 'requestTimeout', 'adopt', 'prune', 'maxDeletes', 'vars', 'overlays'),
  },
  async run(args, io) {
    const output = (args.values.output as string | undefined) ?? 'text';
    if (!FORMATS.includes(output as (typeof FORMATS)[number])) {
      throw new UsageError(`--output "${output}" is not one of ${FORMATS.join(', ')}`);
    }
    const settings = requireApiUrl(resolveSettings(args, io.env));
    const targets = targetsOf(args);
    const dir = resolve(io.cwd, args.positionals[0]!);
    // Read (Redis client loaded, connected, one HGETALL) while the live pages are listed.
    const applied = readApplied(settings, args.values['no-applied-state'] === true);
    applied.catch(() => undefined);
    const progress = progressLine(io);
    const target = await openTarget(settings, { onRetry: (info) => progress.write(io.stderr, `converge plan: ${retryLine(info)}\n`) });
    try {
      const appliedRead = { records: new Map<string, AppliedRecord>() } as AppliedRead;
      const gathered = await gatherPlanInput({
        dir,
        environment: environmentOf(settings, io.cwd),
        env: io.env,
        client: target.client,
        allowLiteralSecrets: settings.allowLiteralSecrets,
        allowLocalDiscovery: settings.allowLocalDiscovery,
        namePrefix: settings.namePrefix,
        applied: {
          getAll: async () => {
            Object.assign(appliedRead, await applied);
            return appliedRead.records;
          },
        },
        onLiveProgress: (n) => progress.show(`listing live deployments: ${n}`),
        adoptPolicy: settings.adopt,
        prune: { enabled: settings.prune && targets.length === 0, maxDeletes: settings.maxDeletes },
      });
      progress.write(io.stderr, filesLine(gathered.files.length, dir));
      progress.clear();
      if (appliedRead.note) {
        gathered.input.notes = [appliedRead.note, ...(gathered.input.notes ?? [])];
        gathered.input.ownershipKnown = false;
      }
      const result = plan(narrowToTargets(gathered.input, targets));
      // Health is read, not guessed: a note for each rollout not healthy (one read per deployment whose latest is not active).
      const revisions = await readLatestRevisions(target.client, result.changes, gathered.live);
      const health = healthNotes(planOutcomes(result, { mode: 'plan', resources: gathered.resources, live: gathered.live, revisions: revisions.readings, now: Date.now(), progressDeadlineMs: settings.progressDeadline }));
      if (health.length > 0) result.health = health;
      if (output === 'json') io.stdout.write(renderJson(result));
      else if (output === 'markdown') io.stdout.write(renderMarkdown(result));
      else io.stdout.write(renderText(result, { color: useColor(io.stdout, io.env), showOrphans: args.values['show-orphans'] === true }));
      return planExitCode(result, args.values['detailed-exitcode'] === true);
    } finally {
      await target.close();
    }
  },
};

/** How many manifest files were read, for stderr (stdout holds the plan): an empty or wrong directory shows at once. */
function filesLine(files: number, dir: string): string {
  return `converge plan: read ${files} manifest file${files === 1 ? '' : 's'} in ${dir}\n`;
}
