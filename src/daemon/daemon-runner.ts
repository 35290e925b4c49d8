// The daemon's job runner (every replica runs jobs): started on the service's client, each finished job counted.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Jobs } from '../jobs/open-jobs.js';
import type { JobRunner } from '../jobs/runner/worker.js';
import type { ServiceClient } from '../service/client.js';
import type { DaemonMetrics } from './telemetry/metrics.js';
import type { DaemonSettings } from './daemon-options.js';

/** What the daemon's job runner works with, and whom it tells of a job this replica finished. */
export interface RunnerParts {
  jobs: Jobs;
  client: ServiceClient;
  env: NodeJS.ProcessEnv;
  settings: DaemonSettings;
  log: Logger;
  /** The replica's name in the records it writes. */
  recordedBy: string;
  metrics: DaemonMetrics;
  /** A job this replica completed brought `key` to its desired state `desired`. */
  onFinishedHere: (key: string, desired: string) => void;
}

/** Starts the daemon's job runner: jobs counted by outcome, declared conflicts by kind and reason. */
export async function startDaemonRunner(p: RunnerParts): Promise<JobRunner> {
  const { settings, metrics } = p;
  const runner = await p.jobs.startRunner({
    client: p.client,
    env: p.env,
    log: p.log.child({ component: 'worker' }),
    name: `converge-daemon@${hostname()}:${process.pid}`,
    recordedBy: p.recordedBy,
    lockDuration: settings.jobLock,
    stalledInterval: settings.jobLock,
  });
  runner.onJob((event) => {
    if (event.type === 'completed') {
      metrics.jobs.inc({ outcome: event.outcome ?? 'unchanged' });
      if (event.conflict?.declared && event.key)
        metrics.conflicts.inc({ kind: event.key.slice(0, event.key.indexOf('/')), reason: event.conflict.reason });
    }
    if (event.type === 'done') p.onFinishedHere(event.key, event.desired);
    if (event.type === 'failed') metrics.jobs.inc({ outcome: event.final ? 'failed' : 'retried' });
  });
  return runner;
}
