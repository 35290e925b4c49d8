// `converge repos`: the code-host repositories the service can see, for people writing spec.repository.
import { REPOS_FORMATS } from './values.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const reposCommand: Command = {
  name: 'repos',
  summary: COMMAND_SUMMARIES.repos,
  usage: 'converge repos [--output table|json] [options]',
  positionals: [0, 0],
  options: {
    output: {
      type: 'string',
      short: 'o',
      placeholder: 'FMT',
      choices: REPOS_FORMATS,
      description: 'table (default) or json',
    },
    ...settingOptions('apiUrl', 'apiKey', 'tenantId', 'emulatorState', 'requestTimeout'),
  },
  run: async (args, io) => (await import('./repos-run.js')).runReposCommand(args, io),
};
