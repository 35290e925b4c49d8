// The Deployment kind in the manifest format: its literal secret fields, where a misplaced field belongs, the tier warning.
import { ResourceSpec } from '../../wire/resource-spec-schema.js';
import { DEFAULT_DEPLOYMENT_TYPE, DEPLOYMENT_TYPES, SourceConfig, SourceRevisionConfig } from '../../wire/schema.js';
import type { LiteralSecret, ManifestFinding, ManifestHooks } from '../kind.js';
import { GRAPH_CONFIG_HINT } from './write-needs.js';

/** The code of the warning that a codehost deployment leaves its tier to the service's default. */
const DEFAULT_TIER_CODE = 'W_DEFAULT_TIER';

/** The code of validate's warning that a codehost manifest cannot be created as it is (no graph_config_path). */
const CREATE_NEEDS_GRAPH_CONFIG_CODE = 'W_CREATE_NEEDS_GRAPH_CONFIG';

const FIX = 'use valueFrom: { env: NAME } or { file: PATH } (or --allow-literal-secrets for local use only)';

/**
 * What the tier warning reads of a valid Deployment manifest (src/core/manifest/schema.ts's DeploymentManifest has it;
 * written here so that core/kinds does not import core/manifest, which asks this table).
 */
interface TierFields {
  kind: string;
  spec: { source: string; source_config?: { deployment_type?: string | null | undefined } | undefined };
}

/** What validate's create warning reads of a valid Deployment manifest (the same reason as TierFields). */
interface CreateFields {
  kind: string;
  metadata: { annotations?: Record<string, string> | undefined };
  spec: { source: string; source_revision_config?: { graph_config_path?: string | null | undefined } | undefined };
}

/** Where a field written at the wrong level of a Deployment belongs. */
const HOMES: Array<[string, readonly string[]]> = [
  ['spec.source_config.resource_spec', Object.keys(ResourceSpec.shape)],
  ['spec.source_config', Object.keys(SourceConfig.shape)],
  ['spec.source_revision_config', Object.keys(SourceRevisionConfig.shape)],
];

export const deploymentManifest = {
  /** Each `value:` of spec.secrets written without valueFrom. */
  literalSecrets(data) {
    const spec = data.spec as Record<string, unknown> | undefined;
    if (!spec || typeof spec !== 'object' || !Array.isArray(spec.secrets)) return [];
    const out: LiteralSecret[] = [];
    spec.secrets.forEach((secret: unknown, index) => {
      const entry = secret as Record<string, unknown> | null;
      if (!entry || typeof entry !== 'object' || typeof entry.value !== 'string' || entry.valueFrom !== undefined)
        return;
      const name = typeof entry.name === 'string' && entry.name.length <= 128 ? ` "${entry.name}"` : '';
      out.push({
        path: ['spec', 'secrets', index, 'value'],
        message: `secret${name} has a literal value in the manifest; ${FIX}`,
      });
    });
    return out;
  },
  keyHint(parent, key) {
    if (parent === 'spec' && key === 'name') return "a deployment's name is metadata.name";
    for (const [home, keys] of HOMES) {
      if (home !== parent && keys.includes(key)) return `it belongs in ${home}`;
    }
    return undefined;
  },
  /** A codehost deployment without a tier: the service's default tier cannot be changed after creation. */
  warnings(manifest: TierFields): ManifestFinding[] {
    if (manifest.spec.source !== 'codehost') return [];
    const config = manifest.spec.source_config;
    if (config?.deployment_type != null) return [];
    return [
      {
        path: config ? ['spec', 'source_config'] : ['spec'],
        at: 'key',
        code: DEFAULT_TIER_CODE,
        message: `spec.source_config.deployment_type is not set: the service will create this codehost deployment as ${DEFAULT_DEPLOYMENT_TYPE} (its default), and the tier cannot be changed after creation; to choose another, set spec.source_config.deployment_type to one of ${DEPLOYMENT_TYPES.join(', ')}`,
      },
    ];
  },
  /**
   * A codehost deployment without graph_config_path: the service refuses its create (docs/against-the-real-service.md
   * §2), yet a live one may lack it and is adopted as it is, so only validate, which sees no live state, warns; not when
   * the manifest says it takes over a live deployment (converge/adopt: "true", as export writes it).
   */
  createWarnings(manifest: CreateFields): ManifestFinding[] {
    if (manifest.spec.source !== 'codehost' || manifest.metadata.annotations?.['converge/adopt'] === 'true') return [];
    const revision = manifest.spec.source_revision_config;
    if (revision?.graph_config_path != null) return [];
    return [
      {
        path: revision ? ['spec', 'source_revision_config'] : ['spec'],
        at: 'key',
        code: CREATE_NEEDS_GRAPH_CONFIG_CODE,
        message: `spec.source_revision_config.graph_config_path is not set: the service refuses to create a codehost deployment without it, so converge plan blocks its create; if the deployment already exists, converge takes it over as it is and this is fine; to create it, ${GRAPH_CONFIG_HINT}`,
      },
    ];
  },
} satisfies ManifestHooks;
