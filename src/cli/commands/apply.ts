// `converge apply DIR [--wait]`: plan, enqueue one job per change, wait for every job (and new revisions), report.
import { APPLY_FORMATS } from './values.js';
import { SKIP_SIGNATURE_OPTION } from '../plan-file.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { TARGET_OPTION } from '../partial-plan.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const applyCommand: Command = {
  name: 'apply',
  summary: COMMAND_SUMMARIES.apply,
  usage:
    'converge apply DIR [--vars FILE]... [--overlay DIR]... [--target NAME]... [--auto-approve] [--wait] [--wait-timeout DURATION] [--override-window] [--output text|json] [options] | converge apply --plan FILE [--skip-signature-check] [--wait] [options]',
  positionals: [0, 1],
  options: {
    plan: {
      type: 'string',
      placeholder: 'FILE',
      description:
        'apply exactly the saved plan FILE (plan --out), with no DIR, given the --prune, --max-deletes, --adopt, --name-prefix and --target it was made with: refused, nothing written, when its options differ, when the manifests, a secret or a resource changed since, or, with CONVERGE_PLAN_KEY set, when it is not signed with that key; a signed plan with no key set is refused unless --skip-signature-check (docs/saved-plans.md)',
    },
    ...SKIP_SIGNATURE_OPTION,
    'override-window': {
      type: 'boolean',
      description:
        'write although a change window (the windows setting) blocks writes and allows no manual ones; logged, and recorded in the history (docs/rollouts.md)',
    },
    wait: {
      type: 'boolean',
      description:
        'also wait until each new revision, and each rollout already in progress, is active; exit 1 at the first that fails (BUILD_FAILED, DEPLOY_FAILED, past the progress deadline)',
    },
    strict: {
      type: 'boolean',
      description:
        'exit 1 on any degraded resource: without it, a failed revision that stands from earlier manifests on a resource this apply does not write is a warning (docs/commands.md, "apply\'s verdict")',
    },
    output: {
      type: 'string',
      short: 'o',
      placeholder: 'FMT',
      choices: APPLY_FORMATS,
      description: 'text (default) or json',
    },
    ...TARGET_OPTION,
    ...settingOptions(
      'waitTimeout',
      'progressDeadline',
      'waveMaxInFlight',
      'healthPoll',
      'apiUrl',
      'apiKey',
      'tenantId',
      'namePrefix',
      'redisUrl',
      'redisPrefix',
      'redisCluster',
      'concurrency',
      'attempts',
      'backoff',
      'maxBackoff',
      'globalRate',
      'allowLiteralSecrets',
      'allowPartial',
      'autoApprove',
      'allowLocalDiscovery',
      'emulatorState',
      'requestTimeout',
      'flapWindow',
      'flapLimit',
      'logLevel',
      'adopt',
      'prune',
      'maxDeletes',
      'pruneTracingProjects',
      'vars',
      'overlays',
    ),
  },
  run: async (args, io) => (await import('./apply-run.js')).runApplyCommand(args, io, applyCommand.usage),
};
