// Prometheus metrics of one daemon (prom-client, on its own Registry): reconciles, resource states, jobs, requests.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestInfo } from '../../service/client.js';
import { KIND_NAMES } from '../../core/kinds/index.js';
import type { ResourceKind } from '../../core/model.js';
import { REVISION_FAILURE_REASONS } from '../../core/health.js';
import { SYNC_STATES, type SyncState } from '../../core/legacy-state.js';
import { createResourceSeries, type ResourceSeries } from './resource-gauges.js';

/** Sync states a managed resource is counted under (converge_resources): the legacy state of src/core/resource-state.ts. */
export { SYNC_STATES, type SyncState };

/** Job outcomes counted by converge_jobs_total: the worker's results, plus a retried attempt and a final failure. */
export const JOB_OUTCOMES = ['created', 'updated', 'unchanged', 'adopted', 'retried', 'failed'] as const;

/** manual: POST /reconcile (`converge reconcile`). */
export type ReconcileTrigger = 'startup' | 'watch' | 'resync' | 'retry' | 'manual' | 'prune' | 'window' | 'wave';

export interface DaemonMetrics {
  registry: Registry;
  reconcileDuration: Histogram<'trigger' | 'result'>;
  /** Each reconcile's time by step (src/daemon/cycle/cycle-context.ts RECONCILE_STEPS): one observation per step it entered. */
  reconcileSteps: Histogram<'step'>;
  reconciles: Counter<'trigger' | 'result'>;
  lastSuccess: Gauge;
  resources: Gauge<'kind' | 'state'>;
  orphans: Gauge;
  drifted: Gauge<'kind' | 'policy'>;
  jobsEnqueued: Counter<'operation'>;
  jobs: Counter<'outcome'>;
  requests: Counter<'method' | 'endpoint' | 'status'>;
  requestDuration: Histogram<'method' | 'endpoint'>;
  manifestErrors: Gauge;
  resyncCycles: Counter;
  recordOverflow: Counter<'what'>;
  /** 1 once the daemon saw the applied-state epoch in Redis change or vanish (Redis lost converge's records). */
  appliedStateLost: Gauge;
  /** Resources held as SecretsUnknown at the last reconcile. */
  secretsUnknown: Gauge;
  /** Failed revisions seen, by reason (each revision counted once). */
  revisionFailures: Counter<'reason'>;
  /** The per-resource health, sync and held series (src/daemon/telemetry/resource-gauges.ts). */
  setResourceHealth: ResourceSeries['setResourceHealth'];
  setResourceSync: ResourceSeries['setResourceSync'];
  setResourceHeld: ResourceSeries['setResourceHeld'];
  /** The resync period this daemon runs with (0 until the daemon starts). */
  resyncPeriod: Gauge;
  /** Conflicts this daemon's worker found (the flap guard stopped writing to a resource), by kind and reason. */
  conflicts: Counter<'kind' | 'reason'>;
  /** Resources under a Conflict as of the last reconcile and the jobs finished since. */
  conflictResources: Gauge;
  /** Notification deliveries by receiver (its name), event type and result (docs/notifications.md). */
  notifications: Counter<'receiver' | 'type' | 'result'>;
  /** This replica's wall clock minus Redis' clock, in seconds (src/daemon/lifecycle/clock-watch.ts). */
  clockSkew: Gauge;
  /** ServiceClient's onRequest hook: one call per attempt. */
  observeRequest(info: RequestInfo): void;
  /** Replaces the resource gauge with these counts (every kind x state pair is written, zeros included). */
  setResourceStates(counts: ReadonlyMap<ResourceKind, ReadonlyMap<SyncState, number>>): void;
  /** The Prometheus text exposition: the registry's metrics, then the per-resource series (rendered once per change). */
  render(): Promise<string>;
}

export interface MetricsOptions {
  /** Node process metrics (cpu, memory, event loop lag) with the converge_ prefix; default true. */
  processMetrics?: boolean;
}

