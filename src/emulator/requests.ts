// Request schemas of the emulated service beyond core's wire schemas: complete create bodies, deployment_type, provider PATCH, revision queries.
import { z } from 'zod';
import {
  PatchDeploymentRequest,
  Secret,
  SecretReference,
  Source,
  SourceConfig,
  SourceRevisionConfig,
} from '../core/wire/schema.js';

/** The tiers of real-service.md: the spec's three and the newer services' two. */
export const DEPLOYMENT_TYPES = ['dev_free', 'dev', 'prod', 'dev_zero', 'dev_free_zero'] as const;
export const AnyDeploymentType = z.enum(DEPLOYMENT_TYPES);
export type AnyDeploymentType = z.infer<typeof AnyDeploymentType>;

/** The tier the service chooses when a codehost create leaves deployment_type out. */
export const DEFAULT_DEPLOYMENT_TYPE: AnyDeploymentType = 'prod';

/** Revision statuses of real-service.md. */
export const REVISION_STATUSES = [
  'CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING',
  'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'DEPLOYED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN',
] as const;
export const RevisionStatus = z.enum(REVISION_STATUSES);
export type RevisionStatus = z.infer<typeof RevisionStatus>;

/** The service's SourceConfig: the spec's fields plus the tier. */
export const ServiceSourceConfig = SourceConfig.extend({ deployment_type: AnyDeploymentType.nullish() });
export type ServiceSourceConfig = z.infer<typeof ServiceSourceConfig>;

/** POST /v2/deployments as the real service takes it: every one of these five fields is required. */
export const CreateBody = z.strictObject({
  name: z.string(),
  source: Source,
  source_config: ServiceSourceConfig,
  source_revision_config: SourceRevisionConfig,
  secrets: z.array(Secret),
  secret_references: z.array(SecretReference).nullish(),
});

/** The old incomplete bodies (--lenient-create): source_config, source_revision_config and secrets may be left out. */
export const LenientCreateBody = CreateBody.extend({
  source_config: ServiceSourceConfig.nullish(),
  source_revision_config: SourceRevisionConfig.nullish(),
  secrets: z.array(Secret).nullish(),
});
export type CreateBody = z.infer<typeof LenientCreateBody>;

export const PatchBody = PatchDeploymentRequest.extend({ source_config: ServiceSourceConfig.nullish() });
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
