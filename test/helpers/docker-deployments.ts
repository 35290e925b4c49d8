// A docker deployment as the plan's unit tests use it: its manifest resource and the live deployment of the service.
import type { DeploymentResource, LiveDeployment } from '../../src/core/model.js';

/** The live deployment `name`, an external docker image at max_scale `maxScale`, ready. */
export function liveDocker(name: string, maxScale: number): LiveDeployment {
  return {
    id: `id-${name}`,
    name,
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: maxScale } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    secrets: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    status: 'READY',
  };
}

/** The manifest resource `name` declaring the same image at max_scale `maxScale`, in `NAME.yaml`. */
export function desiredDocker(name: string, maxScale: number): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: `${name}.yaml`, line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'external_docker',
      source_config: { resource_spec: { max_scale: maxScale } },
      source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    },
  };
}
