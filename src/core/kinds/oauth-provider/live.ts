// Compares an OAuthProvider with the live one the service reports: the PATCH that brings it to the manifest, and what no PATCH can change.
import type {
  DiscoveredEndpoints,
  FieldChange,
  LiveProvider,
  ManualProviderSpec,
  McpProviderSpec,
  ProviderResource,
} from '../../model.js';
import { SENSITIVE } from '../../model.js';
import type { PatchProviderRequest } from '../../wire/schema.js';
import { deepEqual, isAbsent, orNull, stripNulls } from '../../values.js';
import type { PlanContext } from '../kind.js';

/** The secret name under which a provider's client_secret hash is kept (secretHashes, AppliedRecord.secrets). */
export const CLIENT_SECRET = 'client_secret';

/** The fields PATCH /v2/auth/providers/{provider_id} updates besides client_secret (docs/against-the-real-service.md §7), in plan order. */
const PATCHABLE = ['name', 'client_id', 'auth_url', 'token_url', 'uses_pkce', 'code_challenge_method'] as const;

/** Fields a manual provider declares that no PATCH changes: set on create only. */
const CREATE_ONLY = [
  'provider_type',
  'token_endpoint_auth_method',
  'authorization_params',
  'allowed_redirect_uris',
] as const;

/** The discovered fields of an mcp provider that a PATCH updates. */
const DISCOVERED = ['auth_url', 'token_url', 'uses_pkce'] as const;

export const SECRET_UNKNOWN_NOTE =
  'client_secret: the service never returns it and converge has no record of writing it, so it is sent once with this write';

/** What comparing with the live provider found. */
export interface LiveComparison {
  /** Every field that differs (what the PATCH sends, and what blocks). */
  fields: FieldChange[];
  /** The PATCH body without client_secret (its value is read only right before the write). */
  patch: Omit<PatchProviderRequest, 'client_secret'>;
  sendClientSecret: boolean;
  /** Differences no PATCH can bring to the manifest: the provider is blocked with them. */
  blockers: string[];
  notes: string[];
}

function recreateHint(path: string): string {
  return (
    `${path} cannot be changed: PATCH /v2/auth/providers/{provider_id} does not take it; ` +
    'delete the provider in the service and converge creates it again, or write the live value in the manifest'
  );
}

function differs(out: LiveComparison, path: string, before: unknown, after: unknown): void {
  out.fields.push({ path, before: orNull(before), after, sensitive: false });
}

/** client_secret by hash: the recorded hash of what converge last wrote against the hash of the desired value. */
function compareSecret(out: LiveComparison, ctx: Pick<PlanContext, 'applied' | 'secretHashes'>): void {
  const desired = ctx.secretHashes[CLIENT_SECRET];
  if (desired === undefined) return;
  const recorded = ctx.applied?.secrets[CLIENT_SECRET];
  if (recorded === desired) return;
  if (ctx.applied && recorded === undefined) {
    // converge manages the provider and never sent it a secret: the manifest added one
    out.fields.push({ path: CLIENT_SECRET, before: null, after: SENSITIVE, sensitive: true });
  } else {
    out.fields.push({ path: CLIENT_SECRET, before: SENSITIVE, after: SENSITIVE, sensitive: true });
    if (!ctx.applied) out.notes.push(SECRET_UNKNOWN_NOTE);
  }
  out.sendClientSecret = true;
}

function compareManual(out: LiveComparison, spec: ManualProviderSpec, live: LiveProvider): void {
  const patch = out.patch as Record<string, unknown>;
  for (const key of PATCHABLE) {
    const desired = spec[key];
    if (isAbsent(desired) || deepEqual(desired, live[key])) continue;
    differs(out, key, live[key], desired);
    patch[key] = desired;
  }
  for (const key of CREATE_ONLY) {
    const desired = stripNulls(spec[key]);
    const current = live[key];
    // a value the service does not report cannot be compared (older services leave optional fields out)
    if (isAbsent(desired) || current === undefined || deepEqual(desired, current)) continue;
    differs(out, key, current, desired);
    out.blockers.push(recreateHint(key));
  }
}

/** The endpoints to compare with: the plan's discovery preview, else the one the job carries. */
function discoveredEndpoints(
  resource: ProviderResource,
  ctx: Pick<PlanContext, 'discovery'>,
  out: LiveComparison,
  url: string,
): DiscoveredEndpoints | undefined {
  const preview = ctx.discovery;
  if (preview && !preview.ok) {
    out.notes.push(
      `MCP discovery of ${url} failed at step "${preview.step}": ${preview.message}; the endpoints are not compared`,
    );
    return undefined;
  }
  if (preview) return { auth_url: preview.auth_url, token_url: preview.token_url, uses_pkce: preview.uses_pkce };
  return resource.discovered;
}

function compareMcp(
  out: LiveComparison,
  resource: ProviderResource,
  spec: McpProviderSpec,
  live: LiveProvider,
  ctx: Pick<PlanContext, 'discovery'>,
): void {
  const patch = out.patch as Record<string, unknown>;
  if (spec.name !== live.name) {
    differs(out, 'name', live.name, spec.name);
    patch.name = spec.name;
  }
  if (!isAbsent(live.mcp_server_url) && live.mcp_server_url !== spec.mcp_server_url) {
    differs(out, 'mcp_server_url', live.mcp_server_url, spec.mcp_server_url);
    out.blockers.push(
      'mcp_server_url cannot be changed: PATCH /v2/auth/providers/{provider_id} does not take it, and another MCP server needs ' +
        'its own client registration, which only a discovery at create makes; delete the provider in the service and converge has it discovered again',
    );
  }
  const found = discoveredEndpoints(resource, ctx, out, spec.mcp_server_url);
  if (!found) return;
  const moved: string[] = [];
  for (const key of DISCOVERED) {
    if (found[key] === live[key]) continue;
    differs(out, key, live[key], found[key]);
    patch[key] = found[key];
    moved.push(key);
  }
  if (moved.length > 0) out.notes.push(`${moved.join(', ')}: as discovery of ${spec.mcp_server_url} finds them now`);
}

/** The fields of `resource` that differ from `live`, the PATCH that sends them, and what no PATCH can change. */
export function compareWithLive(
  resource: ProviderResource,
  live: LiveProvider,
  ctx: Pick<PlanContext, 'applied' | 'secretHashes' | 'discovery'>,
): LiveComparison {
  const out: LiveComparison = { fields: [], patch: {}, sendClientSecret: false, blockers: [], notes: [] };
  const spec = resource.spec;
  if (spec.mode === 'manual') {
    compareManual(out, spec, live);
    if (spec.client_secret !== undefined) compareSecret(out, ctx);
  } else {
    compareMcp(out, resource, spec, live, ctx);
  }
  return out;
}

/** The number of fields a comparison's PATCH sends (client_secret included). */
export function patchedFieldCount(comparison: LiveComparison): number {
  return Object.keys(comparison.patch).length + (comparison.sendClientSecret ? 1 : 0);
}
