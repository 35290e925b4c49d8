// Per-source validation of deployment requests (pure): which fields each source needs, takes and refuses.
import {
  DEPLOYMENT_NAME_MAX,
  DEPLOYMENT_NAME_PATTERN,
  type Secret,
  type Source,
  type ValidationIssue,
} from '../core/wire/schema.js';
import { resourceSpecProblems } from '../core/wire/resource-spec-schema.js';
import { issue } from './issues.js';

type Fields = Record<string, unknown>;

interface SourceRule {
  /** source_config fields the (merged) deployment must hold. */
  needsConfig: string[];
  /** source_revision_config fields the (merged) deployment must hold. */
  needsRevision: string[];
  /** source_revision_config fields a create must carry besides (docs/against-the-real-service.md §2: graph_config_path). */
  needsOnCreate: string[];
  /** source_revision_config fields the merged deployment must hold once it holds its artifact (internal_source: graph_config_path). */
  needsWithArtifact: string[];
  /**
   * The artifact (image_uri or source_tarball_path): a create may leave it out and set it by PATCH later
   * (docs/against-the-real-service.md §2), but a PATCH naming this source as its revision_source must bring one.
   */
  artifact: string[];
  /** source_config fields a request must not carry for this source. */
  refusesConfig: string[];
  /** source_revision_config fields a request must not carry for this revision source. */
  refusesRevision: string[];
  /** secret_references are only for external_docker. */
  secretReferences: boolean;
  /** Whether a PATCH may name a revision_source (cloud-hosted sources only). */
  revisionSource: boolean;
}

/** The tier (deployment_type) is taken by every source: the official tool sends it on every create (against-the-real-service.md). */
const REPO_CONFIG = ['integration_id', 'repo_url', 'build_on_push'];

/** The source rules of the service (docs/against-the-real-service.md §2), one row per source. */
export const SOURCE_RULES: Record<Source, SourceRule> = {
  codehost: {
    needsConfig: ['integration_id', 'repo_url'],
    needsRevision: ['repo_ref'],
    needsOnCreate: ['graph_config_path'],
    needsWithArtifact: [],
    artifact: [],
    refusesConfig: [],
    refusesRevision: ['image_uri', 'source_tarball_path'],
    secretReferences: false,
    revisionSource: true,
  },
  external_docker: {
    needsConfig: [],
    needsRevision: ['image_uri'],
    needsOnCreate: [],
    needsWithArtifact: [],
    artifact: [],
    refusesConfig: REPO_CONFIG,
    refusesRevision: ['repo_ref', 'source_tarball_path', 'graph_config_path'],
    secretReferences: true,
    revisionSource: false,
  },
  internal_docker: {
    needsConfig: [],
    needsRevision: [],
    needsOnCreate: [],
    needsWithArtifact: [],
    artifact: ['image_uri'],
    refusesConfig: REPO_CONFIG,
    refusesRevision: ['repo_ref', 'source_tarball_path', 'graph_config_path'],
    secretReferences: false,
    revisionSource: true,
  },
  internal_source: {
    needsConfig: [],
    needsRevision: [],
    needsOnCreate: [],
    needsWithArtifact: ['graph_config_path'],
    artifact: ['source_tarball_path'],
    refusesConfig: REPO_CONFIG,
    refusesRevision: ['repo_ref', 'image_uri'],
    secretReferences: false,
    revisionSource: true,
  },
  internal_template: {
    needsConfig: [],
    needsRevision: [],
    needsOnCreate: [],
    needsWithArtifact: [],
    artifact: [],
    refusesConfig: REPO_CONFIG,
    refusesRevision: ['repo_ref', 'image_uri', 'source_tarball_path', 'graph_config_path'],
    secretReferences: false,
    revisionSource: true,
  },
};

/** The rules of a source; undefined for a source this emulator does not know (seeded only). */
export function rulesFor(source: string): SourceRule | undefined {
  return Object.hasOwn(SOURCE_RULES, source) ? SOURCE_RULES[source as Source] : undefined;
}

/** What --lenient-create relaxes: graph_config_path is neither required on create nor refused. */
export interface RuleMode {
  lenient: boolean;
}

function present(fields: Fields | null | undefined, key: string): boolean {
  const value = fields?.[key];
  return value !== null && value !== undefined;
}

