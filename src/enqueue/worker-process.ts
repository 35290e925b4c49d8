// A standalone worker process: takes reconcile jobs from the shared queue until SIGTERM/SIGINT, then hands back cleanly.
import { clientOptionsFrom, ServiceClient, type ServiceSettings } from '../service/client.js';
import { UsageError } from '../core/errors.js';
import { startWorker, type QueueLogger, type ReconcileWorker, type StartWorkerOptions, type WorkerSettings } from './worker.js';

/** Settings of a worker process (src/cli/settings.ts Settings satisfies it). */
export interface WorkerProcessSettings extends WorkerSettings, ServiceSettings {
  /** How long active jobs may run after SIGTERM before they are handed back to the queue (they then stall and rerun). */
  shutdownTimeout: number;
}

export interface WorkerProcess {
  worker: ReconcileWorker;
  /** Resolves once the worker has stopped (after a signal or close()). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a worker against a real service URL (an embedded emulator lives inside one process only, so a separate
 * worker process cannot serve it). Secret references are resolved from this process's environment and files.
 * With `handleSignals`, SIGTERM/SIGINT stop taking jobs, wait up to shutdownTimeout for active ones, then close.
 */
export async function startWorkerProcess(
  settings: WorkerProcessSettings,
  options: { env: NodeJS.ProcessEnv; log?: QueueLogger; handleSignals?: boolean; worker?: Partial<Omit<StartWorkerOptions, 'client' | 'env' | 'target'>> },
): Promise<WorkerProcess> {
  if (settings.apiUrl === 'embedded') {
    throw new UsageError('a separate worker process needs the service URL (--api-url https://...): the embedded emulator lives inside one process');
  }
  const client = new ServiceClient(clientOptionsFrom(settings));
  let worker: ReconcileWorker;
  try {
    worker = await startWorker(settings, {
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
  worker.worker.once('closed', () => resolveClosed());
  let closing: Promise<void> | undefined;
  let onSignal: (() => void) | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      if (onSignal) {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      }
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), settings.shutdownTimeout);
      });
      const outcome = await Promise.race([worker.close().then(() => 'closed' as const), deadline]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        // The active jobs keep their locks only while this process lives: once it exits they stall and another
        // worker reruns them (level-triggered, so the rerun sends only what is still missing).
        options.log?.warn({ timeoutMs: settings.shutdownTimeout }, 'active jobs did not finish in time; they go back to the queue when this process exits');
        return;
      }
      await client.close();
    })().finally(() => resolveClosed());
    return closing;
  };
  if (options.handleSignals) {
    onSignal = () => {
      void close().then(() => process.exit(process.exitCode ?? 0));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  return { worker, closed, close };
}
