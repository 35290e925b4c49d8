// Holds: which desired state a hold stops, which holds a release request names.
import { describe, expect, it } from 'vitest';
import { BlockedError, ServiceError } from './errors.js';
import {
  answerSaysDeleting,
  holdApplies,
  holdOfFailure,
  holdsNamed,
  nameTakenHold,
  nameTakenReason,
  REFUSED_FOR_GOOD,
  revisionFailedHold,
} from './holds.js';

describe('holds', () => {
  const hold = revisionFailedHold('fp-1', 'r7', 'BUILD_FAILED', 'web', new Date('2026-01-01T00:00:00Z'));

  it('a failed revision holds exactly the desired state it was built from', () => {
    expect(hold).toMatchObject({
      reason: 'RevisionFailed',
      desired: 'fp-1',
      revisionId: 'r7',
      revisionStatus: 'BUILD_FAILED',
      since: '2026-01-01T00:00:00.000Z',
    });
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

  it('a write refused for good holds its desired state: the refusal is data (the status the service answered)', () => {
    const message = new ServiceError({
      status: 413,
      detail: 'Request body too large',
      method: 'POST',
      route: '/v2/deployments',
    }).message;
    const now = new Date('2026-01-01T00:00:00Z');
    expect(REFUSED_FOR_GOOD).toEqual([400, 413, 422]);
    const refused = holdOfFailure({ status: 413 }, 'fp-2', message, 'web', now)!;
    expect(refused).toMatchObject({ reason: 'WriteRefused', desired: 'fp-2' });
    expect(refused.message).toContain('POST /v2/deployments answered 413: Request body too large');
    expect(holdApplies(refused, 'fp-2')).toBe(true);
    expect(holdApplies(refused, 'fp-3')).toBe(false);
    expect(holdOfFailure({ status: 422 }, 'fp-2', 'x', 'web', now)?.reason).toBe('WriteRefused');
    // The status is read from the typed failure, never from the text: a message that reads like one is no refusal.
    expect(
      holdOfFailure({}, 'fp-2', 'network failure: connection refused (answered 413: no)', 'web', now),
    ).toBeUndefined();
    expect(holdOfFailure({ status: 404 }, 'fp-2', 'not found', 'web', now)).toBeUndefined();
  });

  it('a 400 because the service is deleting the deployment is no refusal of the write: not held, so its create follows', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(answerSaysDeleting('Deployment ID 7e7e7e7e-0000-4000-8000-000000000001 is being deleted.')).toBe(true);
    expect(answerSaysDeleting('source_config.resource_spec.max_scale must be at least 1')).toBe(false);
    expect(holdOfFailure({ status: 400, deleting: true }, 'fp-2', 'x', 'web', now)).toBeUndefined();
    expect(holdOfFailure({ status: 400 }, 'fp-2', 'x', 'web', now)?.reason).toBe('WriteRefused');
  });

  it('a create whose name is taken holds its desired state (NameTaken), from the typed failure, with what to do', () => {
    const error = new BlockedError(nameTakenReason('web', 'A tracing project named "web" already exists'), {
      nameTaken: true,
    });
    const failure = error.message;
    expect(error.nameTaken).toBe(true);
    expect(new BlockedError('the plan would block it now').nameTaken).toBe(false);
    expect(holdOfFailure({ nameTaken: true }, 'fp-1', failure, 'web', new Date('2026-01-01T00:00:00Z'))?.reason).toBe(
      'NameTaken',
    );
    const taken = nameTakenHold('fp-1', failure, 'web', new Date('2026-01-01T00:00:00Z'));
    expect(taken).toMatchObject({ reason: 'NameTaken', desired: 'fp-1', since: '2026-01-01T00:00:00.000Z' });
    expect(taken.message).toMatch(
      /^the name is taken on the service: the create was answered 409 \(A tracing project named "web" already exists\)/,
    );
    expect(taken.message).toContain('rename the manifest (metadata.name), or delete the tracing project "web"');
    expect(taken.message).toContain('converge reconcile --retry-failed web');
    expect(holdApplies(taken, 'fp-1')).toBe(true);
    expect(holdApplies(taken, 'fp-2')).toBe(false);
  });
});
