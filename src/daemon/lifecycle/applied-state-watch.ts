// Whether Redis lost converge's records while the daemon ran: the prefix's epoch, read every EPOCH_CHECK_MS.
import type { Logger } from 'pino';
import type { Jobs } from '../../jobs/open-jobs.js';

/** The applied-state epoch is read this often (a change or a vanishing means Redis lost converge's records). */
const EPOCH_CHECK_MS = 2_000;

/** The epoch of the prefix this daemon knows, and whether Redis lost converge's records while it ran. */
export interface AppliedStateView {
  epoch: string | null;
  lost: boolean;
  lostAt: string | null;
  losses: number;
  detail: string | null;
}

/** What the watch tells the daemon: its log, whether it is stopping, and each loss (after the view changed). */
export interface AppliedStateWatchParts {
  log: Logger;
  stopping: () => boolean;
  onLost: () => void;
}

export class AppliedStateWatch {
  private view: AppliedStateView = { epoch: null, lost: false, lostAt: null, losses: 0, detail: null };
  private timer: NodeJS.Timeout | undefined;
  private readonly parts: AppliedStateWatchParts;

  constructor(parts: AppliedStateWatchParts) {
    this.parts = parts;
  }

  /** What is known now (the /status field, the notifications' applied-state watch). */
  get current(): AppliedStateView {
    return this.view;
  }

  /**
   * Reads (or writes, on a first start) the prefix's epoch, and warns once when Redis may evict keys: an evicted
   * applied record or job is lost work (BullMQ and converge need maxmemory-policy noeviction).
   */
  async check(jobs: Jobs): Promise<void> {
    const { log } = this.parts;
    this.view.epoch = await jobs.epoch.ensure();
    const eviction = await jobs.evictionPolicy();
    if ('unknown' in eviction)
      log.debug(
        { reason: eviction.unknown },
        'Redis maxmemory-policy not checked (managed Redis often refuses CONFIG); make sure it is noeviction',
      );
    else if (eviction.policy !== 'noeviction') {
      log.warn(
        { maxmemoryPolicy: eviction.policy },
        `Redis maxmemory-policy is ${eviction.policy}, not noeviction: under memory pressure Redis may evict converge's jobs and applied state; set maxmemory-policy noeviction (see docs/daemon.md, "In production")`,
      );
    }
  }

  /** Reads the epoch every EPOCH_CHECK_MS; a change or a vanishing is one error, a metric and a /status field. */
  start(jobs: Jobs): void {
    const { log, stopping, onLost } = this.parts;
    let checking = false;
    this.timer = setInterval(() => {
      if (checking || stopping()) return;
      checking = true;
      void (async () => {
        const now = await jobs.epoch.read();
        if (now === this.view.epoch || stopping()) return;
        const detail = now === null ? 'the epoch key vanished' : 'the epoch key changed';
        this.view = { epoch: null, lost: true, lostAt: new Date().toISOString(), losses: this.view.losses + 1, detail };
        onLost();
        log.error(
          { detail },
          "Redis lost converge's records (applied state, desired-state memory, jobs): restarted without persistence, flushed, evicted or failed over to an empty replica. Secrets that cannot be compared are not rewritten (SecretsUnknown) and drift under report is not healed; run Redis with appendonly yes and maxmemory-policy noeviction",
        );
        this.view.epoch = await jobs.epoch.ensure();
      })()
        .catch(() => undefined) // Redis away: the next tick reads again.
        .finally(() => (checking = false));
    }, EPOCH_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
