// Manifest schemas (docs/contracts.md §1): converge/v1 Deployment and OAuthProvider documents, strict at every level.
import { z } from 'zod';
import {
  DEFAULT_DEPLOYMENT_TYPE,
  DEPLOYMENT_NAME_MAX,
  DEPLOYMENT_NAME_PATTERN,
  validNameLike,
  DEPLOYMENT_TYPES,
  DeploymentType,
  ProviderType,
  SecretReference,
  Source,
  SourceConfig,
  SourceRevisionConfig,
  TokenEndpointAuthMethod,
  resourceSpecProblems,
} from '../wire/schema.js';

export const API_VERSION = 'converge/v1';
export const MANIFEST_KINDS = ['Deployment', 'OAuthProvider'] as const;
export const SUSPEND_ANNOTATION = 'converge/suspend';
export const DRIFT_ANNOTATION = 'converge/drift';
export const ADOPT_ANNOTATION = 'converge/adopt';
export const PRUNE_ANNOTATION = 'converge/prune';
export const WAVE_ANNOTATION = 'converge/wave';
/** Annotations converge reads; any other `converge/...` annotation is a typo and an error. */
export const CONVERGE_ANNOTATIONS = [SUSPEND_ANNOTATION, DRIFT_ANNOTATION, ADOPT_ANNOTATION, PRUNE_ANNOTATION, WAVE_ANNOTATION] as const;
/** converge/wave: an integer as a string, negative allowed ("-1", "0", "2"). */
export const WAVE_PATTERN = /^-?(0|[1-9][0-9]{0,5})$/;

/** Environment variable names accepted in valueFrom.env. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `owner/name` of a code-host repository. */
export const REPOSITORY_PATTERN = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/** Cross-field rules run even when a sibling field is invalid, so one pass reports every problem; they check types themselves. */
const ALWAYS = { when: () => true };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const NAME_RULE = `lowercase letters, digits and dashes, starting with a letter, at most ${DEPLOYMENT_NAME_MAX} characters`;

/** The valid form of a name the rule refuses, as the end of its message ("web-app" for Web_App). */
function validNameHint(input: unknown): string {
  const like = typeof input === 'string' ? validNameLike(input) : undefined;
  return like ? `, e.g. "${like}"` : '';
}

/** metadata.name: the deployment name or the provider_id, under the service's naming rule. */
export const ResourceName = z
  .string({ error: `must be a string of ${NAME_RULE}` })
  .min(1, { error: `must not be empty; use ${NAME_RULE}` })
  .max(DEPLOYMENT_NAME_MAX, { error: `is longer than ${DEPLOYMENT_NAME_MAX} characters` })
  .regex(DEPLOYMENT_NAME_PATTERN, { error: (issue) => `is not a valid name: use ${NAME_RULE}${validNameHint(issue.input)}` })
  .meta({ description: `The deployment name or provider_id: ${NAME_RULE}.` });
export type ResourceName = z.infer<typeof ResourceName>;

function annotationFlag(values: readonly [string, string], meaning: string) {
  return z
    .enum(values, {
      error: (issue) =>
        typeof issue.input === 'boolean'
          ? `annotation values are strings: quote it, e.g. "${String(issue.input)}"`
          : `must be "${values[0]}" or "${values[1]}"`,
    })
    .optional()
    .meta({ description: meaning });
}

export const Annotations = z
  .object({
    [SUSPEND_ANNOTATION]: annotationFlag(['true', 'false'], '"true": the plan shows this resource but nothing is applied.'),
    [DRIFT_ANNOTATION]: annotationFlag(['heal', 'report'], 'Drift policy of this resource: heal (revert drift) or report it only.'),
    [ADOPT_ANNOTATION]: annotationFlag(['true', 'false'], '"true": converge may take over a live resource of this name that it did not create (needed under adopt: explicit).'),
    [PRUNE_ANNOTATION]: annotationFlag(['true', 'false'], '"false": never deleted by --prune, even once its manifest is gone.'),
    [WAVE_ANNOTATION]: z
      .string({ error: (issue) => (typeof issue.input === 'number' ? `annotation values are strings: quote it, e.g. "${String(issue.input)}"` : 'must be a string holding an integer, e.g. "1"') })
      .regex(WAVE_PATTERN, { error: 'must be an integer, e.g. "0", "1" or "-1" (the rollout wave: lower waves are written and healthy first; docs/rollouts.md)' })
      .optional()
      .meta({ description: 'The rollout wave, an integer as a string (default "0"): a change writes wave by wave, in ascending order, each after the one before is healthy (docs/rollouts.md).' }),
  })
  .catchall(z.string({ error: 'annotation values are strings: quote the value' }))
  .superRefine((annotations, ctx) => {
    if (!isRecord(annotations)) return;
    for (const key of Object.keys(annotations)) {
      if (!key.startsWith('converge/') || (CONVERGE_ANNOTATIONS as readonly string[]).includes(key)) continue;
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `unknown converge annotation "${key}"; converge reads ${CONVERGE_ANNOTATIONS.join(', ')}`,
        params: { at: 'key' },
      });
    }
  }, ALWAYS)
  .meta({
    description: 'Free-form string annotations; converge reads converge/suspend, converge/drift, converge/adopt, converge/prune and converge/wave.',
    propertyNames: { anyOf: [{ not: { pattern: '^converge/' } }, { enum: [...CONVERGE_ANNOTATIONS] }] },
  });
