// The spec of a Deployment manifest (docs/contracts.md §1): its source, repository, configs and secrets, and the
// cross-field rules of docs/against-the-real-service.md §2.
import { z } from 'zod';
import {
  DEFAULT_DEPLOYMENT_TYPE,
  DEPLOYMENT_TYPES,
  DeploymentType,
  SecretReference,
  Source,
  SourceConfig,
  SourceRevisionConfig,
} from '../wire/schema.js';
import { resourceSpecProblems } from '../wire/resource-spec-schema.js';
import { ALWAYS, isRecord, SecretValueFrom } from './schema-parts.js';

/** `owner/name` of a code-host repository. */
export const REPOSITORY_PATTERN = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/** One deployment secret: a name and where its value comes from (a literal `value` only with --allow-literal-secrets). */
export const ManifestSecret = z
  .strictObject({
    name: z
      .string()
      .min(1, { error: 'must not be empty' })
      .meta({ description: 'Secret name as the deployment sees it.' }),
    valueFrom: SecretValueFrom.optional(),
    value: z
      .string()
      .optional()
      .meta({ description: 'Literal value: rejected unless --allow-literal-secrets (local use only).' }),
  })
  .superRefine((secret, ctx) => {
    if (!isRecord(secret)) return;
    if (secret.valueFrom !== undefined && secret.value !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: 'give either valueFrom or value, not both',
        params: { at: 'key' },
      });
    } else if (secret.valueFrom === undefined && secret.value === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'needs valueFrom: { env: NAME } or { file: PATH }',
        params: { consequential: true },
      });
    }
  }, ALWAYS)
  .meta({ oneOf: [{ required: ['valueFrom'] }, { required: ['value'] }] });
export type ManifestSecret = z.infer<typeof ManifestSecret>;

/** The manifest's source_revision_config: the wire one (repo_commit_sha is response-only, so already absent). */
export const ManifestSourceRevisionConfig = SourceRevisionConfig;

/** The manifest's source_config: the wire one, with the tiers a manifest may choose. */
export const ManifestSourceConfig = SourceConfig.extend({
  deployment_type: DeploymentType.nullish().meta({
    description: `The tier (${DEPLOYMENT_TYPES.join(', ')}), for every source; sent on create, fixed afterwards (a change is blocked); the service chooses ${DEFAULT_DEPLOYMENT_TYPE} when it is left out.`,
  }),
});

/** Sources that take source_revision_config.graph_config_path; every other source refuses it (docs/official-tool.md). */
export const GRAPH_CONFIG_SOURCES: readonly Source[] = ['codehost', 'internal_source'];

function present(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** The source rules of docs/against-the-real-service.md §2: graph_config_path refused where it does not belong, the codehost repository. Paths are relative to spec. */
function sourceRules(spec: Record<string, unknown>, source: Source, ctx: z.RefinementCtx): void {
  const config = isRecord(spec.source_config) ? spec.source_config : undefined;
  const revision = isRecord(spec.source_revision_config) ? spec.source_revision_config : undefined;
  // A missing graph_config_path is no manifest error: a live deployment may lack it and is adopted as it is; the plan
  // blocks the one write that needs it (src/core/kinds/deployment/write-needs.ts).
  if (!GRAPH_CONFIG_SOURCES.includes(source) && present(revision?.graph_config_path)) {
    ctx.addIssue({
      code: 'custom',
      path: ['source_revision_config', 'graph_config_path'],
      params: { at: 'key' },
      message: `is only for sources ${GRAPH_CONFIG_SOURCES.join(' and ')} (this deployment's source is ${source}) and the service refuses it; remove it`,
    });
  }
  if (source === 'codehost' && spec.repository === undefined) {
    const missing = (['integration_id', 'repo_url'] as const).filter((field) => !present(config?.[field]));
    if (missing.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: config ? ['source_config'] : [],
        params: { at: 'key' },
        message: `a codehost deployment needs repository: OWNER/NAME, or both source_config.integration_id and source_config.repo_url; ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing`,
      });
    }
  }
}

