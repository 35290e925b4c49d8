// Export of live Deployments as manifest documents: declared fields as live, read-only ones left out, secrets as env references.
import type { ListedDeployment } from '../../model.js';
import { repositoryNameOf, type CatalogEntry } from '../../repositories.js';
import { DEPLOYMENT_TYPES, SOURCES, SourceConfig, SourceRevisionConfig } from '../../wire/schema.js';
import { isAbsent, stripNulls } from '../../values.js';
import { secretEnvName, type ExportedDocument } from '../export-names.js';
import type { Exported, ExportSource } from '../kind.js';

type Loose = Record<string, unknown>;

const KNOWN_SOURCES: ReadonlySet<string> = new Set(SOURCES);
const SOURCE_CONFIG_KEYS = Object.keys(SourceConfig.shape);
/** repo_commit_sha is in answers only: never declared. */
const SOURCE_REVISION_KEYS = Object.keys(SourceRevisionConfig.shape);
const MANIFEST_TIERS: ReadonlySet<string> = new Set(DEPLOYMENT_TYPES);

/** The declared keys of `live` that hold a value, in schema order, nulls left out. */
function declared(live: Loose, keys: readonly string[], skip: ReadonlySet<string> = new Set()): Loose | undefined {
  const out: Loose = {};
  for (const key of keys) if (!skip.has(key) && !isAbsent(live[key])) out[key] = stripNulls(live[key]);
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The source_config fields an export leaves out for this deployment: what the service sets, what repository stands for. */
function sourceConfigSkips(live: ListedDeployment, viaRepository: boolean): Set<string> {
  const skip = new Set<string>();
  if (live.source === 'codehost') skip.add('custom_url'); // set by the service for codehost (docs/against-the-real-service.md §5)
  if (viaRepository) skip.add('integration_id').add('repo_url');
  const tier = live.source_config.deployment_type;
  if (typeof tier !== 'string' || !MANIFEST_TIERS.has(tier)) skip.add('deployment_type');
  const listener = live.source_config.listener_config;
  if (listener && typeof listener === 'object' && Object.values(listener).every(isAbsent)) skip.add('listener_config');
  return skip;
}

/**
 * The manifest of `live`, or why there is none: a preview or a deployment being deleted (converge never writes to
 * either), or a source this converge does not know. `repository:` (and `integration:` when several installations
 * reach it) stands for integration_id and repo_url when the catalog has that repository; every secret becomes a
 * `valueFrom: { env }` reference (never a value); `converge/adopt: "true"` lets an explicit adopt policy take it over.
 */
function exportDeployment(
  live: ListedDeployment,
  catalog: readonly CatalogEntry[],
): ExportedDocument | { skipped: string } {
  if (live.is_preview === true) return { skipped: 'a preview deployment (converge never writes to one)' };
  if (live.status === 'AWAITING_DELETE') return { skipped: 'being deleted (status AWAITING_DELETE)' };
  if (!KNOWN_SOURCES.has(live.source)) return { skipped: `source "${live.source}" is not one this converge knows` };
  const config = live.source_config as Loose;
  const integrationId = typeof config.integration_id === 'string' ? config.integration_id : undefined;
  const repoUrl = typeof config.repo_url === 'string' ? config.repo_url : undefined;
  const named =
    live.source === 'codehost' && integrationId && repoUrl
      ? repositoryNameOf(catalog, integrationId, repoUrl)
      : undefined;
  const spec: Loose = { source: live.source };
  if (named) {
    spec.repository = named.repository;
    if (named.integration) spec.integration = named.integration;
  }
  const sourceConfig = declared(config, SOURCE_CONFIG_KEYS, sourceConfigSkips(live, named !== undefined));
  if (sourceConfig) spec.source_config = sourceConfig;
  const revision = declared(live.source_revision_config, SOURCE_REVISION_KEYS);
  if (revision) spec.source_revision_config = revision;
  const env: string[] = [];
  if (live.secrets.length > 0) {
    spec.secrets = live.secrets.map((secret) => {
      const name = secretEnvName(live.name, secret.name);
      env.push(name);
      return { name: secret.name, valueFrom: { env: name } };
    });
  }
  const references = (live.secret_references ?? []).map((r) => ({
    name: r.name,
    secret_name: r.secret_name,
    secret_key: r.secret_key,
  }));
  if (references.length > 0) spec.secret_references = references;
  return { kind: 'Deployment', name: live.name, spec, env };
}

/** The manifests of every live deployment; a preview, one being deleted or of an unknown source is skipped, saying why. */
export function exportDeployments(source: ExportSource): Exported {
  const docs: ExportedDocument[] = [];
  const skipped: string[] = [];
  for (const deployment of source.deployments) {
    const doc = exportDeployment(deployment, source.catalog);
    if ('skipped' in doc) skipped.push(`Deployment/${deployment.name}: ${doc.skipped}`);
    else docs.push(doc);
  }
  return { docs, skipped };
}
