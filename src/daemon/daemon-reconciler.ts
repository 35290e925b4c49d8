// The daemon's reconciler (src/daemon/reconcile/reconciler.ts), built from its settings and the parts it has opened.
import type { Logger } from 'pino';
import type { Jobs } from '../jobs/open-jobs.js';
import type { ServiceClient } from '../service/client.js';
import { ManifestCache } from '../observe/manifests.js';
import { LastGoodManifests } from './cycle/last-good.js';
import type { OperatorRequests } from './cycle/operator-requests.js';
import type { WindowGate } from './cycle/window-gate.js';
import { Reconciler } from './reconcile/reconciler.js';
import { pruneRechecks } from './reconcile/prune-recheck.js';
import type { DaemonMetrics } from './telemetry/metrics.js';
import { PROGRESS_DEADLINE_MS, type DaemonOptions, type DaemonSettings } from './daemon-options.js';

/** What the daemon's reconciler is made of: the daemon's settings, its open parts and the operators' requests. */
export interface ReconcilerParts {
  options: DaemonOptions;
  settings: DaemonSettings;
  /** The manifest directory, resolved. */
  dir: string;
  jobs: Jobs;
  client: ServiceClient;
  requests: { secretWrites: OperatorRequests; rebuilds: OperatorRequests; deleteConfirms: OperatorRequests };
  windows: WindowGate;
  /** The leader's fencing token while this replica leads. */
  fence: () => number | undefined;
  /** Asks the reconciler for a reconcile when a pending delete's grace ends. */
  requestPrune: () => void;
  metrics: DaemonMetrics;
  log: Logger;
  /** The replica's name in the lease, /status and the records it writes. */
  replicaId: string;
}

/** A new reconciler over the daemon's parts (not started: the leader's terms request its reconciles). */
export function daemonReconciler(p: ReconcilerParts): Reconciler {
  const { settings, jobs } = p;
  return new Reconciler({
    context: {
      fence: p.fence,
      dir: p.dir,
      environment: p.options.environment,
      env: p.options.env,
      client: p.client,
      enqueuer: jobs.enqueuer,
      applied: jobs.applied,
      memory: jobs.desired,
      lastGood: new LastGoodManifests(),
      manifestCache: new ManifestCache(),
      settings,
      ...p.requests,
      windows: p.windows,
      holds: jobs.holds,
      now: () => jobs.now(),
      schedulePrune: pruneRechecks(p.requestPrune),
      conflicts: jobs.flap,
    },
    health: { progressDeadlineMs: settings.progressDeadline ?? PROGRESS_DEADLINE_MS },
    metrics: p.metrics,
    log: p.log,
    maxRetryMs: Math.min(60_000, Math.max(1_000, settings.resync)),
    record: { store: jobs.record, folds: jobs.folds, by: p.replicaId, reconciles: jobs.reconciles },
  });
}
