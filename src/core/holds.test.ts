// Holds: which desired state a hold stops, which holds a release request names.
import { describe, expect, it } from 'vitest';
import { BlockedError, ServiceError, serviceStatusOf } from './errors.js';
import { holdApplies, holdsNamed, isNameTaken, nameTakenHold, nameTakenReason, REFUSED_FOR_GOOD, refusedForGood, revisionFailedHold, writeRefusedHold } from './holds.js';

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

  it('a write refused for good holds its desired state; the refusal is read back from the job failure message', () => {
    const message = new ServiceError({ status: 413, detail: 'Request body too large', method: 'POST', route: '/v2/deployments' }).message;
    expect(serviceStatusOf(message)).toBe(413);
    expect(serviceStatusOf(new ServiceError({ status: 422, detail: 'x', method: 'PATCH', route: '/v2/deployments/{deployment_id}' }).message)).toBe(422);
    expect(serviceStatusOf('blocked: the name is taken')).toBeUndefined();
    expect(serviceStatusOf('network failure: connection refused (answered 413: no)')).toBeUndefined();
    expect(REFUSED_FOR_GOOD).toEqual([400, 413, 422]);
    const refused = writeRefusedHold('fp-2', message, 'web', new Date('2026-01-01T00:00:00Z'));
    expect(refused).toMatchObject({ reason: 'WriteRefused', desired: 'fp-2' });
    expect(refused.message).toContain('POST /v2/deployments answered 413: Request body too large');
    expect(holdApplies(refused, 'fp-2')).toBe(true);
    expect(holdApplies(refused, 'fp-3')).toBe(false);
  });

  it('a 400 because the service is deleting the deployment is no refusal of the write: not held, so its create follows', () => {
    const refusal = (status: number, detail: string) => new ServiceError({ status, detail, method: 'PATCH', route: '/v2/deployments/{deployment_id}' }).message;
    expect(refusedForGood(refusal(400, 'source_config.resource_spec.max_scale must be at least 1'))).toBe(true);
    expect(refusedForGood(refusal(422, 'bad value'))).toBe(true);
    expect(refusedForGood(refusal(400, 'Deployment ID 7e7e7e7e-0000-4000-8000-000000000001 is being deleted.'))).toBe(false);
    expect(refusedForGood(refusal(404, 'not found'))).toBe(false);
    expect(refusedForGood('blocked: the name is taken')).toBe(false);
  });

  it('a create whose name is taken holds its desired state (NameTaken), read back from the job failure, with what to do', () => {
    const failure = new BlockedError(nameTakenReason('web', 'A tracing project named "web" already exists')).message;
    expect(isNameTaken(failure)).toBe(true);
    // Not a refusal of the write's body, and no other failure reads as NameTaken.
    expect(refusedForGood(failure)).toBe(false);
    expect(isNameTaken(new ServiceError({ status: 409, detail: 'conflict', method: 'POST', route: '/v2/deployments' }).message)).toBe(false);
    expect(isNameTaken('blocked: the plan would block it now')).toBe(false);
    const taken = nameTakenHold('fp-1', failure, 'web', new Date('2026-01-01T00:00:00Z'));
    expect(taken).toMatchObject({ reason: 'NameTaken', desired: 'fp-1', since: '2026-01-01T00:00:00.000Z' });
    expect(taken.message).toMatch(/^the name is taken on the service: the create was answered 409 \(A tracing project named "web" already exists\)/);
    expect(taken.message).toContain('rename the manifest (metadata.name), or delete the tracing project "web"');
    expect(taken.message).toContain('converge reconcile --retry-failed web');
    expect(holdApplies(taken, 'fp-1')).toBe(true);
    expect(holdApplies(taken, 'fp-2')).toBe(false);
  });
});
