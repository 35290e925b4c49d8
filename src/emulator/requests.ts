// Request schemas of the emulated service beyond core's wire schemas: complete create bodies, deployment_type, provider PATCH, revision queries.
import { z } from 'zod';
import {
  CreateDeploymentRequest,
  DEFAULT_DEPLOYMENT_TYPE,
  PatchDeploymentRequest,
  ServiceDeploymentType,
  SourceConfig,
  SourceRevisionConfig,
  Secret,
} from '../core/wire/schema.js';

/** The tiers of docs/against-the-real-service.md §2 (the interface's three and the newer services' two), and the service's default: core's. */
export const AnyDeploymentType = ServiceDeploymentType;
export type AnyDeploymentType = ServiceDeploymentType;
export { DEFAULT_DEPLOYMENT_TYPE };

/** Revision statuses of docs/against-the-real-service.md §4. */
export const REVISION_STATUSES = [
  'CREATING',
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'DEPLOYED',
  'SKIPPED',
  'INTERRUPTED',
  'UNKNOWN',
] as const;
export const RevisionStatus = z.enum(REVISION_STATUSES);
export type RevisionStatus = z.infer<typeof RevisionStatus>;

/** The service's SourceConfig (the spec's fields plus the tier): core's wire schema. */
export const ServiceSourceConfig = SourceConfig;
export type ServiceSourceConfig = SourceConfig;

/** POST /v2/deployments as the real service takes it (all five fields required): core's wire schema. */
export const CreateBody = CreateDeploymentRequest;

/** The old incomplete bodies (--lenient-create): source_config, source_revision_config and secrets may be left out. */
export const LenientCreateBody = CreateBody.extend({
  source_config: ServiceSourceConfig.nullish(),
  source_revision_config: SourceRevisionConfig.nullish(),
  secrets: z.array(Secret).nullish(),
});
export type CreateBody = z.infer<typeof LenientCreateBody>;

/**
 * PATCH /v2/deployments/{id} as the service takes it: core's wire schema, plus the revision metadata the official
 * deploy tool sends (docs/official-tool.md): `tracked_packages`, a list of `package:version-spec` strings.
 */
export const PatchBody = PatchDeploymentRequest.extend({
  tracked_packages: z.array(z.string()).nullish(),
});
export type PatchBody = z.infer<typeof PatchBody>;

/** PATCH /v2/auth/providers/{provider_id}: the fields the service lets a client change. */
export const ProviderPatchBody = z.strictObject({
  name: z.string().min(1).nullish(),
  client_id: z.string().min(1).nullish(),
  client_secret: z.string().nullish(),
  auth_url: z.string().min(1).nullish(),
  token_url: z.string().min(1).nullish(),
  uses_pkce: z.boolean().nullish(),
  /** null means no PKCE method; absent keeps the stored one. */
  code_challenge_method: z.string().nullish(),
});
export type ProviderPatchBody = z.infer<typeof ProviderPatchBody>;
