// Prometheus metrics a running daemon reads at each scrape: the reconcile queue's jobs by state (from Redis), the leader lease, and the resync period it runs with.
import { Gauge, type Registry } from 'prom-client';
import type { LeadershipStatus } from '../../leader/leadership.js';
import { registerLeaseMetrics } from './lease-metrics.js';
import type { DaemonMetrics } from './metrics.js';

/** The gauges of a daemon that takes part in the election: the lease's, the queue's, and its resync period. */
export function registerDaemonGauges(
  metrics: DaemonMetrics,
  sources: {
    lease: () => LeadershipStatus | undefined;
    queue: () => Promise<Readonly<Record<string, number>>>;
    resyncMs: number;
  },
): void {
  registerLeaseMetrics(metrics.registry, sources.lease);
  registerQueueMetrics(metrics.registry, sources.queue);
  metrics.resyncPeriod.set(sources.resyncMs / 1000);
}

/** Registers converge_queue_jobs{state} on the daemon's registry: `counts` is asked at every scrape. */
export function registerQueueMetrics(
  registry: Registry,
  counts: () => Promise<Readonly<Record<string, number>>>,
): void {
  new Gauge({
    name: 'converge_queue_jobs',
    help: "Jobs of the reconcile queue by state (wait, prioritized, delayed: waiting; active: running; failed: kept after their last attempt), every replica's, read from Redis at each scrape; no series when Redis did not answer (unknown, not zero)",
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      let read: Readonly<Record<string, number>>;
      try {
        read = await counts();
      } catch {
        return;
      }
      for (const [state, value] of Object.entries(read)) this.set({ state }, value);
    },
  });
}
