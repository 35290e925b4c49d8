// Job data for the enqueue suites: a Deployment whose desired state differs only in max_scale, and how to read it back.
import type { DeploymentResource } from '../../src/core/model.js';
import { buildJobData } from '../../src/queue/jobs.js';
import type { ReconcileJobData } from '../../src/store/schema.js';

export function deployment(name: string, maxScale: number): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: 'apps/a.yaml', line: 1, column: 1 },
    suspend: false,
    spec: { source: 'external_docker', source_config: { resource_spec: { max_scale: maxScale } }, source_revision_config: { image_uri: 'docker.io/a:1' } },
  };
}

/** The job data of a PATCH of `name` to `maxScale`. */
export function data(name: string, maxScale: number): ReconcileJobData {
  return buildJobData(deployment(name, maxScale), 'patch-deployment', { origin: 'test' });
}

/** The max_scale a job's data asks for. */
export function scaleOf(d: ReconcileJobData): unknown {
  return (d.resource!.spec as unknown as { source_config: { resource_spec: { max_scale: number } } }).source_config.resource_spec.max_scale;
}
