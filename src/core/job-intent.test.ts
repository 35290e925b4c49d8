// The one rule of a job's intent as it runs: the leader's token, the newest desired state, and a delete's absence and confirmation.
import { describe, expect, it } from 'vitest';
import { confirms, deleteIntentOf, intentLost, type DeleteIntent } from './job-intent.js';
import type { Absence } from './prune-grace.js';

const absence: Absence = { since: 1_000, manifests: 'm1', seen: 2, id: 'd-1' };
const grace: DeleteIntent = deleteIntentOf(absence, false);
const confirmed: DeleteIntent = deleteIntentOf(absence, true);

describe('intentLost', () => {
  it('every job: an older fencing token is a former leader, an older sequence is superseded; none of either passes', () => {
    expect(intentLost({ fence: 3, seq: 7 }, { fence: 4, seq: 7 })).toEqual({
      code: 'former_leader',
      message: 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent',
    });
    expect(intentLost({ fence: 4, seq: 6 }, { fence: 4, seq: 7 })?.code).toBe('superseded');
    expect(intentLost({ fence: 4, seq: 7 }, { fence: 4, seq: 7 })).toBeUndefined();
    // apply's jobs carry no token, and no intent: only the sequence counts.
    expect(intentLost({ seq: 7 }, { fence: 9, seq: 7 })).toBeUndefined();
    // The token is checked first: a former leader's job is that, whatever else holds.
    expect(intentLost({ fence: 3, deleteIntent: grace }, { fence: 4 })?.code).toBe('former_leader');
  });

  it('a delete decided on its grace holds while its absence is the one it was decided on (more sightings do not matter)', () => {
    expect(grace).toEqual({ by: 'grace', since: 1_000, manifests: 'm1', id: 'd-1' });
    expect(intentLost({ fence: 4, deleteIntent: grace }, { fence: 4, absence })).toBeUndefined();
    expect(
      intentLost({ fence: 4, deleteIntent: grace }, { fence: 4, absence: { ...absence, seen: 5 } }),
    ).toBeUndefined();
  });

  it('declared again: no absence recorded any more (a reconcile read the manifest back), nothing sent', () => {
    expect(intentLost({ fence: 4, deleteIntent: grace }, { fence: 4 })).toEqual({
      code: 'declared_again',
      message:
        'not deleted: declared again in the manifests read since its delete was decided (no absence is recorded any more); nothing sent',
    });
    expect(intentLost({ deleteIntent: confirmed }, { confirmation: { id: 'd-1', since: 1_000 } })?.code).toBe(
      'declared_again',
    );
  });

  it('not due: the absence started again (other manifests, another since) or names another live id', () => {
    for (const changed of [{ manifests: 'm2' }, { since: 2_000 }, { id: 'd-2' }]) {
      expect(intentLost({ deleteIntent: grace }, { absence: { ...absence, ...changed } })?.code).toBe('not_due');
    }
  });

  it('a delete a person confirmed needs the confirmation still stored, of this very absence', () => {
    expect(confirmed.by).toBe('confirmed');
    expect(
      intentLost({ deleteIntent: confirmed }, { absence, confirmation: { id: 'd-1', since: 1_000 } }),
    ).toBeUndefined();
    expect(intentLost({ deleteIntent: confirmed }, { absence })).toEqual({
      code: 'not_confirmed',
      message: 'not deleted: the confirmation its delete was decided on is no longer stored; nothing sent',
    });
    expect(intentLost({ deleteIntent: confirmed }, { absence, confirmation: { id: 'd-1', since: 999 } })?.code).toBe(
      'not_confirmed',
    );
    expect(intentLost({ deleteIntent: confirmed }, { absence, confirmation: { id: 'd-9', since: 1_000 } })?.code).toBe(
      'not_confirmed',
    );
  });

  it('confirms: a confirmation counts only for the absence it was given for', () => {
    expect(confirms({ id: 'd-1', since: 1_000 }, absence)).toBe(true);
    expect(confirms({ id: 'd-1', since: 1_000 }, { ...absence, since: 1_001 })).toBe(false);
    expect(confirms(undefined, absence)).toBe(false);
    expect(confirms({ id: 'd-1', since: 1_000 }, undefined)).toBe(false);
  });
});
