// The Deployment kind: listed by the service, diffed field by field, created or patched.
import type { DeploymentResource } from '../../model.js';
import { fingerprintOf, type KindModule } from '../kind.js';
import { diffDeployment } from './diff.js';
import { deploymentFromJob, deploymentJobPayload, DeploymentJobPayload } from './job.js';
import { exportDeployments } from './export.js';
import { deploymentHealth, deploymentRevisionToRead } from './health.js';
import { deploymentLiveSide } from './live-side.js';
import { deploymentManifest } from './manifest.js';

export { diffDeployment, requestBody, type DeploymentContext, type DeploymentDiff } from './diff.js';

const OPERATIONS = ['create-deployment', 'patch-deployment', 'delete-deployment'] as const;

export const deploymentKind = {
  kind: 'Deployment',
  listed: true,
  rollout: true,
  adoptNote: true,
  exportFolder: '',
  noun: { one: 'deployment', many: 'deployments' },
  health: deploymentHealth,
  revisionToRead: deploymentRevisionToRead,
  diff(resource, live, context) {
    return diffDeployment(resource, live, context).change;
  },
  fingerprint(resource, secretHashes) {
    const { secrets, ...others } = resource.spec;
    return fingerprintOf(resource, { ...others, secrets: (secrets ?? []).map((s) => s.name) }, secretHashes);
  },
  secretSources(resource) {
    return (resource.spec.secrets ?? []).map((s) => ({ name: s.name, from: s.from }));
  },
  jobSchema: DeploymentJobPayload,
  operations: OPERATIONS,
  operation(_resource, action) {
    return action === 'create' ? 'create-deployment' : 'patch-deployment';
  },
  jobPayload: deploymentJobPayload,
  fromJobPayload: deploymentFromJob,
  manifest: deploymentManifest,
  ...deploymentLiveSide,
  exportLive: exportDeployments,
} satisfies KindModule<DeploymentResource, typeof DeploymentJobPayload, (typeof OPERATIONS)[number]>;
