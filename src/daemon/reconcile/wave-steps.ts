// The next rollout wave at once: while a reconcile held writes behind a wave (WaveHeld), a rollout turning healthy or a job ending asks for a reconcile, not the next resync (docs/rollouts.md).
import type { Outcome } from '../../core/decide.js';
import type { ChangeSink, TrackedChange } from '../status/tracked-change.js';

/** Whether a change may let a held wave go: a rollout became healthy, or a job ended (a write that starts no revision, a delete). */
function mayFreeAWave(change: TrackedChange): boolean {
  const healthy = change.after.health.status === 'healthy' && change.before?.health.status !== 'healthy';
  return healthy || change.events.some((event) => event.type === 'job-completed');
}

/**
 * Watches the tracker's changes; after a reconcile that held a write behind a wave, the first change that may free it
 * asks for a reconcile (`request`, coalesced with any other). Nothing is asked while no write waits for a wave.
 */
export class WaveSteps implements ChangeSink {
  private waiting = false;

  constructor(private readonly request: () => void) {}

  /** What the last reconcile decided: whether any write waits for a wave. */
  decided(outcomes: ReadonlyMap<string, Outcome>): void {
    this.waiting = false;
    for (const outcome of outcomes.values())
      if (outcome.sync.reason === 'WaveHeld' || outcome.sync.reason === 'WaveWaiting') this.waiting = true;
  }

  changed(change: TrackedChange): void {
    if (!this.waiting || !mayFreeAWave(change)) return;
    this.waiting = false;
    this.request();
  }

  removed(): void {}
}
