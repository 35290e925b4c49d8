// Prometheus metrics of the leader lease: whether this replica leads, and how often it took or lost the lease.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { LeadershipStatus } from '../../leader/leadership.js';

export interface LeaseMetrics {
  /** Reads the leadership's state into the gauges (at every scrape). */
  observe(status: LeadershipStatus): void;
}

/** Registers converge_leader{replica} and converge_lease_transitions_total{to} on the daemon's registry. */
export function registerLeaseMetrics(registry: Registry, status: () => LeadershipStatus | undefined): LeaseMetrics {
  let seen = { gained: 0, lost: 0 };
  const transitions = new Counter({
    name: 'converge_lease_transitions_total',
    help: 'Times this replica took (to="leader") or lost (to="standby") the leader lease',
    labelNames: ['to'] as const,
    registers: [registry],
  });
  transitions.inc({ to: 'leader' }, 0);
  transitions.inc({ to: 'standby' }, 0);
  const observe = (now: LeadershipStatus): void => {
    if (now.transitions.gained > seen.gained) transitions.inc({ to: 'leader' }, now.transitions.gained - seen.gained);
    if (now.transitions.lost > seen.lost) transitions.inc({ to: 'standby' }, now.transitions.lost - seen.lost);
    seen = { ...now.transitions };
  };
  new Gauge({
    name: 'converge_leader',
    help: 'Whether this replica holds the leader lease (1) and plans and enqueues, or is a standby (0) running jobs only',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      const now = status();
      if (!now) return;
      observe(now);
      this.reset();
      this.set({ replica: now.replica }, now.leading ? 1 : 0);
    },
  });
  new Gauge({
    name: 'converge_leader_since_seconds',
    help: 'When this replica took the leader lease it holds (Unix time, its own clock), 0 on a standby',
    registers: [registry],
    collect() {
      const now = status();
      const since = now?.leading && now.leader ? Date.parse(now.leader.since) / 1000 : 0;
      this.set(Number.isFinite(since) ? since : 0);
    },
  });
  return { observe };
}