export const DeploymentSpec = z
  .strictObject({
    source: Source.meta({ description: 'Source kind; cannot change after creation.' }),
    repository: z
      .string()
      .regex(REPOSITORY_PATTERN, { error: 'must be "owner/name", e.g. acme/support-agent' })
      .optional()
      .meta({
        description: 'codehost only: "owner/name", resolved into integration_id, repo_url and (unless given) repo_ref.',
      }),
    integration: z.string().min(1, { error: 'must not be empty' }).optional().meta({
      description: 'With repository: the code-host account (integration name) to use when several can reach it.',
    }),
    source_config: ManifestSourceConfig.optional(),
    source_revision_config: ManifestSourceRevisionConfig.optional(),
    secrets: z.array(ManifestSecret).optional(),
    secret_references: z.array(SecretReference).optional().meta({ description: 'external_docker only.' }),
  })
  .superRefine((spec, ctx) => {
    if (!isRecord(spec)) return;
    const source = Source.safeParse(spec.source).success ? spec.source : undefined;
    const sourceConfig = isRecord(spec.source_config) ? spec.source_config : {};
    if (spec.repository !== undefined && source !== undefined && source !== 'codehost') {
      ctx.addIssue({
        code: 'custom',
        path: ['repository'],
        params: { at: 'key' },
        message: `is only for source codehost (this deployment's source is ${source}); remove it`,
      });
    }
    if (spec.integration !== undefined && spec.repository === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['integration'],
        params: { at: 'key' },
        message: 'names the code-host account used to resolve repository; add repository or remove integration',
      });
    }
    if (spec.repository !== undefined) {
      for (const field of ['integration_id', 'repo_url'] as const) {
        if (sourceConfig[field] == null) continue;
        ctx.addIssue({
          code: 'custom',
          path: ['source_config', field],
          params: { at: 'key' },
          message: `conflicts with repository, which resolves ${field} itself; remove one of them${field === 'integration_id' ? ' (use integration: ACCOUNT to pick an installation)' : ''}`,
        });
      }
    }
    if (spec.secret_references !== undefined && source !== undefined && source !== 'external_docker') {
      ctx.addIssue({
        code: 'custom',
        path: ['secret_references'],
        params: { at: 'key' },
        message: `apply only to source external_docker (this deployment's source is ${source}); use secrets instead`,
      });
    }
    if (source !== undefined) sourceRules(spec, source, ctx);
    if (isRecord(sourceConfig.resource_spec)) {
      for (const problem of resourceSpecProblems(sourceConfig.resource_spec)) {
        ctx.addIssue({
          code: 'custom',
          path: ['source_config', 'resource_spec', ...problem.path],
          message: problem.message,
        });
      }
    }
    duplicateNames(spec.secrets, 'secrets', ctx);
    duplicateNames(spec.secret_references, 'secret_references', ctx);
  }, ALWAYS)
  .meta({
    // The cross-field rules above, as far as JSON Schema can say them (for editors).
    allOf: [
      { if: { not: { properties: { source: { const: 'codehost' } } } }, then: { not: { required: ['repository'] } } },
      {
        if: { not: { properties: { source: { const: 'external_docker' } } } },
        then: { not: { required: ['secret_references'] } },
      },
      { if: { not: { required: ['repository'] } }, then: { not: { required: ['integration'] } } },
      {
        if: { required: ['repository'] },
        then: {
          properties: {
            source_config: { not: { anyOf: [{ required: ['repo_url'] }, { required: ['integration_id'] }] } },
          },
        },
      },
      {
        if: { properties: { source: { enum: [...GRAPH_CONFIG_SOURCES] } }, required: ['source'] },
        else: { properties: { source_revision_config: { not: { required: ['graph_config_path'] } } } },
      },
      {
        if: { properties: { source: { const: 'codehost' } }, required: ['source'], not: { required: ['repository'] } },
        then: {
          required: ['source_config'],
          properties: { source_config: { required: ['integration_id', 'repo_url'] } },
        },
      },
    ],
  });
export type DeploymentSpec = z.infer<typeof DeploymentSpec>;

function duplicateNames(items: unknown, field: string, ctx: z.RefinementCtx): void {
  if (!Array.isArray(items)) return;
  const first = new Map<string, number>();
  items.forEach((item: unknown, index) => {
    if (!isRecord(item) || typeof item.name !== 'string') return;
    const earlier = first.get(item.name);
    if (earlier === undefined) {
      first.set(item.name, index);
      return;
    }
    ctx.addIssue({
      code: 'custom',
      path: [field, index, 'name'],
      message: `"${item.name}" is already declared at ${field}[${earlier}]; names must be unique`,
    });
  });
}
