// The edge steps that only one kind takes (repository resolution, MCP discovery, the provider listing), selected here: outside src/core/kinds no code tells kinds apart.
import { applyRepositoryResolution, type ResolvedRepository } from '../repositories.js';
import {
  resourceKey,
  type DeploymentResource,
  type DesiredResource,
  type DiscoveryPreview,
  type McpProviderSpec,
  type ProviderResource,
  type ResourceKind,
} from '../model.js';

/** Resources that may name a `repository:` to resolve at the edge (deployments). */
export function repositoryResources(resources: readonly DesiredResource[]): DeploymentResource[] {
  return resources.filter((r): r is DeploymentResource => r.kind === 'Deployment');
}

/** Providers whose endpoints come from MCP discovery (mode mcp). */
export function mcpProviders(
  resources: readonly DesiredResource[],
): Array<ProviderResource & { spec: McpProviderSpec }> {
  return resources.filter(
    (r): r is ProviderResource & { spec: McpProviderSpec } => r.kind === 'OAuthProvider' && r.spec.mode === 'mcp',
  );
}

/** Whether any resource's live side comes from the provider listing (GET /v2/auth/providers). */
export function declaresProviders(resources: ReadonlyArray<{ kind: ResourceKind }>): boolean {
  return resources.some((r) => r.kind === 'OAuthProvider');
}

/** The provider ids declared (valid or blocked manifests): live providers named in none are orphans. */
export function declaredProviderIds(resources: ReadonlyArray<{ kind: ResourceKind; name: string }>): Set<string> {
  return new Set(resources.filter((r) => r.kind === 'OAuthProvider').map((r) => r.name));
}

/** Whether converge's applied state records a provider (their manifests may all be gone: prune lists providers then). */
export function ownsAnyProvider(appliedKeys: Iterable<string>): boolean {
  const prefix = resourceKey('OAuthProvider', '');
  for (const key of appliedKeys) if (key.startsWith(prefix)) return true;
  return false;
}

/**
 * The resource as planned and sent: a deployment with its `repository` resolved (source_config.integration_id and
 * repo_url), an mcp provider with the endpoints its discovery preview found (its job compares with those).
 */
export function resolvedAtEdge(
  resource: DesiredResource,
  repositories: ReadonlyMap<string, ResolvedRepository>,
  discovery: ReadonlyMap<string, DiscoveryPreview>,
): DesiredResource {
  if (resource.kind === 'Deployment') return applyRepositoryResolution(resource, repositories);
  const preview = discovery.get(resource.name);
  if (resource.spec.mode !== 'mcp' || !preview?.ok) return resource;
  return {
    ...resource,
    discovered: { auth_url: preview.auth_url, token_url: preview.token_url, uses_pkce: preview.uses_pkce },
  };
}
