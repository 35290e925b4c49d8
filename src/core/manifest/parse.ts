// Parses one manifest file (pure): YAML documents to desired resources, blocked resources and diagnostics.
import { sortDiagnostics, type Diagnostic, type Severity } from '../diagnostics.js';
import {
  formatLocation,
  resourceKey,
  type BlockedResource,
  type DesiredResource,
  type ResourceKind,
  type SourceLocation,
} from '../model.js';
import { manifestHooksOf, type LiteralSecret } from '../kinds/index.js';
import { toResource } from './convert.js';
import { closest } from '../did-you-mean.js';
import { issueText, problemsFromIssues } from './issues.js';
import { mergeLayers, type Layer, type Locate } from './overlay.js';
import { readManifestBytes, type ReadDocument, type ReadOptions } from './read-document.js';
import { MANIFEST_KINDS, MANIFEST_SCHEMAS, type DeploymentManifest, type OAuthProviderManifest } from './schema.js';
import { createWarnings, manifestWarnings } from './warnings.js';

export interface ParseOptions extends ReadOptions {
  /** Accept literal secret values (`value:`, a string client_secret); otherwise each is an error. */
  allowLiteralSecrets: boolean;
  /** Overlay patches by resource key (kind/name), merged in order over the document declaring that resource. */
  patches?: ReadonlyMap<string, readonly Layer[]>;
  /** Keep each valid resource's manifest data (variables substituted, overlays merged) in ManifestResult.data. */
  keepData?: boolean;
  /**
   * Also warn of what a create needs that a manifest leaves out (`converge validate`, which sees no live state; a plan
   * reads live state and blocks only the create that needs it).
   */
  createWarnings?: boolean;
}

/** What one file (or a whole directory) declares. */
export interface ManifestResult {
  resources: DesiredResource[];
  blocked: BlockedResource[];
  diagnostics: Diagnostic[];
  /** With ParseOptions.keepData: each valid resource's manifest data, by resource key. */
  data?: Map<string, unknown>;
}

/** Parses a file's raw bytes: its resources, the resources it blocks, and every problem as a diagnostic. */
export function parseManifestBytes(file: string, bytes: Uint8Array, options: ParseOptions): ManifestResult {
  const read = readManifestBytes(file, bytes, options);
  const result: ManifestResult = {
    resources: [],
    blocked: [],
    diagnostics: [...read.diagnostics],
    ...(options.keepData ? { data: new Map<string, unknown>() } : {}),
  };
  for (const document of read.documents) validateDocument(document, options, result);
  result.diagnostics = sortDiagnostics(result.diagnostics);
  return result;
}

/** The problem of a document's kind (missing, or not one converge manages, with the closest one), at the kind's value. */
export function kindProblem(locate: Locate, data: Record<string, unknown>): Diagnostic | undefined {
  const kind = data.kind;
  const kinds = MANIFEST_KINDS.join(', ');
  if (kind === undefined)
    return located(locate(['kind'], 'value'), 'E_SCHEMA', `missing required field "kind" (${kinds})`);
  if (typeof kind === 'string' && (MANIFEST_KINDS as readonly string[]).includes(kind)) return undefined;
  const guess = typeof kind === 'string' ? closest(kind, MANIFEST_KINDS) : undefined;
  const shown = typeof kind === 'string' && kind.length <= 64 ? `"${kind}"` : 'this value';
  const hint = guess ? `did you mean "${guess}"?` : `use one of ${kinds}`;
  return located(locate(['kind'], 'value'), 'E_KIND', `kind: ${shown} is not a kind converge manages; ${hint}`);
}

/** Literal secret values in a document's data, as its kind finds them (the value itself is never repeated in the message). */
function literalSecrets(data: Record<string, unknown>): LiteralSecret[] {
  return manifestHooksOf(data.kind)?.literalSecrets(data) ?? [];
}

/** Literal secret values, unless allowed: each one is an error at the value. */
function literalSecretProblems(locate: Locate, options: ParseOptions, data: Record<string, unknown>): Diagnostic[] {
  if (options.allowLiteralSecrets) return [];
  return literalSecrets(data).map((found) => located(locate(found.path, 'value'), 'E_LITERAL_SECRET', found.message));
}

