// When the reconciler tries again: one retry timer, backed off per failure in a row and per job that sent nothing.
import type { Logger } from 'pino';
import type { ReconcileJobResult } from '../../store/schema.js';

export interface RetrySettings {
  /** First retry delay after a failed reconcile; doubles up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs: number;
}

/** One retry timer: a later call replaces it; any other request takes its place (`cancel`). */
export class RetrySchedule {
  private timer: NodeJS.Timeout | undefined;
  /** Failed reconciles in a row. */
  failures = 0;
  /**
   * Jobs in a row that sent nothing, live state changed since their decision or a former term's (the next reconcile's
   * backoff).
   */
  liveChanges = 0;
  private stopped = false;

  constructor(
    private readonly settings: RetrySettings,
    private readonly retry: () => void,
  ) {}

  /** Whether a retry is waiting for its time. */
  pending(): boolean {
    return this.timer !== undefined;
  }

  /** A reconcile failed: the next retry after the backoff of the failures in a row; returns its delay. */
  failed(): number {
    this.failures += 1;
    const delay = this.backoff(this.failures);
    this.retryIn(delay);
    return delay;
  }

  /**
   * A job sent nothing (live changed; a delete whose intent no longer held; or ours, of an earlier lease): one retry
   * soon answers every drop before it; only what a decision may meet again (live_changed, a delete's intent) backs off
   * (docs/daemon.md).
   */
  jobNotRun(log: Logger, key: string, jobId: string, result: ReconcileJobResult): void {
    const again = result.notRun !== 'former_leader';
    const why =
      result.notRun === 'live_changed'
        ? 'live state changed since its decision'
        : again
          ? 'the intent of its delete no longer held'
          : 'enqueued under an earlier lease of this replica';
    log.info({ key, jobId, reason: result.message }, `job sent nothing: ${why}; reconciling again`);
    if (!this.timer) this.retryIn(this.backoff(again ? ++this.liveChanges : Math.max(1, this.liveChanges)));
  }

  /** The delay before the `n`th retry in a row: retryMs doubled per retry, at most maxRetryMs. */
  private backoff(n: number): number {
    return Math.min(this.settings.maxRetryMs, (this.settings.retryMs ?? 1_000) * 2 ** Math.min(n - 1, 16));
  }

  /** A reconcile of trigger `retry` in `delay` ms. */
  private retryIn(delay: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.retry();
    }, delay);
  }

  /** Drops the waiting retry (another request takes its place). */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** No retry from now on. */
  stop(): void {
    this.stopped = true;
    this.cancel();
  }
}
