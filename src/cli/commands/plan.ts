// `converge plan DIR`: the dry-run plan of a manifest directory against the live service.
import { PLAN_FORMATS } from './values.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { SKIP_SIGNATURE_OPTION } from '../plan-file.js';
import { TARGET_OPTION } from '../partial-plan.js';
import { APPLIED_STATE_URL_ENV, STATE_TOKEN_ENV } from '../../store/applied-state-document.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const planCommand: Command = {
  name: 'plan',
  summary: COMMAND_SUMMARIES.plan,
  usage:
    'converge plan DIR [--vars FILE]... [--overlay DIR]... [--target NAME]... [--output text|markdown|json] [--detailed-exitcode] [--show-orphans] [--out FILE] [--applied-state-url URL] [options] | converge plan --show FILE [--output text|markdown|json] [--skip-signature-check]',
  positionals: [0, 1],
  options: {
    out: {
      type: 'string',
      placeholder: 'FILE',
      description:
        'also save the plan to FILE (JSON, mode 0600, no secret value) for "converge apply --plan FILE", signed when CONVERGE_PLAN_KEY is set; none is saved when the plan holds an error (docs/saved-plans.md)',
    },
    show: {
      type: 'string',
      placeholder: 'FILE',
      description: "print the saved plan FILE in --output's format, without the service (no DIR)",
    },
    ...SKIP_SIGNATURE_OPTION,
    output: {
      type: 'string',
      short: 'o',
      placeholder: 'FMT',
      choices: PLAN_FORMATS,
      description: 'text (default), markdown (at most 60,000 characters) or json (everything)',
    },
    'detailed-exitcode': {
      type: 'boolean',
      description:
        'exit 0 when nothing would change (notes on unchanged resources do not count), 2 when something would; 1 on errors, as always',
    },
    'show-orphans': {
      type: 'boolean',
      description: 'text: list every live deployment in no manifest, not only the first three',
    },
    'no-applied-state': {
      type: 'boolean',
      description: 'plan without reading what converge last wrote from Redis (the plan says so)',
    },
    'applied-state-url': {
      type: 'string',
      placeholder: 'URL',
      description: `read what converge last wrote from a daemon's GET /applied-state (its status server URL) instead of Redis, with the read-only token in ${STATE_TOKEN_ENV} (env ${APPLIED_STATE_URL_ENV}); REDIS_URL is then not read, and --redis-url or --redis-prefix is refused (docs/saved-plans.md)`,
    },
    ...TARGET_OPTION,
    ...settingOptions(
      'apiUrl',
      'apiKey',
      'tenantId',
      'namePrefix',
      'progressDeadline',
      'redisUrl',
      'redisPrefix',
      'redisCluster',
      'allowLiteralSecrets',
      'allowLocalDiscovery',
      'emulatorState',
      'requestTimeout',
      'adopt',
      'prune',
      'maxDeletes',
      'vars',
      'overlays',
    ),
  },
  run: async (args, io) => (await import('./plan-run.js')).runPlanCommand(args, io, planCommand.usage),
};