/** The reconciles and what the last one found: duration, count, last success, resources by state, orphans, drift. */
function reconcileMetrics(registry: Registry) {
  const reconcileDuration = new Histogram({
    name: 'converge_reconcile_duration_seconds',
    help: 'Duration of a full reconcile of the manifest directory (load, list, plan, enqueue).',
    labelNames: ['trigger', 'result'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const reconcileSteps = new Histogram({
    name: 'converge_reconcile_step_seconds',
    help: "Time of each reconcile spent in each step (manifests, listing, revisions, decision, enqueue, state): consecutive wall-clock segments, whose sum is the reconcile's duration (docs/monitoring.md).",
    labelNames: ['step'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const reconciles = new Counter({
    name: 'converge_reconciles_total',
    help: 'Reconciles run by this daemon, by trigger (startup, watch, resync, retry, manual, prune, wave) and result (ok, error).',
    labelNames: ['trigger', 'result'] as const,
    registers: [registry],
  });
  const lastSuccess = new Gauge({
    name: 'converge_last_successful_reconcile_timestamp_seconds',
    help: 'Unix time of the end of the last reconcile that succeeded (0: none yet).',
    registers: [registry],
  });
  const resources = new Gauge({
    name: 'converge_resources',
    help: 'Managed resources by kind and sync state, as of the last reconcile and the jobs finished since.',
    labelNames: ['kind', 'state'] as const,
    registers: [registry],
  });
  const orphans = new Gauge({
    name: 'converge_orphan_deployments',
    help: 'Live deployments named in no manifest (reported, never deleted).',
    registers: [registry],
  });
  const drifted = new Gauge({
    name: 'converge_drifted_resources',
    help: 'Resources whose live state drifted from an unchanged manifest at the last reconcile, by drift policy (heal: a fix was enqueued; report: left as is).',
    labelNames: ['kind', 'policy'] as const,
    registers: [registry],
  });
  lastSuccess.set(0);
  orphans.set(0);
  for (const kind of KIND_NAMES) for (const state of SYNC_STATES) resources.set({ kind, state }, 0);
  return { reconcileDuration, reconcileSteps, reconciles, lastSuccess, resources, orphans, drifted };
}

/** The jobs enqueued and finished, and the requests to the service. */
function jobAndRequestMetrics(registry: Registry) {
  const jobsEnqueued = new Counter({
    name: 'converge_jobs_enqueued_total',
    help: 'Reconcile jobs this daemon enqueued, by operation.',
    labelNames: ['operation'] as const,
    registers: [registry],
  });
  const jobs = new Counter({
    name: 'converge_jobs_total',
    help: "Jobs this daemon's worker finished, by outcome (created, updated, unchanged, adopted; retried: an attempt failed and will be retried; failed: final).",
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const requests = new Counter({
    name: 'converge_service_requests_total',
    help: 'Requests to the service (each attempt), by method, templated endpoint and status code ("network" when no answer came).',
    labelNames: ['method', 'endpoint', 'status'] as const,
    registers: [registry],
  });
  const requestDuration = new Histogram({
    name: 'converge_service_request_duration_seconds',
    help: 'Duration of one request to the service, by method and templated endpoint.',
    labelNames: ['method', 'endpoint'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  for (const outcome of JOB_OUTCOMES) jobs.inc({ outcome }, 0);
  return { jobsEnqueued, jobs, requests, requestDuration };
}

/** What the daemon watches besides the reconciles: manifest errors, resync cycles, Redis's records lost, SecretsUnknown, failed revisions, its clock against Redis'. */
function conditionMetrics(registry: Registry) {
  const manifestErrors = new Gauge({
    name: 'converge_manifest_errors',
    help: 'Error diagnostics of the manifests at the last reconcile.',
    registers: [registry],
  });
  const resyncCycles = new Counter({
    name: 'converge_resync_cycles_total',
    help: 'Resync cycles this daemon ran (one replica runs each cycle).',
    registers: [registry],
  });
  const recordOverflow = new Counter({
    name: 'converge_record_overflow_total',
    help:
      'What a bound of the record in Redis refused (requests: an operator request past the pending requests kept),' +
      ' never dropped in silence.',
    labelNames: ['what'] as const,
    registers: [registry],
  });
  const appliedStateLost = new Gauge({
    name: 'converge_applied_state_lost',
    help: "1 when converge's records in Redis (applied state, desired-state memory) were lost while this daemon ran: the epoch key changed or vanished (Redis restarted without persistence, flushed, evicted, failed over to an empty replica).",
    registers: [registry],
  });
  const secretsUnknown = new Gauge({
    name: 'converge_secrets_unknown_resources',
    help: 'Resources whose only difference is secrets the service hides and converge holds no record of: not rewritten blind (SecretsUnknown; converge reconcile --write-secrets writes them).',
    registers: [registry],
  });
  const revisionFailures = new Counter({
    name: 'converge_revision_failures_total',
    help: 'Failed revisions this daemon saw, each once, by reason (RevisionBuildFailed, RevisionDeployFailed, RevisionCreateFailed, ProgressDeadlineExceeded).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const clockSkew = new Gauge({
    name: 'converge_clock_skew_seconds',
    help: "This replica's wall clock minus Redis' clock, in seconds (positive: ahead), read at start and every 30 s. Every grace, window and age two replicas compare is timed on Redis' clock; beyond 5 s the replica logs a warning.",
    registers: [registry],
  });
  const resyncPeriod = new Gauge({
    name: 'converge_resync_period_seconds',
    help: 'The resync period this daemon runs with (resync): a full reconcile at least this often while a replica leads.',
    registers: [registry],
  });
  for (const reason of REVISION_FAILURE_REASONS) revisionFailures.inc({ reason }, 0);
  resyncPeriod.set(0);
  appliedStateLost.set(0);
  secretsUnknown.set(0);
  manifestErrors.set(0);
  return {
    manifestErrors,
    resyncCycles,
    recordOverflow,
    appliedStateLost,
    secretsUnknown,
    resyncPeriod,
    revisionFailures,
    clockSkew,
  };
}

/** The flap guard's Conflicts and the notification deliveries. */
function conflictAndNotificationMetrics(registry: Registry) {
  const conflicts = new Counter({
    name: 'converge_conflicts_total',
    help: "Conflicts this daemon's worker found, by kind and reason (desired_alternates: the desired state went A, B, A within flap_window; changed_outside: a change made outside converge was put back flap_limit times and came again): converge stopped writing to the resource.",
    labelNames: ['kind', 'reason'] as const,
    registers: [registry],
  });
  const conflictResources = new Gauge({
    name: 'converge_conflict_resources',
    help: 'Resources converge stopped writing to because of a Conflict (the flap guard), as of the last reconcile and the jobs finished since.',
    registers: [registry],
  });
  const notifications = new Counter({
    name: 'converge_notifications_total',
    help: "Notification deliveries by receiver name, event type and result: delivered, retried (an attempt failed; another follows), failed (out of attempts), rejected (a 4xx: not retried), skipped (nothing to send, e.g. a commit status without a git commit), dropped (never sent: Redis did not take it, or the receiver's backlog was full and it was among its oldest waiting deliveries).",
    labelNames: ['receiver', 'type', 'result'] as const,
    registers: [registry],
  });
  conflictResources.set(0);
  return { conflicts, conflictResources, notifications };
}

/** A fresh registry with every converge metric registered. Several daemons in one process do not collide. */
export function createMetrics(options: MetricsOptions = {}): DaemonMetrics {
  const registry = new Registry();
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'converge_' });
  // Registered in this order, which is the order of the exposition.
  const reconcile = reconcileMetrics(registry);
  const { resources } = reconcile;
  const work = jobAndRequestMetrics(registry);
  const { requests, requestDuration } = work;
  const conditions = conditionMetrics(registry);
  const outside = conflictAndNotificationMetrics(registry);
  const perResource = createResourceSeries();
  return {
    registry,
    ...reconcile,
    ...work,
    ...conditions,
    setResourceHealth: perResource.setResourceHealth,
    setResourceSync: perResource.setResourceSync,
    setResourceHeld: perResource.setResourceHeld,
    ...outside,
    observeRequest(info) {
      requests.inc({ method: info.method, endpoint: info.route, status: String(info.status) });
      requestDuration.observe({ method: info.method, endpoint: info.route }, info.durationMs / 1000);
    },
    setResourceStates(counts) {
      for (const kind of KIND_NAMES) {
        for (const state of SYNC_STATES) resources.set({ kind, state }, counts.get(kind)?.get(state) ?? 0);
      }
    },
    async render() {
      // Both end with a newline; the blank line between is the one the registry puts between metrics.
      const [metrics, resources] = await Promise.all([registry.metrics(), perResource.render()]);
      return `${metrics}\n${resources}`;
    },
  };
}
