// `converge plan DIR`: the dry-run plan of a manifest directory against the live service.
import { plan } from '../../plan/plan.js';
import { renderJson } from '../../plan/render/json.js';
import { renderMarkdown } from '../../plan/render/markdown.js';
import { renderText } from '../../plan/render/text.js';
import { UsageError } from '../../core/errors.js';
import { planExitCode } from '../../core/exit-code.js';
import { gatherPlanInput } from '../../observe/gather.js';
import type { Command } from '../command.js';
import type { readAppliedState } from '../../enqueue/applied-state.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { EMBEDDED, openTarget, requireApiUrl } from '../target.js';
import { progressLine, useColor } from '../tty.js';

const FORMATS = ['text', 'markdown', 'json'] as const;

export const planCommand: Command = {
  name: 'plan',
  summary: 'list live state and print what apply would change (dry run)',
  usage: 'converge plan DIR [--output text|markdown|json] [--detailed-exitcode] [options]',
  positionals: [1, 1],
  options: {
    output: { type: 'string', short: 'o', placeholder: 'FMT', description: 'text (default), markdown or json' },
    'detailed-exitcode': { type: 'boolean', description: 'exit 0 when nothing would change, 2 when something would, 1 on error' },
    ...settingOptions('apiUrl', 'apiKey', 'tenantId', 'redisUrl', 'redisPrefix', 'allowLiteralSecrets', 'allowLocalDiscovery', 'emulatorState', 'requestTimeout'),
  },
  async run(args, io) {
    const output = (args.values.output as string | undefined) ?? 'text';
    if (!FORMATS.includes(output as (typeof FORMATS)[number])) {
      throw new UsageError(`--output "${output}" is not one of ${FORMATS.join(', ')}`);
    }
    const settings = requireApiUrl(resolveSettings(args, io.env));
    const dir = args.positionals[0]!;
    // The embedded emulator starts fresh in every process: applied state kept in Redis would not describe it.
    // Otherwise it is read (Redis client loaded, connected, one HGETALL) while the live pages are listed.
    type AppliedState = Awaited<ReturnType<typeof readAppliedState>>;
    const applied: Promise<AppliedState> =
      settings.apiUrl === EMBEDDED
        ? Promise.resolve({ records: new Map() })
        : import('../../enqueue/applied-state.js').then(async (module) => {
            const state = await module.readAppliedState(settings);
            if (state.warning) io.stderr.write(`converge plan: warning: ${state.warning}\n`);
            return state;
          });
    applied.catch(() => undefined);
    const target = await openTarget(settings);
    try {
      const progress = progressLine(io);
      const gathered = await gatherPlanInput({
        dir,
        env: io.env,
        client: target.client,
        allowLiteralSecrets: settings.allowLiteralSecrets,
        allowLocalDiscovery: settings.allowLocalDiscovery,
        applied: { getAll: async () => (await applied).records },
        onLiveProgress: (n) => progress.show(`listing live deployments: ${n}`),
      });
      progress.clear();
      const result = plan(gathered.input);
      if (output === 'json') io.stdout.write(renderJson(result));
      else if (output === 'markdown') io.stdout.write(renderMarkdown(result));
      else io.stdout.write(renderText(result, { color: useColor(io.stdout, io.env) }));
      return planExitCode(result, args.values['detailed-exitcode'] === true);
    } finally {
      await target.close();
    }
  },
};