/** 422 issues for a deployment name breaking the service's rules. */
export function nameProblems(name: string): ValidationIssue[] {
  if (name.length === 0)
    return [issue(['body', 'name'], 'String should have at least 1 character', 'string_too_short')];
  if (name.length > DEPLOYMENT_NAME_MAX) {
    return [issue(['body', 'name'], `String should have at most ${DEPLOYMENT_NAME_MAX} characters`, 'string_too_long')];
  }
  if (!DEPLOYMENT_NAME_PATTERN.test(name)) {
    return [
      issue(
        ['body', 'name'],
        `Deployment name "${name}" is invalid: use lowercase letters, digits and dashes, starting with a letter`,
        'string_pattern_mismatch',
      ),
    ];
  }
  return [];
}

/** 422 issues for duplicate secret names in one request. */
export function secretProblems(secrets: Secret[] | null | undefined): ValidationIssue[] {
  const seen = new Set<string>();
  const out: ValidationIssue[] = [];
  (secrets ?? []).forEach((secret, index) => {
    if (seen.has(secret.name)) {
      out.push(issue(['body', 'secrets', index, 'name'], `Secret "${secret.name}" appears more than once`));
    }
    seen.add(secret.name);
  });
  return out;
}

/** 422 issues for fields a request carries that its source (and revision source) refuse. */
export function refusedFieldProblems(
  source: Source,
  revisionSource: Source,
  sourceConfig: Fields | null | undefined,
  revisionConfig: Fields | null | undefined,
  secretReferences: unknown[] | null | undefined,
  mode: RuleMode,
): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const key of SOURCE_RULES[source].refusesConfig) {
    if (present(sourceConfig, key)) {
      out.push(issue(['body', 'source_config', key], `source_config.${key} is not allowed for source ${source}`));
    }
  }
  for (const key of SOURCE_RULES[revisionSource].refusesRevision) {
    if (mode.lenient && key === 'graph_config_path') continue;
    if (present(revisionConfig, key)) {
      const what = revisionSource === source ? `source ${source}` : `revision_source ${revisionSource}`;
      out.push(
        issue(['body', 'source_revision_config', key], `source_revision_config.${key} is not allowed for ${what}`),
      );
    }
  }
  if (secretReferences != null && !SOURCE_RULES[source].secretReferences) {
    out.push(
      issue(['body', 'secret_references'], `secret_references apply only to source external_docker, not ${source}`),
    );
  }
  const spec = sourceConfig?.resource_spec;
  if (spec && typeof spec === 'object') {
    for (const p of resourceSpecProblems(spec)) {
      out.push(issue(['body', 'source_config', 'resource_spec', ...p.path], p.message));
    }
  }
  return out;
}

/** Which requirements apply: every write's, plus a create's, plus a revision_source override's artifact. */
export type Requirement = 'write' | 'create' | 'override';

/** 422 issues for fields the merged deployment lacks for the given (revision) source. */
export function missingFieldProblems(
  source: Source,
  sourceConfig: Fields,
  revisionConfig: Fields,
  what: string,
  requirement: Requirement,
  mode: RuleMode,
): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const rules = SOURCE_RULES[source];
  for (const key of rules.needsConfig) {
    if (!present(sourceConfig, key)) {
      out.push(issue(['body', 'source_config', key], `source_config.${key} is required for ${what}`, 'missing'));
    }
  }
  const holdsArtifact = rules.artifact.length > 0 && rules.artifact.every((key) => present(revisionConfig, key));
  const needsRevision = [
    ...rules.needsRevision,
    ...(requirement === 'create' && !mode.lenient ? rules.needsOnCreate : []),
    ...(requirement === 'override' ? rules.artifact : []),
    ...(holdsArtifact && !mode.lenient ? rules.needsWithArtifact : []),
  ];
  for (const key of needsRevision) {
    if (!present(revisionConfig, key)) {
      out.push(
        issue(
          ['body', 'source_revision_config', key],
          `source_revision_config.${key} is required for ${what}`,
          'missing',
        ),
      );
    }
  }
  return out;
}

/** What the codehost rules need to know about integrations: the repository URLs each one reaches. */
export interface RepoLookup {
  hasIntegration(integrationId: string): boolean;
  hasRepository(integrationId: string, repoUrl: string): boolean;
}

/** 400 detail when a codehost deployment names an unknown integration or a repository outside it; null when fine. */
export function repositoryProblem(sourceConfig: Fields, lookup: RepoLookup): string | null {
  const integrationId = String(sourceConfig.integration_id).toLowerCase();
  const repoUrl = String(sourceConfig.repo_url);
  if (!lookup.hasIntegration(integrationId)) {
    return `Integration ${integrationId} not found; list them with GET /v1/integrations/forge/codehost/install`;
  }
  if (!lookup.hasRepository(integrationId, repoUrl)) {
    return `Repository ${repoUrl} is not reachable through integration ${integrationId}; list them with GET /v1/integrations/forge/codehost/${integrationId}/repos`;
  }
  return null;
}
