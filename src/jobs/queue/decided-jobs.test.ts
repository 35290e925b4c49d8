// From decided outcomes to job data: which outcome becomes a job and what its data holds, the one step apply and the daemon share.
import { describe, expect, it } from 'vitest';
import type { DecidedWrite } from '../../core/decide.js';
import type { DeploymentResource, PlanChange } from '../../core/model.js';
import { kindOf } from '../../core/kinds/index.js';
import { decidedJob, jobDataOf, type DecidedResource } from './decided-jobs.js';

const RESOURCE: DeploymentResource = {
  kind: 'Deployment',
  name: 'web',
  location: { file: 'apps/web.yaml', line: 1, column: 1 },
  suspend: false,
  spec: {
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 4 } },
    source_revision_config: { image_uri: 'docker.io/a:1' },
    secrets: [{ name: 'TOKEN', from: { value: 'planted-literal-9c1d' } }],
  },
};

function change(action: PlanChange['action'], extra: Partial<PlanChange> = {}): PlanChange {
  return {
    kind: 'Deployment',
    name: 'web',
    action,
    new_revision: false,
    fields: [{ path: 'source_config.resource_spec.max_scale', before: 2, after: 4, sensitive: false }],
    reason: null,
    ...extra,
  };
}

function known(extra: Partial<DecidedResource> = {}): DecidedResource {
  return { change: change('update'), resource: RESOURCE, liveId: 'd1', ...extra };
}

const write = (op: DecidedWrite['op']): { write: DecidedWrite } => ({ write: { op, drift: false } });
const HASHES = { TOKEN: 'h'.repeat(64) };

describe('decidedJob', () => {
  it('is none for an outcome that decided no write, a delete without a live id, or a write without its manifest', () => {
    expect(decidedJob({ write: null }, known())).toBeUndefined();
    expect(decidedJob(write('delete'), known({ change: change('delete'), resource: undefined }))).toBeUndefined();
    expect(decidedJob(write('update'), known({ resource: undefined }))).toBeUndefined();
  });

  it('is a delete to the change live id, with no resource', () => {
    expect(decidedJob(write('delete'), known({ change: change('delete', { id: 'd9' }), resource: undefined }))).toEqual(
      { change: change('delete', { id: 'd9' }), deploymentId: 'd9' },
    );
  });

  it('is a write with the fields it may send, the live id, and the desired fingerprint known or computed', () => {
    const job = decidedJob(write('update'), known({ fingerprint: 'f'.repeat(64) }))!;
    expect(job).toMatchObject({
      resource: RESOURCE,
      deploymentId: 'd1',
      desired: 'f'.repeat(64),
      write: { op: 'update', fields: ['source_config.resource_spec.max_scale'] },
    });
    expect(decidedJob(write('update'), known({ secretHashes: HASHES }))!.desired).toBe(
      kindOf('Deployment').fingerprint(RESOURCE, HASHES),
    );
    expect(decidedJob(write('create'), known({ change: change('create'), liveId: undefined }))).not.toHaveProperty(
      'desired',
    );
    expect(decidedJob(write('rebuild'), known({ change: change('noop', { fields: [] }) }))!.write).toEqual({
      op: 'rebuild',
      fields: [],
    });
  });
});

describe('jobDataOf', () => {
  it('makes a write job: its operation, origin, live id, desired state and manifests; a literal secret as a pointer only', () => {
    const job = decidedJob(write('update'), known({ secretHashes: HASHES }))!;
    const data = jobDataOf(job, {
      origin: 'daemon',
      manifestVersion: { kind: 'content', id: 'c1c1c1c1c1c1', readAt: '2026-01-01T00:00:00Z' },
    });
    expect(data).toMatchObject({
      key: 'Deployment/web',
      operation: 'patch-deployment',
      origin: 'daemon',
      deploymentId: 'd1',
      desired: job.desired,
      manifestVersion: { kind: 'content', id: 'c1c1c1c1c1c1', readAt: '2026-01-01T00:00:00Z' },
    });
    expect(JSON.stringify(data)).not.toContain('planted-literal-9c1d');
    expect(
      jobDataOf(decidedJob(write('create'), known({ change: change('create'), liveId: undefined }))!, {
        origin: 'apply',
      }).operation,
    ).toBe('create-deployment');
  });

  it('makes a delete job by live id, taking the tracing project as the setting says', () => {
    const job = decidedJob(write('delete'), known({ change: change('delete', { id: 'd9' }), resource: undefined }))!;
    expect(jobDataOf(job, { origin: 'apply', deleteTracingProjects: true })).toMatchObject({
      key: 'Deployment/web',
      operation: 'delete-deployment',
      deploymentId: 'd9',
      remove: { id: 'd9', deleteTracingProject: true },
    });
    expect(jobDataOf(job, { origin: 'apply' }).remove).toMatchObject({ deleteTracingProject: false });
  });

  it('refuses a write that carries no decided write', () => {
    expect(() => jobDataOf({ resource: RESOURCE, change: change('update') }, { origin: 'apply' })).toThrow(TypeError);
  });
});
