// Repository resolution, the I/O part: lists the integrations and their repositories through the service client,
// then resolves against that catalog with the pure part (src/core/repositories.ts).
import type { DeploymentResource } from '../core/model.js';
import type { Integration, Repository } from '../core/wire/schema.js';
import { mapBounded } from '../core/map-bounded.js';
import {
  resolveAgainstCatalog,
  visibleRepositories,
  type CatalogEntry,
  type RepositoryResolution,
  type VisibleRepository,
} from '../core/repositories.js';

/** The two listing calls resolution needs; ServiceClient has them. */
export interface RepositorySource {
  listIntegrations(): Promise<Integration[]>;
  listRepositories(integrationId: string): Promise<Repository[]>;
}

const DEFAULT_CONCURRENCY = 8;

/** Lists the integrations once, then every integration's repositories, `concurrency` at a time. */
async function fetchCatalog(client: RepositorySource, concurrency: number): Promise<CatalogEntry[]> {
  const integrations = await client.listIntegrations();
  return mapBounded(integrations, concurrency, async (integration) => ({
    integration,
    repositories: await client.listRepositories(integration.id),
  }));
}

/**
 * Resolves spec.repository of every deployment that has one. The integrations are listed once and each
 * integration's repositories once per call, `concurrency` listings at a time. A listing that fails rejects
 * the whole call (with the client's typed error): a partial catalog could hide an ambiguity.
 */
export async function resolveRepositories(
  client: RepositorySource,
  deployments: readonly DeploymentResource[],
  options: { concurrency?: number } = {},
): Promise<RepositoryResolution> {
  const wanted = deployments.filter((d) => d.spec.repository);
  if (wanted.length === 0) return { resolved: new Map(), errors: new Map() };
  const catalog = await fetchCatalog(client, options.concurrency ?? DEFAULT_CONCURRENCY);
  return resolveAgainstCatalog(catalog, wanted);
}

/** The integrations and their repositories, as listed now (for `converge export`, which maps repo_url back to owner/name). */
export async function listCatalog(
  client: RepositorySource,
  options: { concurrency?: number } = {},
): Promise<CatalogEntry[]> {
  return fetchCatalog(client, options.concurrency ?? DEFAULT_CONCURRENCY);
}

/** Every repository the service can see, by account then owner/name, for `converge repos`. */
export async function listVisibleRepositories(
  client: RepositorySource,
  options: { concurrency?: number } = {},
): Promise<VisibleRepository[]> {
  return visibleRepositories(await fetchCatalog(client, options.concurrency ?? DEFAULT_CONCURRENCY));
}
