// Prometheus metrics of the reconcile queue: its jobs by state, read from Redis at each scrape.
import { Gauge, type Registry } from 'prom-client';

/** Registers converge_queue_jobs{state} on the daemon's registry: `counts` is asked at every scrape. */
export function registerQueueMetrics(registry: Registry, counts: () => Promise<Readonly<Record<string, number>>>): void {
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
