// `converge status [--url URL] [--output text|json]`: what a running daemon reports on /status and /readyz.
import { STATUS_FORMATS } from './values.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const statusCommand: Command = {
  name: 'status',
  summary: COMMAND_SUMMARIES.status,
  usage: 'converge status [--url http://HOST:PORT] [--output text|json]',
  positionals: [0, 0],
  options: {
    url: {
      type: 'string',
      placeholder: 'URL',
      description: 'status server of the daemon (default http://127.0.0.1:<http_port>)',
    },
    output: {
      type: 'string',
      short: 'o',
      placeholder: 'FMT',
      choices: STATUS_FORMATS,
      description: 'text (default) or json (the /status document)',
    },
    ...settingOptions('httpPort'),
  },
  run: async (args, io) => (await import('./status-run.js')).runStatusCommand(args, io),
};
