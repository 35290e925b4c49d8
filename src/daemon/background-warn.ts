// The warning of an error in one of the daemon's background parts (watcher, lease, workers), throttled per source.
import type { Logger } from 'pino';
import { errorLine } from './reconcile/run-record.js';

/** Logs an error at most once per `ms` per source (a Redis outage makes workers report every reconnect). */
export function throttledWarn(log: Logger, ms = 10_000) {
  const last = new Map<string, number>();
  return (source: string, error: unknown) => {
    const now = Date.now();
    if ((last.get(source) ?? 0) + ms > now) return;
    last.set(source, now);
    log.warn({ source, error: errorLine(error) }, 'background error');
  };
}
