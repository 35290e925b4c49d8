// A standalone worker: takes reconcile jobs from the shared queue until stopped, then hands back cleanly (start and stop only).
import { clientOptionsFrom, ServiceClient, type ServiceSettings } from '../../service/client.js';
import { UsageError } from '../../core/errors.js';
import type { QueueLogger } from '../queue/log.js';
import { startJobRunner, type JobRunner, type StartRunnerOptions, type WorkerSettings } from './worker.js';

/** Settings of a worker process (src/cli/settings.ts Settings satisfies it). */
export interface WorkerProcessSettings extends WorkerSettings, ServiceSettings {
  /** How long active jobs may run after stop() before they are handed back to the queue (they then stall and rerun). */
  shutdownTimeout: number;
}

export interface WorkerProcess {
  /** Resolves once the worker has stopped (after stop(), or when BullMQ closed it). */
  closed: Promise<void>;
  /**
   * Stops taking jobs and waits up to shutdownTimeout for the active ones. 'timeout': they were still running; they
   * keep their locks only while this process lives, so once it exits they stall and another worker reruns them.
   */
  stop(): Promise<'stopped' | 'timeout'>;
}

/**
 * Starts a worker against a real service URL (an embedded emulator lives inside one process only, so a separate
 * worker process cannot serve it). Secret references are resolved from this process's environment and files.
 */
export async function startWorkerProcess(
  settings: WorkerProcessSettings,
  options: {
    env: NodeJS.ProcessEnv;
    log?: QueueLogger;
    worker?: Partial<Omit<StartRunnerOptions, 'client' | 'env' | 'target'>>;
  },
): Promise<WorkerProcess> {
  if (settings.apiUrl === 'embedded') {
    throw new UsageError(
      'a separate worker process needs the service URL (--api-url https://...): the embedded emulator lives inside one process',
    );
  }
  const client = new ServiceClient(clientOptionsFrom(settings));
  let runner: JobRunner;
  try {
    runner = await startJobRunner(settings, {
      client,
      env: options.env,
      target: { apiUrl: settings.apiUrl, tenantId: settings.tenantId },
      ...(options.log ? { log: options.log } : {}),
      ...options.worker,
    });
  } catch (error) {
    await client.close();
    throw error;
  }
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  void runner.closed.then(() => resolveClosed());
  let stopping: Promise<'stopped' | 'timeout'> | undefined;
  return {
    closed,
    stop() {
      stopping ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), settings.shutdownTimeout);
        });
        const outcome = await Promise.race([runner.close().then(() => 'stopped' as const), deadline]);
        clearTimeout(timer);
        if (outcome === 'timeout') {
          options.log?.warn(
            { timeoutMs: settings.shutdownTimeout },
            'active jobs did not finish in time; they go back to the queue when this process exits',
          );
          return outcome;
        }
        await client.close();
        return outcome;
      })().finally(() => resolveClosed());
      return stopping;
    },
  };
}
