// Repository resolution, the pure part: spec.repository "owner/name" matched against the integrations' repositories
// (the catalog, listed by src/observe/repositories.ts) → integration_id, repo_url, repo_ref.
import type { DeploymentResource } from './model.js';
import type { Integration, Repository } from './wire/schema.js';
import { closest } from './did-you-mean.js';

export interface ResolvedRepository {
  integration_id: string;
  repo_url: string;
  default_branch: string;
}

export interface RepositoryResolution {
  /** Deployment name → what its spec.repository resolved to. */
  resolved: Map<string, ResolvedRepository>;
  /** Deployment name → why its spec.repository could not be resolved (names the candidates). */
  errors: Map<string, string>;
}

/** One repository as `converge repos` shows it. */
export interface VisibleRepository {
  /** The integration's account name at the code host (what spec.integration names). */
  account: string;
  integration_id: string;
  installation_id: number;
  owner: string;
  name: string;
  /** owner/name, what spec.repository names. */
  full_name: string;
  default_branch: string;
  url: string;
}

/** One integration and the repositories it reaches, as the service lists them. */
export interface CatalogEntry {
  integration: Integration;
  repositories: Repository[];
}

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function fullName(repository: Repository): string {
  return `${repository.owner}/${repository.name}`;
}

function quoteList(names: string[]): string {
  return names.map((n) => `"${n}"`).join(', ');
}

/** Resolves one deployment's spec.repository against the catalog; a string is the error. */
function resolveOne(deployment: DeploymentResource, catalog: readonly CatalogEntry[]): ResolvedRepository | string {
  const { repository, integration: account } = deployment.spec;
  if (!repository) return 'spec.repository is not set';
  if (deployment.spec.source !== 'codehost') {
    return `spec.repository applies only to source codehost, not ${deployment.spec.source}`;
  }
  const parts = repository.split('/');
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    return `spec.repository "${repository}" is not of the form owner/name`;
  }
  const accounts = catalog.map((entry) => entry.integration.name);
  let scope = catalog;
  if (account) {
    scope = catalog.filter((entry) => sameName(entry.integration.name, account));
    if (scope.length === 0) {
      const known = accounts.length
        ? `the service sees ${quoteList(accounts)}`
        : 'the service sees no code-host integration';
      return `spec.integration "${account}" names no code-host integration; ${known}`;
    }
  }
  const matches: Array<{ integration: Integration; repository: Repository }> = [];
  for (const entry of scope) {
    const repo = entry.repositories.find((r) => sameName(fullName(r), repository));
    if (repo) matches.push({ integration: entry.integration, repository: repo });
  }
  if (matches.length === 0) {
    if (account) {
      const elsewhere = catalog
        .filter((e) => e.repositories.some((r) => sameName(fullName(r), repository)))
        .map((e) => e.integration.name);
      const hint = elsewhere.length ? `; it is reachable through ${quoteList(elsewhere)}` : '';
      return `repository "${repository}" is not reachable through integration "${account}"${hint}`;
    }
    const searched = accounts.length ? `searched ${quoteList(accounts)}` : 'the service sees no code-host integration';
    const near = closest(repository, [...new Set(catalog.flatMap((e) => e.repositories.map(fullName)))]);
    const fix = near ? `did you mean "${near}"? Otherwise check the name` : 'check the name';
    return `repository "${repository}" is not reachable through any code-host integration (${searched}); ${fix} or install the code-host app on its owner`;
  }
  const given = deployment.spec.source_config ?? {};
  if (matches.length > 1 && given.integration_id) {
    const pinned = matches.filter((m) => m.repository.host_integration_id === given.integration_id);
    if (pinned.length === 1) matches.splice(0, matches.length, ...pinned);
  }
  if (matches.length > 1) {
    const candidates = matches.map((m) => `"${m.integration.name}" (integration ${m.integration.id})`).join(', ');
    return `repository "${repository}" is reachable through several integrations: ${candidates}; set spec.integration to one of these account names`;
  }
  const [{ repository: repo }] = matches as [(typeof matches)[number]];
  const resolved = {
    integration_id: repo.host_integration_id,
    repo_url: repo.url,
    default_branch: repo.default_branch,
  };
  if (given.integration_id && given.integration_id !== resolved.integration_id) {
    return `spec.repository "${repository}" resolves to integration ${resolved.integration_id} but source_config.integration_id is ${given.integration_id}; remove one of them`;
  }
  if (given.repo_url && given.repo_url !== resolved.repo_url) {
    return `spec.repository "${repository}" resolves to ${resolved.repo_url} but source_config.repo_url is ${given.repo_url}; remove one of them`;
  }
  return resolved;
}