export type Annotations = z.infer<typeof Annotations>;

export const Metadata = z.strictObject({
  name: ResourceName,
  annotations: Annotations.optional(),
});
export type Metadata = z.infer<typeof Metadata>;

/** Where a secret's value is read at plan/apply time: exactly one of env or file. */
export const SecretValueFrom = z
  .strictObject({
    env: z
      .string()
      .regex(ENV_NAME_PATTERN, { error: 'is not an environment variable name (letters, digits and underscores, not starting with a digit)' })
      .optional()
      .meta({ description: 'Name of the environment variable holding the value.' }),
    file: z
      .string()
      .min(1, { error: 'must not be empty' })
      .optional()
      .meta({ description: 'Path of a file holding the value (one trailing newline is trimmed); relative paths are relative to the working directory.' }),
  })
  .superRefine((from, ctx) => {
    if (!isRecord(from)) return;
    if (from.env !== undefined && from.file !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['file'], message: 'give either env or file, not both', params: { at: 'key' } });
    } else if (from.env === undefined && from.file === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'needs env (an environment variable name) or file (a path)', params: { consequential: true } });
    }
  }, ALWAYS)
  .meta({ description: 'Exactly one of env or file.', oneOf: [{ required: ['env'] }, { required: ['file'] }] });
export type SecretValueFrom = z.infer<typeof SecretValueFrom>;

