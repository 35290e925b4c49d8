// Unit tests of the one corridor from gathered input to decided outcomes: plan, apply and the daemon decide alike from the same inputs.
import { describe, expect, it } from 'vitest';
import { resourceKey } from '../core/model.js';
import { decideOutcomes, type OutcomeInputs } from './outcomes.js';
import { plan, type PlanInput } from './plan.js';
import { desiredDocker as desired, liveDocker as live } from '../../test/helpers/docker-deployments.js';

const resources = [desired('web', 2), desired('api', 1)];
const deployments = [live('web', 1), live('api', 1), live('stray', 1)];
const planInput: PlanInput = {
  resources,
  blocked: [],
  diagnostics: [],
  live: { deployments },
  applied: new Map(),
  secretHashes: new Map(),
};
const result = plan(planInput);

function inputs(mode: OutcomeInputs['mode'], extra: Partial<OutcomeInputs> = {}): OutcomeInputs {
  return {
    mode,
    resources: new Map(resources.map((r) => [resourceKey(r.kind, r.name), r])),
    live: deployments,
    revisions: new Map(),
    secretHashes: new Map(),
    now: 0,
    ...extra,
  };
}

describe('decideOutcomes', () => {
  it('gives plan, apply and the daemon the same decision inputs: a write, a noop and an orphan decide alike without memory', () => {
    const [p, a, d] = (['plan', 'apply', 'daemon'] as const).map((mode) => decideOutcomes(result, inputs(mode)));
    for (const key of ['Deployment/web', 'Deployment/api', 'Deployment/stray']) {
      const { remember: _planRemember, ...planOutcome } = p!.outcomes.get(key)!;
      const { remember: _daemonRemember, ...daemonOutcome } = d!.outcomes.get(key)!;
      expect(daemonOutcome).toEqual(planOutcome);
      expect(a!.outcomes.get(key)).toEqual(p!.outcomes.get(key));
      // The same live resource and fingerprint reach the decision in every mode (an orphan's live side included).
      expect(d!.inputs.get(key)!.live).toEqual(p!.inputs.get(key)!.live);
      expect(d!.inputs.get(key)!.fingerprint).toEqual(p!.inputs.get(key)!.fingerprint);
    }
    expect(p!.outcomes.get('Deployment/web')!.write?.op).toBe('update');
    expect(p!.outcomes.get('Deployment/stray')!.skip?.code).toBe('Orphan');
    expect(p!.inputs.get('Deployment/stray')!.live?.name).toBe('stray');
  });

  it('applies the memory where it exists: a hold on the current desired state stops the write and is in force; one on an older state is not', () => {
    const free = decideOutcomes(result, inputs('daemon'));
    const fingerprint = free.fingerprints.get('Deployment/web')!;
    const hold = {
      reason: 'RevisionFailed' as const,
      desired: fingerprint,
      message: 'revision r1 ended BUILD_FAILED',
      since: '2026-01-01T00:00:00Z',
    };
    const held = decideOutcomes(result, inputs('daemon', { memory: { holds: new Map([['Deployment/web', hold]]) } }));
    expect(held.outcomes.get('Deployment/web')!.write ?? undefined).toBeUndefined();
    expect(held.outcomes.get('Deployment/web')!.skip?.code).toBe('RevisionFailed');
    expect(held.holds.get('Deployment/web')).toEqual(hold);
    const stale = decideOutcomes(
      result,
      inputs('daemon', { memory: { holds: new Map([['Deployment/web', { ...hold, desired: 'older' }]]) } }),
    );
    expect(stale.outcomes.get('Deployment/web')!.write?.op).toBe('update');
    expect(stale.holds.size).toBe(0);
  });
});
