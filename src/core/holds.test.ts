// Holds: which desired state a hold stops, which holds a release request names.
import { describe, expect, it } from 'vitest';
import { holdApplies, holdsNamed, revisionFailedHold } from './holds.js';

describe('holds', () => {
  const hold = revisionFailedHold('fp-1', 'r7', 'BUILD_FAILED', 'web', new Date('2026-01-01T00:00:00Z'));

  it('a failed revision holds exactly the desired state it was built from', () => {
    expect(hold).toMatchObject({ reason: 'RevisionFailed', desired: 'fp-1', revisionId: 'r7', revisionStatus: 'BUILD_FAILED', since: '2026-01-01T00:00:00.000Z' });
    expect(hold.message).toContain('converge reconcile --retry-failed web');
    expect(holdApplies(hold, 'fp-1')).toBe(true);
    // A changed manifest is a new desired state: written.
    expect(holdApplies(hold, 'fp-2')).toBe(false);
    expect(holdApplies(hold, undefined)).toBe(false);
    expect(holdApplies(undefined, 'fp-1')).toBe(false);
  });

  it('a release names holds by Kind/name or name, or all of them, and says which names held nothing', () => {
    const held = ['Deployment/web', 'Deployment/api', 'OAuthProvider/web'];
    expect(holdsNamed(held, true)).toEqual({ released: held, unmatched: [] });
    expect(holdsNamed(held, ['web'])).toEqual({ released: ['Deployment/web', 'OAuthProvider/web'], unmatched: [] });
    expect(holdsNamed(held, ['Deployment/api', 'nope'])).toEqual({ released: ['Deployment/api'], unmatched: ['nope'] });
    expect(holdsNamed([], ['web'])).toEqual({ released: [], unmatched: ['web'] });
  });
});