/** One deployment secret: a name and where its value comes from (a literal `value` only with --allow-literal-secrets). */
export const ManifestSecret = z
  .strictObject({
    name: z.string().min(1, { error: 'must not be empty' }).meta({ description: 'Secret name as the deployment sees it.' }),
    valueFrom: SecretValueFrom.optional(),
    value: z.string().optional().meta({ description: 'Literal value: rejected unless --allow-literal-secrets (local use only).' }),
  })
  .superRefine((secret, ctx) => {
    if (!isRecord(secret)) return;
    if (secret.valueFrom !== undefined && secret.value !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'give either valueFrom or value, not both', params: { at: 'key' } });
    } else if (secret.valueFrom === undefined && secret.value === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'needs valueFrom: { env: NAME } or { file: PATH }', params: { consequential: true } });
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
      .meta({ description: 'codehost only: "owner/name", resolved into integration_id, repo_url and (unless given) repo_ref.' }),
    integration: z
      .string()
      .min(1, { error: 'must not be empty' })
      .optional()
      .meta({ description: 'With repository: the code-host account (integration name) to use when several can reach it.' }),
    source_config: ManifestSourceConfig.optional(),
    source_revision_config: ManifestSourceRevisionConfig.optional(),
    secrets: z.array(ManifestSecret).optional(),
    secret_references: z.array(SecretReference).optional().meta({ description: 'external_docker only.' }),
  })
  .superRefine((spec, ctx) => {
    if (!isRecord(spec)) return;
    const source = Source.safeParse(spec.source).success ? (spec.source) : undefined;
    const sourceConfig = isRecord(spec.source_config) ? spec.source_config : {};
    if (spec.repository !== undefined && source !== undefined && source !== 'codehost') {
      ctx.addIssue({ code: 'custom', path: ['repository'], params: { at: 'key' }, message: `is only for source codehost (this deployment's source is ${source}); remove it` });
    }
    if (spec.integration !== undefined && spec.repository === undefined) {
      ctx.addIssue({ code: 'custom', path: ['integration'], params: { at: 'key' }, message: 'names the code-host account used to resolve repository; add repository or remove integration' });
    }
    if (spec.repository !== undefined) {
      for (const field of ['integration_id', 'repo_url'] as const) {
        if (sourceConfig[field] == null) continue;
        ctx.addIssue({ code: 'custom', path: ['source_config', field], params: { at: 'key' }, message: `conflicts with repository, which resolves ${field} itself; remove one of them${field === 'integration_id' ? ' (use integration: ACCOUNT to pick an installation)' : ''}` });
      }
    }
    if (spec.secret_references !== undefined && source !== undefined && source !== 'external_docker') {
      ctx.addIssue({ code: 'custom', path: ['secret_references'], params: { at: 'key' }, message: `apply only to source external_docker (this deployment's source is ${source}); use secrets instead` });
    }
    if (source !== undefined) sourceRules(spec, source, ctx);
    if (isRecord(sourceConfig.resource_spec)) {
      for (const problem of resourceSpecProblems(sourceConfig.resource_spec)) {
        ctx.addIssue({ code: 'custom', path: ['source_config', 'resource_spec', ...problem.path], message: problem.message });
      }
    }
    duplicateNames(spec.secrets, 'secrets', ctx);
    duplicateNames(spec.secret_references, 'secret_references', ctx);
  }, ALWAYS)
  .meta({
    // The cross-field rules above, as far as JSON Schema can say them (for editors).
    allOf: [
      { if: { not: { properties: { source: { const: 'codehost' } } } }, then: { not: { required: ['repository'] } } },
      { if: { not: { properties: { source: { const: 'external_docker' } } } }, then: { not: { required: ['secret_references'] } } },
      { if: { not: { required: ['repository'] } }, then: { not: { required: ['integration'] } } },
      {
        if: { required: ['repository'] },
        then: { properties: { source_config: { not: { anyOf: [{ required: ['repo_url'] }, { required: ['integration_id'] }] } } } },
      },
      {
        if: { properties: { source: { enum: [...GRAPH_CONFIG_SOURCES] } }, required: ['source'] },
        else: { properties: { source_revision_config: { not: { required: ['graph_config_path'] } } } },
      },
      {
        if: { properties: { source: { const: 'codehost' } }, required: ['source'], not: { required: ['repository'] } },
        then: { required: ['source_config'], properties: { source_config: { required: ['integration_id', 'repo_url'] } } },
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
    ctx.addIssue({ code: 'custom', path: [field, index, 'name'], message: `"${item.name}" is already declared at ${field}[${earlier}]; names must be unique` });
  });
}

/** Absolute http(s) URL (auth_url, token_url, mcp_server_url). */
export const HttpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL, e.g. https://example.com/oauth/authorize' })
  .meta({ pattern: '^https?://' });

/** A manual provider's client secret: from env or file (or, with --allow-literal-secrets, a literal string). */
export const ClientSecret = z.union([
  z.string().meta({ description: 'Literal value: rejected unless --allow-literal-secrets (local use only).' }),
  z.strictObject({ valueFrom: SecretValueFrom }),
]);
export type ClientSecret = z.infer<typeof ClientSecret>;

/** Fields only a manual provider takes (a discovered one has name and mcp_server_url only). */
export const MANUAL_PROVIDER_FIELDS = [
  'client_id', 'auth_url', 'token_url', 'client_secret', 'uses_pkce', 'code_challenge_method', 'provider_type',
  'token_endpoint_auth_method', 'authorization_params', 'allowed_redirect_uris',
] as const;
const MANUAL_REQUIRED = ['client_id', 'auth_url', 'token_url'] as const;

export const OAuthProviderSpec = z
  .strictObject({
    name: z.string().min(1, { error: 'must not be empty' }).meta({ description: 'Display name of the provider.' }),
    client_id: z.string().min(1, { error: 'must not be empty' }).optional(),
    auth_url: HttpUrl.optional(),
    token_url: HttpUrl.optional(),
    client_secret: ClientSecret.optional(),
    uses_pkce: z.boolean().optional(),
    code_challenge_method: z.string().min(1, { error: 'must not be empty' }).optional(),
    provider_type: ProviderType.nullable().optional(),
    token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
    authorization_params: z.record(z.string(), z.unknown()).optional(),
    allowed_redirect_uris: z.array(z.string().min(1, { error: 'must not be empty' })).optional(),
    mcp_server_url: HttpUrl.optional().meta({ description: 'Discovered provider: the MCP server whose OAuth metadata defines it.' }),
  })
  .superRefine((spec, ctx) => {
    if (!isRecord(spec)) return;
    const manual = MANUAL_PROVIDER_FIELDS.filter((field) => spec[field] !== undefined);
    if (spec.mcp_server_url !== undefined) {
      if (manual.length === 0) return;
      ctx.addIssue({
        code: 'custom',
        path: [manual[0]!],
        params: { at: 'key' },
        message: `cannot be combined with mcp_server_url: a discovered provider takes only name and mcp_server_url; remove ${manual.join(', ')}, or remove mcp_server_url to define the provider manually`,
      });
      return;
    }
    const missing = MANUAL_REQUIRED.filter((field) => spec[field] === undefined);
    if (missing.length === 0) return;
    ctx.addIssue({
      code: 'custom',
      path: [],
      params: { consequential: true },
      message: `missing required field${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (a manual provider needs client_id, auth_url and token_url; a discovered one gives mcp_server_url instead)`,
    });
  }, ALWAYS)
  .meta({
    description: 'Manual (client_id, auth_url, token_url, ...) or discovered (name and mcp_server_url only).',
    oneOf: [
      { title: 'manual', required: ['name', ...MANUAL_REQUIRED], not: { required: ['mcp_server_url'] } },
      { title: 'discovered', required: ['name', 'mcp_server_url'], propertyNames: { enum: ['name', 'mcp_server_url'] } },
    ],
  });
export type OAuthProviderSpec = z.infer<typeof OAuthProviderSpec>;

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
