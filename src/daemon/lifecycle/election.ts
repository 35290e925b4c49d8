// This replica's election: the leader lease's loop and the terms it leads (watcher, reconciles, resync), with their gauges.
import type { LeadershipEvents } from '../../leader/leadership.js';
import { Leadership } from '../../leader/leadership.js';
import type { DaemonSettings } from '../daemon-options.js';
import type { DaemonMetrics } from '../telemetry/metrics.js';
import { registerDaemonGauges } from '../telemetry/queue-metrics.js';
import { LeaderTerms, type TermParts } from './leader-term.js';

/** What the election uses of the daemon: a term's parts, the replica's name, its metrics and the lease's events. */
export interface ElectionParts extends TermParts {
  settings: DaemonSettings;
  /** The replica's name in the lease. */
  replicaId: string;
  metrics: DaemonMetrics;
  /** The lease taken (a term begins), lost (it ends), or an error of the loop. */
  events: LeadershipEvents;
}

/** The election loop and its terms, not yet started: the lease holder leads; its gauges are registered. */
export function electionOf(p: ElectionParts): { leadership: Leadership; terms: LeaderTerms } {
  const { metrics, settings, jobs } = p;
  const lease = jobs.lease(p.replicaId, settings.lease);
  const leadership = new Leadership(lease, p.events);
  const terms = new LeaderTerms(p);
  registerDaemonGauges(metrics, {
    lease: () => leadership.status(),
    queue: () => jobs.queueCounts(),
    resyncMs: settings.resync,
  });
  const line = 'trying to take the leader lease (the holder watches, plans and enqueues; every replica runs jobs)';
  p.log.info({ replica: lease.holder, leaseMs: lease.ttlMs }, line);
  return { leadership, terms };
}
