// Job data for the enqueue suites: a Deployment whose desired state differs only in max_scale, and how to read it back.
import { kindOf, type JobWrite } from '../../src/core/kinds/index.js';
import type { DeploymentResource, DesiredResource, LiveDeployment } from '../../src/core/model.js';
import { jobWriteOf } from '../../src/core/write-premise.js';
import { buildJobData } from '../../src/jobs/queue/jobs.js';
import { hashDesiredSecrets } from '../../src/secrets/resolve.js';
import type { ReconcileJobData } from '../../src/store/schema.js';

export function deployment(name: string, maxScale: number): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: 'apps/a.yaml', line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'external_docker',
      source_config: { resource_spec: { max_scale: maxScale } },
      source_revision_config: { image_uri: 'docker.io/a:1' },
    },
  };
}

/**
 * The write the decision makes for `resource` against `live` (undefined: none), as a job carries it: what the plan's
 * diff finds differing, with the secrets resolved in `env`.
 */
export function decidedWrite(resource: DesiredResource, live?: LiveDeployment, env: NodeJS.ProcessEnv = {}): JobWrite {
  const change = kindOf(resource.kind).diff(resource, live, { secretHashes: hashDesiredSecrets(resource, env).hashes });
  return jobWriteOf({ op: live ? 'update' : 'create' }, change);
}

/**
 * The job data of `name` at `maxScale`, labelled a PATCH: its decided write is the create of a deployment the service
 * does not have (the queue suites run such jobs against an empty emulator).
 */
export function data(name: string, maxScale: number): ReconcileJobData {
  const resource = deployment(name, maxScale);
  return buildJobData(resource, 'patch-deployment', { origin: 'test', write: decidedWrite(resource) });
}

/** The max_scale a job's data asks for. */
export function scaleOf(d: ReconcileJobData): unknown {
  return (d.resource!.spec as unknown as { source_config: { resource_spec: { max_scale: number } } }).source_config
    .resource_spec.max_scale;
}
