// Field-level diff of a deployment's declared configuration against live state, and the minimal PATCH body.
import type { AppliedRecord, DeploymentSpec, FieldChange } from '../../model.js';
import {
  CREATE_ONLY_SOURCE_CONFIG_FIELDS,
  DEFAULT_DEPLOYMENT_TYPE,
  SourceConfig,
  SourceRevisionConfig,
  type PatchDeploymentRequest,
  type CreateDeploymentRequest,
  type Source,
} from '../../wire/schema.js';
import { ResourceSpec } from '../../wire/resource-spec-schema.js';
import { declaredKeys, isAbsent, orNull, setEqual, stripNulls } from '../../values.js';
import { compareField, type NormalisedField } from './three-way.js';

type Loose = Record<string, unknown>;

export const SOURCE_CONFIG_KEYS: readonly string[] = Object.keys(SourceConfig.shape);
export const RESOURCE_SPEC_KEYS: readonly string[] = Object.keys(ResourceSpec.shape);
/** repo_commit_sha appears in responses only; it is read-only and never compared. */
export const SOURCE_REVISION_KEYS: readonly string[] = Object.keys(SourceRevisionConfig.shape);
const CREATE_ONLY: ReadonlySet<string> = new Set(CREATE_ONLY_SOURCE_CONFIG_FIELDS);

/**
 * The artifact of the internal sources (docs/against-the-real-service.md §2): the service creates such a deployment without it and
 * takes it by PATCH, so converge creates first and patches the artifact in the same job.
 */
const ARTIFACT_FIELDS: Partial<Record<Source, string>> = {
  internal_docker: 'image_uri',
  internal_source: 'source_tarball_path',
};

/** The source_revision_config field a create of `source` leaves out and a PATCH sets afterwards, if any. */
export function artifactField(source: Source): string | undefined {
  return ARTIFACT_FIELDS[source];
}

function change(path: string, before: unknown, after: unknown): FieldChange {
  return { path, before: stripNulls(orNull(before)), after: stripNulls(after), sensitive: false };
}

function asObject(value: unknown): Loose {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {};
}

/** An object with the non-null entries of `value`, keys in `order` (unknown keys after, sorted). */
function ordered(value: Loose, order: readonly string[]): Loose {
  const out: Loose = {};
  for (const key of declaredKeys(value, order)) out[key] = stripNulls(value[key]);
  return out;
}

export interface FieldDiff {
  fields: FieldChange[];
  /** The minimal PATCH body (secrets excluded), or the create body without secrets. */
  body: PatchDeploymentRequest;
  /** Declared fields that differ from live but are in sync by the three-way rule (three-way.ts): never sent. */
  normalised: NormalisedField[];
}

/** What the field diff reads of the applied record: the hashes sent and answered at the last write of each field. */
type Recorded = AppliedRecord['fields'];

/**
 * The paths at which fields are compared and recorded: each declared source_config field whole (listener_config is
 * one field), each declared resource_spec field (resource_spec is sent whole but diffed by field), each declared
 * source_revision_config field, and secret_references whole.
 */
export function declaredFieldPaths(spec: DeploymentSpec): string[] {
  const paths: string[] = [];
  const config = asObject(spec.source_config);
  for (const key of declaredKeys(config, SOURCE_CONFIG_KEYS)) {
    if (key !== 'resource_spec') {
      paths.push(`source_config.${key}`);
      continue;
    }
    for (const field of declaredKeys(asObject(config[key]), RESOURCE_SPEC_KEYS))
      paths.push(`source_config.resource_spec.${field}`);
  }
  for (const key of declaredKeys(asObject(spec.source_revision_config), SOURCE_REVISION_KEYS)) {
    if (key !== 'repo_commit_sha') paths.push(`source_revision_config.${key}`);
  }
  if (!isAbsent(spec.secret_references)) paths.push('secret_references');
  return paths;
}

function sameSet(a: unknown, b: unknown): boolean {
  return setEqual((a ?? []) as unknown[], (b ?? []) as unknown[]);
}

/**
 * Diff of source_config, source_revision_config and secret_references over what the manifest declares, each field
 * by the three-way rule against `recorded` (absent: live state alone decides). resource_spec is diffed field by
 * field but sent whole (live overlaid with the declared fields), because the service replaces it whole; unchanged
 * source_revision_config fields are never sent, since any non-null one starts a revision.
 */
