// `converge worker`: an extra worker process that takes apply and daemon jobs from the shared Redis queue until SIGTERM.
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const workerCommand: Command = {
  name: 'worker',
  summary: COMMAND_SUMMARIES.worker,
  usage: 'converge worker [options]',
  positionals: [0, 0],
  options: settingOptions(
    'apiUrl',
    'apiKey',
    'tenantId',
    'redisUrl',
    'redisPrefix',
    'redisCluster',
    'concurrency',
    'attempts',
    'backoff',
    'maxBackoff',
    'globalRate',
    'requestTimeout',
    'shutdownTimeout',
    'flapWindow',
    'flapLimit',
    'allowLiteralSecrets',
    'logLevel',
  ),
  run: async (args, io) => (await import('./worker-run.js')).runWorkerCommand(args, io),
};
