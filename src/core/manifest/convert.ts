// Validated manifest documents to the desired-resource model (src/core/model.ts).
import type {
  DeploymentResource,
  DeploymentSpec,
  DesiredResource,
  DriftPolicy,
  ManualProviderSpec,
  ProviderResource,
  SecretRef,
  SecretSource,
  SourceLocation,
} from '../model.js';
import {
  ADOPT_ANNOTATION,
  DRIFT_ANNOTATION,
  PRUNE_ANNOTATION,
  WAVE_ANNOTATION,
  SUSPEND_ANNOTATION,
  type Metadata,
} from './metadata-schema.js';
import type { ClientSecret } from './oauth-provider-schema.js';
import type { SecretValueFrom } from './schema-parts.js';
import type { DeploymentManifest, OAuthProviderManifest } from './schema.js';

/** Finds where a data path sits in the source (the caller owns the YAML document). */
export type Locator = (path: PropertyKey[]) => SourceLocation;

function fromValueFrom(from: SecretValueFrom): SecretSource {
  if (from.env !== undefined) return { env: from.env };
  return { file: from.file! };
}

type Base = {
  name: string;
  location: SourceLocation;
  suspend: boolean;
  driftPolicy?: DriftPolicy;
  adopt?: true;
  keep?: true;
  wave?: number;
};

function base(metadata: Metadata, location: SourceLocation): Base {
  const annotations = metadata.annotations ?? {};
  const drift = annotations[DRIFT_ANNOTATION];
  const out: Base = {
    name: metadata.name,
    location,
    suspend: annotations[SUSPEND_ANNOTATION] === 'true',
  };
  if (drift === 'heal' || drift === 'report') out.driftPolicy = drift;
  if (annotations[ADOPT_ANNOTATION] === 'true') out.adopt = true;
  if (annotations[PRUNE_ANNOTATION] === 'false') out.keep = true;
  const wave = annotations[WAVE_ANNOTATION] === undefined ? 0 : Number(annotations[WAVE_ANNOTATION]);
  // Wave 0, the default, is left out: a resource without the annotation is the same object as before it existed.
  if (wave !== 0) out.wave = wave;
  return out;
}

/** Where a secret's source is written: the env/file value, or the literal. */
function secretPath(prefix: PropertyKey[], from: SecretValueFrom | undefined): PropertyKey[] {
  if (!from) return [...prefix, 'value'];
  return [...prefix, 'valueFrom', from.env !== undefined ? 'env' : 'file'];
}

export function deploymentResource(
  doc: DeploymentManifest,
  location: SourceLocation,
  locate: Locator,
): DeploymentResource {
  const input = doc.spec;
  const spec: DeploymentSpec = { source: input.source };
  if (input.repository !== undefined) spec.repository = input.repository;
  if (input.integration !== undefined) spec.integration = input.integration;
  if (input.source_config !== undefined) spec.source_config = input.source_config;
  if (input.source_revision_config !== undefined) spec.source_revision_config = input.source_revision_config;
  if (input.secret_references !== undefined) spec.secret_references = input.secret_references;
  const secretLocations: Record<string, SourceLocation> = {};
  if (input.secrets !== undefined) {
    spec.secrets = input.secrets.map((secret, index): SecretRef => {
      secretLocations[secret.name] = locate(secretPath(['spec', 'secrets', index], secret.valueFrom));
      return { name: secret.name, from: secret.valueFrom ? fromValueFrom(secret.valueFrom) : { value: secret.value! } };
    });
  }
  const resource: DeploymentResource = { kind: 'Deployment', ...base(doc.metadata, location), spec };
  if (Object.keys(secretLocations).length > 0) resource.secretLocations = secretLocations;
  if (input.repository !== undefined) resource.repositoryLocation = locate(['spec', 'repository']);
  return resource;
}

function clientSecretSource(secret: ClientSecret): SecretSource {
  return typeof secret === 'string' ? { value: secret } : fromValueFrom(secret.valueFrom);
}

export function providerResource(
  doc: OAuthProviderManifest,
  location: SourceLocation,
  locate: Locator,
): ProviderResource {
  const input = doc.spec;
  const common = base(doc.metadata, location);
  if (input.mcp_server_url !== undefined) {
    return {
      kind: 'OAuthProvider',
      ...common,
      spec: { mode: 'mcp', name: input.name, mcp_server_url: input.mcp_server_url },
    };
  }
  const spec: ManualProviderSpec = {
    mode: 'manual',
    name: input.name,
    client_id: input.client_id!,
    auth_url: input.auth_url!,
    token_url: input.token_url!,
  };
  if (input.client_secret !== undefined) spec.client_secret = clientSecretSource(input.client_secret);
  if (input.uses_pkce !== undefined) spec.uses_pkce = input.uses_pkce;
  if (input.code_challenge_method !== undefined) spec.code_challenge_method = input.code_challenge_method;
  if (input.provider_type !== undefined) spec.provider_type = input.provider_type;
  if (input.token_endpoint_auth_method !== undefined)
    spec.token_endpoint_auth_method = input.token_endpoint_auth_method;
  if (input.authorization_params !== undefined) spec.authorization_params = input.authorization_params;
  if (input.allowed_redirect_uris !== undefined) spec.allowed_redirect_uris = input.allowed_redirect_uris;
  const resource: ProviderResource = { kind: 'OAuthProvider', ...common, spec };
  if (input.client_secret !== undefined) {
    const path =
      typeof input.client_secret === 'string'
        ? ['spec', 'client_secret']
        : secretPath(['spec', 'client_secret'], input.client_secret.valueFrom);
    resource.secretLocations = { client_secret: locate(path) };
  }
  return resource;
}

/** Each kind's conversion of its validated manifest: one entry per kind, looked up by the document's kind. */
const CONVERT: {
  [K in (DeploymentManifest | OAuthProviderManifest)['kind']]: (
    doc: Extract<DeploymentManifest | OAuthProviderManifest, { kind: K }>,
    location: SourceLocation,
    locate: Locator,
  ) => DesiredResource;
} = {
  Deployment: deploymentResource,
  OAuthProvider: providerResource,
};

export function toResource(
  doc: DeploymentManifest | OAuthProviderManifest,
  location: SourceLocation,
  locate: Locator,
): DesiredResource {
  const convert = CONVERT[doc.kind] as (
    doc: DeploymentManifest | OAuthProviderManifest,
    location: SourceLocation,
    locate: Locator,
  ) => DesiredResource;
  return convert(doc, location, locate);
}
