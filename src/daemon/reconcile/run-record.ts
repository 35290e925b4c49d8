// What one reconcile leaves behind: its record (for /status and the record in Redis) and its metrics.
import type { ReconcileOutcome } from '../cycle/cycle.js';
import type { ReconcileRecord } from '../status/reconcile-record.js';
import type { DaemonMetrics, ReconcileTrigger } from '../telemetry/metrics.js';
import type { TimedReconcile } from '../telemetry/reconcile-steps.js';
import { orphanDeployments } from '../../plan/summary.js';

/** One line for logs and status: the error's message, never a stack. */
export function errorLine(error: unknown): string {
  return error instanceof Error ? (error.message.split('\n')[0] ?? error.name) : String(error);
}

/** What a reconcile that started at `started` and ends now did (an outcome), or why it failed. */
export interface RunEnd {
  id: number;
  trigger: ReconcileTrigger;
  cycles: readonly string[];
  started: number;
  outcome: ReconcileOutcome | undefined;
  failure: unknown;
}

/** The record of one reconcile, ended now. */
export function runRecord({ id, trigger, cycles, started, outcome, failure }: RunEnd): ReconcileRecord {
  const finished = Date.now();
  const record: ReconcileRecord = {
    id,
    trigger,
    startedAt: new Date(started).toISOString(),
    finishedAt: new Date(finished).toISOString(),
    durationMs: finished - started,
    ok: outcome !== undefined,
    error: outcome ? null : errorLine(failure),
    summary: outcome?.plan.summary ?? null,
    files: outcome?.files ?? 0,
    live: outcome?.live.length ?? 0,
    enqueued: outcome?.enqueued ?? 0,
    drifted: outcome?.drift.length ?? 0,
    held: outcome?.held.length ?? 0,
  };
  if (cycles[0]) record.cycle = cycles[0];
  if (outcome?.version) record.manifestVersion = outcome.version;
  return record;
}

/** The metrics of one reconcile: its duration and steps, and of an outcome, what it found. */
export function observeRun(
  metrics: DaemonMetrics,
  record: ReconcileRecord,
  timed: TimedReconcile,
  outcome: ReconcileOutcome | undefined,
  cycles: readonly string[],
): void {
  const result = outcome ? 'ok' : 'error';
  metrics.reconcileDuration.observe({ trigger: record.trigger, result }, timed.seconds);
  for (const [step, seconds] of timed.steps) metrics.reconcileSteps.observe({ step }, seconds);
  metrics.reconciles.inc({ trigger: record.trigger, result });
  if (cycles.length) metrics.resyncCycles.inc(cycles.length);
  if (!outcome) return;
  metrics.lastSuccess.set(Date.parse(record.finishedAt) / 1000);
  metrics.orphans.set(orphanDeployments(outcome.plan.changes));
  metrics.manifestErrors.set(outcome.plan.diagnostics.filter((d) => d.severity === 'error').length);
  metrics.drifted.reset();
  for (const d of outcome.drift) metrics.drifted.inc({ kind: d.key.slice(0, d.key.indexOf('/')), policy: d.policy });
}
