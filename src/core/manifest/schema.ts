// Manifest schemas (docs/contracts.md §1): converge/v1 Deployment and OAuthProvider documents, strict at every level.
import { z } from 'zod';
import { DeploymentSpec } from './deployment-schema.js';
import { Metadata } from './metadata-schema.js';
import { OAuthProviderSpec } from './oauth-provider-schema.js';

export const API_VERSION = 'converge/v1';
export const MANIFEST_KINDS = ['Deployment', 'OAuthProvider'] as const;

export const DeploymentManifest = z
  .strictObject({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal('Deployment'),
    metadata: Metadata,
    spec: DeploymentSpec,
  })
  .meta({ title: 'Deployment', description: 'A deployment of the service, matched by metadata.name.' });
export type DeploymentManifest = z.infer<typeof DeploymentManifest>;

export const OAuthProviderManifest = z
  .strictObject({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal('OAuthProvider'),
    metadata: Metadata,
    spec: OAuthProviderSpec,
  })
  .meta({ title: 'OAuthProvider', description: 'An OAuth provider; metadata.name is its provider_id.' });
export type OAuthProviderManifest = z.infer<typeof OAuthProviderManifest>;

/** One manifest document of either kind. */
export const Manifest = z.discriminatedUnion('kind', [DeploymentManifest, OAuthProviderManifest]);
export type Manifest = z.infer<typeof Manifest>;

/** The schema of each kind, for loaders that dispatch on `kind` first. */
export const MANIFEST_SCHEMAS = { Deployment: DeploymentManifest, OAuthProvider: OAuthProviderManifest } as const;
