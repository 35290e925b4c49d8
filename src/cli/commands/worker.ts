// `converge worker`: an extra worker process that takes apply and daemon jobs from the shared Redis queue until SIGTERM.
import { createLogger } from '../../daemon/logger.js';
import { startWorkerProcess } from '../../enqueue/worker-process.js';
import type { Command } from '../command.js';
import { resolveSettings, settingOptions } from '../settings.js';

export const workerCommand: Command = {
  name: 'worker',
  summary: 'take jobs from the shared queue (more throughput beside apply or run) until SIGTERM',
  usage: 'converge worker [options]',
  positionals: [0, 0],
  options: settingOptions(
    'apiUrl',
    'apiKey',
    'tenantId',
    'redisUrl',
    'redisPrefix',
    'concurrency',
    'attempts',
    'backoff',
    'globalRate',
    'requestTimeout',
    'shutdownTimeout',
    'logLevel',
  ),
  async run(args, io) {
    const settings = resolveSettings(args, io.env);
    const log = createLogger({ level: settings.logLevel, destination: io.stdout, env: io.env, sensitive: settings.apiKey ? [settings.apiKey] : [] });
    const worker = await startWorkerProcess(settings, { env: io.env, log, handleSignals: true });
    log.info({ concurrency: settings.concurrency }, 'worker started');
    await worker.closed;
    log.info({}, 'worker stopped');
    return 0;
  },
};
