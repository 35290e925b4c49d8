// WaveSteps: a held wave asks for the next reconcile on the first change that may free it, and on one that came while the reconcile ran.
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../core/decide.js';
import { stateOfJob } from '../../core/resource-state.js';
import type { TrackedChange } from '../status/tracked-change.js';
import { WaveSteps } from './wave-steps.js';

/** A reconcile's outcomes: `Deployment/b` held behind a wave when `held`, else in sync. */
function outcomes(held: boolean): Map<string, Outcome> {
  const reason = held ? 'WaveWaiting' : 'InSync';
  const outcome = { key: 'Deployment/b', sync: { status: 'out_of_sync', reason, message: '' } } as unknown as Outcome;
  return new Map([[outcome.key, outcome]]);
}

/** The tracker's change for a job of `Deployment/a` that ended (a delete's). */
function jobEnded(): TrackedChange {
  const after = stateOfJob('Deployment/a', 'delete-deployment');
  const event = { type: 'job-completed', jobId: 'j', at: 1, result: { outcome: 'deleted' } } as const;
  return { key: after.key, events: [event as unknown as TrackedChange['events'][number]], before: after, after };
}

function steps(): { waves: WaveSteps; asked: () => number } {
  let asked = 0;
  return { waves: new WaveSteps(() => (asked += 1)), asked: () => asked };
}

describe('WaveSteps', () => {
  it('asks once, on the first job that ends after a reconcile held a wave; nothing while no wave is held', () => {
    const { waves, asked } = steps();
    waves.decided(outcomes(false), waves.started());
    waves.changed(jobEnded());
    expect(asked()).toBe(0);
    waves.decided(outcomes(true), waves.started());
    expect(asked()).toBe(0);
    waves.changed(jobEnded());
    waves.changed(jobEnded());
    expect(asked()).toBe(1);
  });

  it('a job that ended while the reconcile ran (before it decided) asks for the next reconcile at its decision', () => {
    const { waves, asked } = steps();
    const mark = waves.started();
    waves.changed(jobEnded()); // the wave's last delete ends between the reconcile's read and its decision
    waves.decided(outcomes(true), mark);
    expect(asked()).toBe(1);
    waves.changed(jobEnded());
    expect(asked(), 'one ask per decision').toBe(1);
  });

  it('a reconcile that holds nothing asks nothing, whatever ended while it ran', () => {
    const { waves, asked } = steps();
    const mark = waves.started();
    waves.changed(jobEnded());
    waves.decided(outcomes(false), mark);
    expect(asked()).toBe(0);
  });
});