/** Resolves spec.repository of every deployment that has one against the catalog. */
export function resolveAgainstCatalog(
  catalog: readonly CatalogEntry[],
  deployments: readonly DeploymentResource[],
): RepositoryResolution {
  const resolved = new Map<string, ResolvedRepository>();
  const errors = new Map<string, string>();
  for (const deployment of deployments) {
    if (!deployment.spec.repository) continue;
    const result = resolveOne(deployment, catalog);
    if (typeof result === 'string') errors.set(deployment.name, result);
    else resolved.set(deployment.name, result);
  }
  return { resolved, errors };
}

/**
 * A copy of `resource` with source_config.integration_id and repo_url, and source_revision_config.repo_ref
 * (the default branch unless the manifest gives one), filled from its resolution. A resource with no entry
 * in `resolved` (no spec.repository, or one that failed to resolve) is returned as is.
 */
export function applyRepositoryResolution(
  resource: DeploymentResource,
  resolved: ReadonlyMap<string, ResolvedRepository>,
): DeploymentResource {
  const entry = resource.spec.repository ? resolved.get(resource.name) : undefined;
  if (!entry) return resource;
  const revision = resource.spec.source_revision_config ?? {};
  return {
    ...resource,
    spec: {
      ...resource.spec,
      source_config: { ...resource.spec.source_config, integration_id: entry.integration_id, repo_url: entry.repo_url },
      source_revision_config: { ...revision, repo_ref: revision.repo_ref ?? entry.default_branch },
    },
  };
}

/** Every repository of the catalog, by account then owner/name, for `converge repos`. */
export function visibleRepositories(catalog: readonly CatalogEntry[]): VisibleRepository[] {
  const rows: VisibleRepository[] = [];
  for (const { integration, repositories } of catalog) {
    for (const repo of repositories) {
      rows.push({
        account: integration.name,
        integration_id: repo.host_integration_id,
        installation_id: integration.installation_id,
        owner: repo.owner,
        name: repo.name,
        full_name: fullName(repo),
        default_branch: repo.default_branch,
        url: repo.url,
      });
    }
  }
  const key = (r: VisibleRepository): string => `${r.account.toLowerCase()}\u0000${r.full_name.toLowerCase()}`;
  return rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** What `repository:` (and, when several integrations reach it, `integration:`) names a live deployment's repo_url as. */
export interface RepositoryName {
  repository: string;
  integration?: string;
}

/**
 * The reverse of resolution: the `repository:` (owner/name) that resolves to exactly `integration_id` and `repo_url`,
 * with `integration:` (the account) when the same owner/name is reachable through several integrations. Undefined
 * when no listed repository has that url under that integration.
 */
export function repositoryNameOf(
  catalog: readonly CatalogEntry[],
  integrationId: string,
  repoUrl: string,
): RepositoryName | undefined {
  const entry = catalog.find(
    (e) => e.integration.id === integrationId && e.repositories.some((r) => r.url === repoUrl),
  );
  const repo = entry?.repositories.find((r) => r.url === repoUrl);
  if (!entry || !repo) return undefined;
  const name = fullName(repo);
  const reachable = catalog.filter((e) => e.repositories.some((r) => sameName(fullName(r), name)));
  return reachable.length > 1 ? { repository: name, integration: entry.integration.name } : { repository: name };
}