function located(location: SourceLocation, code: string, message: string, severity: Severity = 'error'): Diagnostic {
  return { severity, ...location, message, code };
}

/** A schema problem at a value a variable set also names the variable and where its value was set. */
type SourceOf = (location: SourceLocation) => string | undefined;

function validate(
  layer: Layer,
  options: ParseOptions,
  diagnostics: Diagnostic[],
  sourceOf: SourceOf,
): DeploymentManifest | OAuthProviderManifest | undefined {
  const { data, locate } = layer;
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    const what = Array.isArray(data) ? 'a list' : `a ${typeof data}`;
    diagnostics.push(
      located(
        locate([], 'value'),
        'E_SCHEMA',
        `a manifest document must be a mapping with apiVersion, kind, metadata and spec; this one is ${what}`,
      ),
    );
    return undefined;
  }
  const record = data as Record<string, unknown>;
  const kindIssue = kindProblem(locate, record);
  if (kindIssue) {
    diagnostics.push(kindIssue);
    return undefined;
  }
  const kind = record.kind as ResourceKind;
  const schema = MANIFEST_SCHEMAS[kind];
  const parsed = schema.safeParse(data, SAFE_PARSE_OPTIONS);
  if (!parsed.success) {
    for (const problem of problemsFromIssues(parsed.error.issues, schema, kind)) {
      const at = locate(problem.path, problem.at);
      const source = problem.at === 'value' ? sourceOf(at) : undefined;
      diagnostics.push(located(at, problem.code, source ? `${problem.message} (${source})` : problem.message));
    }
  }
  diagnostics.push(...literalSecretProblems(locate, options, record));
  if (!parsed.success) return undefined;
  for (const warning of [
    ...manifestWarnings(parsed.data),
    ...(options.createWarnings ? createWarnings(parsed.data) : []),
  ]) {
    diagnostics.push(located(locate(warning.path, warning.at), warning.code, warning.message, 'warning'));
  }
  return parsed.data;
}

const SAFE_PARSE_OPTIONS = { reportInput: true, error: issueText };

function blockReason(problems: Diagnostic[]): string {
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : '';
  return `invalid manifest: ${formatLocation(first)}: ${first.message}${more}; fix the manifest (converge validate)`;
}

/** The overlay patches of the document's resource, in order (none when it names no resource). */
function patchesOf(read: ReadDocument, options: ParseOptions): readonly Layer[] {
  const { kind, name } = read.header;
  return (kind && name ? options.patches?.get(resourceKey(kind, name)) : undefined) ?? [];
}

/** The document with the overlay patches of its resource merged over it, if any (a document with problems is not patched). */
function patched(read: ReadDocument, options: ParseOptions): Layer {
  const patches = patchesOf(read, options);
  if (patches.length === 0 || read.data === undefined) return read;
  return mergeLayers(read, patches);
}

/** Validates one read document (merged with its overlay patches) into a resource, a blocked resource, or nothing. */
export function validateDocument(read: ReadDocument, options: ParseOptions, result: ManifestResult): void {
  const diagnostics: Diagnostic[] = [...read.problems];
  const { header } = read;
  let manifest: DeploymentManifest | OAuthProviderManifest | undefined;
  const layer = patched(read, options);
  const sourceOf: SourceOf = (at) => {
    const key = formatLocation(at);
    return (
      read.sources.get(key) ??
      patchesOf(read, options)
        .map((patch) => patch.sources?.get(key))
        .find((found) => found !== undefined)
    );
  };
  if (!diagnostics.some((d) => d.severity === 'error') && layer.data !== undefined)
    manifest = validate(layer, options, diagnostics, sourceOf);
  result.diagnostics.push(...diagnostics);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) {
    if (header.kind && header.name)
      result.blocked.push({
        kind: header.kind,
        name: header.name,
        location: header.location,
        reason: blockReason(errors),
      });
    return;
  }
  if (!manifest) return;
  result.data?.set(resourceKey(manifest.kind, manifest.metadata.name), layer.data);
  result.resources.push(toResource(manifest, header.location, (path) => layer.locate(path, 'value')));
}
