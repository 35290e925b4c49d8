// `converge logs NAME`: a deployment's build or deploy logs from the service (beyond the spec), optionally followed.
import { LOGS_DEFAULT_LIMIT, LOGS_MAX_LIMIT, LOGS_DEFAULT_POLL_MS } from './values.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const logsCommand: Command = {
  name: 'logs',
  summary: COMMAND_SUMMARIES.logs,
  usage: 'converge logs NAME [--build|--deploy] [--revision ID] [--follow] [--limit N] [options]',
  positionals: [1, 1],
  options: {
    build: { type: 'boolean', description: 'build logs of a revision (default: the latest revision)' },
    deploy: {
      type: 'boolean',
      description: 'deploy (runtime) logs: of the deployment, or of --revision (the default)',
    },
    revision: {
      type: 'string',
      placeholder: 'ID',
      description: 'the revision whose logs to read (build default: the latest)',
    },
    follow: {
      type: 'boolean',
      short: 'f',
      description: 'keep printing new lines (until Ctrl-C; a build log stops when its revision ends)',
    },
    limit: {
      type: 'string',
      placeholder: 'N',
      description: `print the last N lines first (1-${LOGS_MAX_LIMIT}, default ${LOGS_DEFAULT_LIMIT})`,
    },
    poll: {
      type: 'string',
      placeholder: 'DURATION',
      description: `with --follow: how often new lines are read (default ${LOGS_DEFAULT_POLL_MS / 1000}s)`,
    },
    manifests: {
      type: 'string',
      placeholder: 'DIR',
      description:
        "mask the deployment's declared secret values (resolved from the manifests in DIR) in the lines printed",
    },
    ...settingOptions('apiUrl', 'apiKey', 'tenantId', 'requestTimeout'),
  },
  run: async (args, io) => (await import('./logs-run.js')).runLogsCommand(args, io),
};
