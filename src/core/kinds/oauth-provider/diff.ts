// Plans one OAuthProvider: the service can only create providers, so applied definition hashes decide noop/blocked/create.
import type { DiscoveryPreview, FieldChange, McpProviderSpec, ManualProviderSpec, PlanChange, ProviderResource } from '../../model.js';
import { SENSITIVE } from '../../model.js';
import { objectHash } from '../../hash.js';
import type { CreateProviderRequest, McpDiscoverRequest } from '../../wire/schema.js';
import { isAbsent, stripNulls } from '../../values.js';
import type { PlanContext } from '../kind.js';
import { SUSPENDED_NOTE, withLocation } from '../notes.js';

/** The secret name under which a provider's client_secret hash is kept (secretHashes, AppliedRecord.secrets). */
export const CLIENT_SECRET = 'client_secret';

export const PROVIDER_CHANGED_REASON =
  'the service cannot update an OAuth provider; delete it in the service and remove its applied state, or rename';

export interface ProviderDiff {
  change: PlanChange;
  request?:
    | { op: 'create'; body: Omit<CreateProviderRequest, 'client_secret'>; sendClientSecret: boolean }
    | { op: 'discover'; body: McpDiscoverRequest };
  definitionHash: string;
}

/** What the plan knows of a provider besides its manifest (repository resolution concerns deployments only). */
export type ProviderContext = Omit<PlanContext, 'repositoryError'>;

/** objectHash of the spec with client_secret (a reference) replaced by the hash of its value (null when unresolved). */
export function providerDefinitionHash(resource: ProviderResource, secretHashes: Record<string, string>): string {
  const spec = resource.spec;
  if (spec.mode === 'mcp' || spec.client_secret === undefined) return objectHash(spec);
  return objectHash({ ...spec, client_secret: secretHashes[CLIENT_SECRET] ?? null });
}

/** Order in which a manual create request's optional fields are listed. */
const MANUAL_OPTIONAL = [
  'uses_pkce',
  'code_challenge_method',
  'provider_type',
  'token_endpoint_auth_method',
  'authorization_params',
  'allowed_redirect_uris',
] as const;

function sent(path: string, after: unknown): FieldChange {
  return { path, before: null, after, sensitive: false };
}

function manualCreate(name: string, spec: ManualProviderSpec): { fields: FieldChange[]; body: Omit<CreateProviderRequest, 'client_secret'> } {
  const body: Omit<CreateProviderRequest, 'client_secret'> = {
    provider_id: name,
    name: spec.name,
    client_id: spec.client_id,
    auth_url: spec.auth_url,
    token_url: spec.token_url,
  };
  const fields = [
    sent('provider_id', name),
    sent('name', spec.name),
    sent('client_id', spec.client_id),
    sent('auth_url', spec.auth_url),
    sent('token_url', spec.token_url),
  ];
  if (spec.client_secret !== undefined) fields.push({ path: CLIENT_SECRET, before: null, after: SENSITIVE, sensitive: true });
  for (const key of MANUAL_OPTIONAL) {
    const value = spec[key];
    if (isAbsent(value)) continue;
    (body as Record<string, unknown>)[key] = stripNulls(value);
    fields.push(sent(key, stripNulls(value)));
  }
  return { fields, body };
}

function mcpCreate(name: string, spec: McpProviderSpec, preview: DiscoveryPreview | undefined): { fields: FieldChange[]; blocker?: string } {
  const fields = [sent('provider_id', name), sent('name', spec.name), sent('mcp_server_url', spec.mcp_server_url)];
  if (!preview) return { fields };
  if (!preview.ok) {
    return {
      fields,
      blocker: `MCP discovery of ${spec.mcp_server_url} failed at step "${preview.step}": ${preview.message}; check spec.mcp_server_url and that the server offers OAuth metadata`,
    };
  }
  fields.push(
    sent('discovered.auth_url', preview.auth_url),
    sent('discovered.token_url', preview.token_url),
    sent('discovered.uses_pkce', preview.uses_pkce),
    sent('discovered.registration', preview.registration),
  );
  return { fields };
}

/** The change for one provider. Providers are never listed or read: the applied record is the only live knowledge. */
export function diffProvider(resource: ProviderResource, ctx: ProviderContext): ProviderDiff {
  const spec = resource.spec;
  const definitionHash = providerDefinitionHash(resource, ctx.secretHashes);
  const blockers: string[] = [];
  if (ctx.secretErrors?.length) blockers.push(...ctx.secretErrors);
  else if (spec.mode === 'manual' && spec.client_secret !== undefined && ctx.secretHashes[CLIENT_SECRET] === undefined) {
    const named = withLocation(CLIENT_SECRET, resource.secretLocations?.[CLIENT_SECRET]);
    blockers.push(`${named} could not be resolved; check its valueFrom (environment variable or file)`);
  }

  let action: PlanChange['action'];
  let fields: FieldChange[] = [];
  let request: ProviderDiff['request'];
  const recorded = ctx.applied?.definitionHash;
  if (blockers.length > 0) {
    action = 'blocked';
  } else if (recorded !== undefined) {
    action = recorded === definitionHash ? 'noop' : 'blocked';
    if (action === 'blocked') blockers.push(PROVIDER_CHANGED_REASON);
  } else if (spec.mode === 'manual') {
    const create = manualCreate(resource.name, spec);
    action = 'create';
    fields = create.fields;
    request = { op: 'create', body: create.body, sendClientSecret: spec.client_secret !== undefined };
  } else {
    const create = mcpCreate(resource.name, spec, ctx.discovery);
    fields = create.fields;
    if (create.blocker) {
      action = 'blocked';
      blockers.push(create.blocker);
    } else {
      action = 'create';
      request = { op: 'discover', body: { provider_id: resource.name, name: spec.name, mcp_server_url: spec.mcp_server_url } };
    }
  }

  const notes = [...blockers];
  if (resource.suspend) notes.push(SUSPENDED_NOTE);
  const change: PlanChange = {
    kind: 'OAuthProvider',
    name: resource.name,
    action,
    new_revision: false,
    fields,
    reason: notes.length > 0 ? notes.join('; ') : null,
  };
  if (resource.suspend) change.suspended = true;
  if (resource.suspend || !request) return { change, definitionHash };
  return { change, request, definitionHash };
}
