// This replica's wall clock against Redis' (the one clock of every "since"): a gauge at each reading, a warning when it leaves the bound.
import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import { CLOCK_SKEW_BOUND_MS, skewChange, skewMessage, type SkewNotice } from '../../core/clock-skew.js';
import type { ClockReading } from '../../store/clock.js';

/** The clock is read this often (and once at start). */
export const CLOCK_CHECK_MS = 30_000;

export interface ClockWatchParts {
  log: Logger;
  /** converge_clock_skew_seconds. */
  gauge: Pick<Gauge, 'set'>;
  /** One reading (Jobs.clockSkew). */
  read: () => Promise<ClockReading>;
  stopping: () => boolean;
}

/** Reads the skew at start and every CLOCK_CHECK_MS; logs only when it goes beyond the bound, moves by another bound, or comes back. */
export class ClockWatch {
  private notice: SkewNotice | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly parts: ClockWatchParts;

  constructor(parts: ClockWatchParts) {
    this.parts = parts;
  }

  /** One reading: the gauge set, and a line when it is news. A Redis that does not answer is left to the next reading. */
  async check(): Promise<void> {
    const { log, gauge, read } = this.parts;
    let reading: ClockReading;
    try {
      reading = await read();
    } catch {
      return; // Redis away: its readiness check says so; the next reading tries again.
    }
    gauge.set(reading.skewMs / 1000);
    const change = skewChange(this.notice, reading);
    this.notice = change.notice;
    const fields = {
      skewSeconds: reading.skewMs / 1000,
      boundSeconds: CLOCK_SKEW_BOUND_MS / 1000,
      roundTripMs: reading.roundTripMs,
    };
    if (change.log === 'warn') log.warn(fields, skewMessage(reading.skewMs));
    if (change.log === 'info')
      log.info(fields, `this replica's clock is within ${CLOCK_SKEW_BOUND_MS / 1000} s of Redis' clock again`);
  }

  start(): void {
    let checking = false;
    const tick = (): void => {
      if (checking || this.parts.stopping()) return;
      checking = true;
      void this.check().finally(() => (checking = false));
    };
    tick();
    this.timer = setInterval(tick, CLOCK_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