export function diffDeclared(
  spec: DeploymentSpec,
  live: { source_config: Loose; source_revision_config: Loose; secret_references?: unknown[] | null },
  recorded?: Recorded,
  creating = false,
): FieldDiff {
  const fields: FieldChange[] = [];
  const normalised: NormalisedField[] = [];
  const body: PatchDeploymentRequest = {};
  /** True when the field at `path` must be written; a normalised one is noted instead. */
  const differs = (
    path: string,
    want: unknown,
    have: unknown,
    equal?: (a: unknown, b: unknown) => boolean,
  ): boolean => {
    const verdict = compareField(want, have, recorded?.[path], equal);
    if (verdict === 'normalised') normalised.push({ path, live: have });
    return verdict === 'changed';
  };

  const desiredConfig = asObject(spec.source_config);
  const liveConfig = live.source_config;
  const configPatch: Loose = {};
  for (const key of declaredKeys(desiredConfig, SOURCE_CONFIG_KEYS)) {
    // The tier is sent on create only: a change of it is blocked (diff.ts), and an unreported one left alone.
    if (!creating && CREATE_ONLY.has(key)) continue;
    if (key === 'resource_spec') {
      const merged = diffResourceSpec(asObject(desiredConfig[key]), asObject(liveConfig[key]), fields, differs);
      if (merged) configPatch[key] = merged;
      continue;
    }
    if (!differs(`source_config.${key}`, desiredConfig[key], liveConfig[key])) continue;
    fields.push(change(`source_config.${key}`, liveConfig[key], desiredConfig[key]));
    configPatch[key] = stripNulls(desiredConfig[key]);
  }
  if (Object.keys(configPatch).length > 0) body.source_config = configPatch;

  const desiredRevision = asObject(spec.source_revision_config);
  const revisionPatch: Loose = {};
  for (const key of declaredKeys(desiredRevision, SOURCE_REVISION_KEYS)) {
    if (key === 'repo_commit_sha') continue;
    if (!differs(`source_revision_config.${key}`, desiredRevision[key], live.source_revision_config[key])) continue;
    fields.push(change(`source_revision_config.${key}`, live.source_revision_config[key], desiredRevision[key]));
    revisionPatch[key] = stripNulls(desiredRevision[key]);
  }
  if (Object.keys(revisionPatch).length > 0) {
    body.source_revision_config = revisionPatch;
  }

  if (
    !isAbsent(spec.secret_references) &&
    differs('secret_references', spec.secret_references, live.secret_references, sameSet)
  ) {
    fields.push(change('secret_references', live.secret_references, spec.secret_references));
    body.secret_references = stripNulls(spec.secret_references);
  }
  return { fields, body, normalised };
}

/** Pushes one FieldChange per changed declared field; returns the merged whole to send, or undefined when unchanged. */
function diffResourceSpec(
  desired: Loose,
  live: Loose,
  fields: FieldChange[],
  differs: (path: string, want: unknown, have: unknown) => boolean,
): Loose | undefined {
  let changed = false;
  for (const key of declaredKeys(desired, RESOURCE_SPEC_KEYS)) {
    if (!differs(`source_config.resource_spec.${key}`, desired[key], live[key])) continue;
    changed = true;
    fields.push(change(`source_config.resource_spec.${key}`, live[key], desired[key]));
  }
  if (!changed) return undefined;
  return ordered({ ...live, ...stripNulls(desired) }, RESOURCE_SPEC_KEYS);
}

/**
 * The create body (secrets excluded) and a FieldChange for every value the create brings, before null. The body
 * is complete, as the real service requires: source_config and source_revision_config are always there ({} when
 * empty); a codehost create always names its tier (the manifest's, else the service's default, shown in the plan);
 * an internal source's artifact is shown but left out of the body (the job patches it right after the create).
 */
export function createDeclared(
  name: string,
  spec: DeploymentSpec,
): { fields: FieldChange[]; body: CreateDeploymentRequest } {
  const empty = { source_config: {}, source_revision_config: {}, secret_references: null };
  const diff = diffDeclared(spec, empty, undefined, true);
  const fields = [change('name', null, name), change('source', null, spec.source), ...diff.fields];
  const sourceConfig: Loose = { ...(diff.body.source_config ?? {}) };
  if (spec.source === 'codehost' && isAbsent(sourceConfig.deployment_type)) {
    sourceConfig.deployment_type = DEFAULT_DEPLOYMENT_TYPE;
    // Shown with the other source_config fields, after the last of them.
    const after = fields.findLastIndex((f) => f.path.startsWith('source_config.'));
    fields.splice(
      after >= 0 ? after + 1 : 2,
      0,
      change('source_config.deployment_type', null, DEFAULT_DEPLOYMENT_TYPE),
    );
  }
  const revisionConfig: Loose = { ...(diff.body.source_revision_config ?? {}) };
  const artifact = artifactField(spec.source);
  if (artifact) delete revisionConfig[artifact];
  const body: CreateDeploymentRequest = {
    name,
    source: spec.source,
    source_config: sourceConfig,
    source_revision_config: revisionConfig,
    secrets: [],
  };
  if (diff.body.secret_references) body.secret_references = diff.body.secret_references;
  return { fields, body };
}

/** docs/against-the-real-service.md §4: a PATCH starts a revision when it holds any of these. */
export function patchStartsRevision(body: PatchDeploymentRequest, secretCount: number): boolean {
  if (secretCount > 0) return true;
  if (!isAbsent(body.revision_source)) return true;
  if (!isAbsent(body.source_config?.resource_spec)) return true;
  if (!isAbsent(body.secret_references)) return true;
  const revision = asObject(body.source_revision_config);
  return Object.values(revision).some((value) => !isAbsent(value));
}
