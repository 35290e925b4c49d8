// The next rollout wave at once: while a reconcile held writes behind a wave (WaveHeld), a rollout turning healthy or a job ending asks for a reconcile, not the next resync (docs/rollouts.md).
import type { Outcome } from '../../core/decide.js';
import type { ChangeSink, TrackedChange } from '../status/tracked-change.js';

/** Whether a change may let a held wave go: a rollout became healthy, or a job ended (a write that starts no revision, a delete). */
function mayFreeAWave(change: TrackedChange): boolean {
  const healthy = change.after.health.status === 'healthy' && change.before?.health.status !== 'healthy';
  return healthy || change.events.some((event) => event.type === 'job-completed');
}

/** Whether a reconcile's outcomes hold any write behind a wave. */
function holdsAWave(outcomes: ReadonlyMap<string, Outcome>): boolean {
  for (const outcome of outcomes.values())
    if (outcome.sync.reason === 'WaveHeld' || outcome.sync.reason === 'WaveWaiting') return true;
  return false;
}

/**
 * Watches the tracker's changes; after a reconcile that held a write behind a wave, the first change that may free it
 * asks for a reconcile (`request`, coalesced with any other). Nothing is asked while no write waits for a wave.
 * A change that came while the reconcile ran (its jobs can end before it decides) counts too: the reconcile may have
 * read the world before it, so a reconcile that holds a wave and saw such a change asks for the next one at once.
 */
export class WaveSteps implements ChangeSink {
  private waiting = false;
  /** How many changes that may free a wave were seen so far: `started` reads it, `decided` compares. */
  private freeing = 0;

  constructor(private readonly request: () => void) {}

  /** A reconcile starts: the mark its `decided` is given. */
  started(): number {
    return this.freeing;
  }

  /** What the reconcile that started at `mark` decided: whether any write waits for a wave. */
  decided(outcomes: ReadonlyMap<string, Outcome>, mark: number): void {
    this.waiting = holdsAWave(outcomes);
    if (this.waiting && this.freeing !== mark) this.ask();
  }

  changed(change: TrackedChange): void {
    if (!mayFreeAWave(change)) return;
    this.freeing += 1;
    if (this.waiting) this.ask();
  }

  removed(): void {}

  private ask(): void {
    this.waiting = false;
    this.request();
  }
}
