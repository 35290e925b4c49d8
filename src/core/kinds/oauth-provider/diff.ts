// Plans one OAuthProvider: against the live provider when the service reads providers, else by applied definition hashes.
import type {
  DiscoveryPreview,
  FieldChange,
  LiveProvider,
  McpProviderSpec,
  ManualProviderSpec,
  PlanChange,
  ProviderResource,
} from '../../model.js';
import { SENSITIVE } from '../../model.js';
import { objectHash } from '../../hash.js';
import type { CreateProviderRequest, McpDiscoverRequest, PatchProviderRequest } from '../../wire/schema.js';
import { isAbsent, stripNulls } from '../../values.js';
import type { PlanContext } from '../kind.js';
import { SUSPENDED_NOTE, withLocation } from '../notes.js';
import { CLIENT_SECRET, compareWithLive, patchedFieldCount } from './live.js';

export { CLIENT_SECRET };

/** Why a change of a provider converge created is blocked where the service cannot read or update providers (spec-only). */
export const PROVIDER_CHANGED_REASON =
  'the service cannot update an OAuth provider; delete it in the service and remove its applied state, or rename';

/** The note on a provider that converge created but the service no longer has. */
export const PROVIDER_GONE_NOTE =
  'converge created this provider before, but the service no longer has it: it is created again';

export interface ProviderDiff {
  change: PlanChange;
  request?:
    | { op: 'create'; body: Omit<CreateProviderRequest, 'client_secret'>; sendClientSecret: boolean }
    | { op: 'discover'; body: McpDiscoverRequest }
    | { op: 'patch'; body: Omit<PatchProviderRequest, 'client_secret'>; sendClientSecret: boolean };
  definitionHash: string;
}

/** The adoption note of a provider that exists in the service but that converge has no record of creating. */
export function adoptionNote(fieldCount: number): string {
  if (fieldCount === 0)
    return 'exists in the service, created outside converge; it matches the manifest: nothing to write';
  return `exists in the service, created outside converge: converge will take it over and update ${fieldCount} field${fieldCount === 1 ? '' : 's'}`;
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

function manualCreate(
  name: string,
  spec: ManualProviderSpec,
): { fields: FieldChange[]; body: Omit<CreateProviderRequest, 'client_secret'> } {
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
  if (spec.client_secret !== undefined)
    fields.push({ path: CLIENT_SECRET, before: null, after: SENSITIVE, sensitive: true });
  for (const key of MANUAL_OPTIONAL) {
    const value = spec[key];
    if (isAbsent(value)) continue;
    (body as Record<string, unknown>)[key] = stripNulls(value);
    fields.push(sent(key, stripNulls(value)));
  }
  return { fields, body };
}

function mcpCreate(
  name: string,
  spec: McpProviderSpec,
  preview: DiscoveryPreview | undefined,
): { fields: FieldChange[]; blocker?: string } {
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

interface Planned {
  action: PlanChange['action'];
  fields: FieldChange[];
  request?: ProviderDiff['request'];
  notes: string[];
}

/** Where the service cannot read providers: the applied record decides (created once; a later change is blocked). */
function fromRecord(definitionHash: string, recorded: string): Planned {
  if (recorded === definitionHash) return { action: 'noop', fields: [], notes: [] };
  return { action: 'blocked', fields: [], notes: [PROVIDER_CHANGED_REASON] };
}

function toCreate(resource: ProviderResource, ctx: ProviderContext): Planned {
  const spec = resource.spec;
  if (spec.mode === 'manual') {
    const create = manualCreate(resource.name, spec);
    return {
      action: 'create',
      fields: create.fields,
      request: { op: 'create', body: create.body, sendClientSecret: spec.client_secret !== undefined },
      notes: [],
    };
  }
  const create = mcpCreate(resource.name, spec, ctx.discovery);
  if (create.blocker) return { action: 'blocked', fields: create.fields, notes: [create.blocker] };
  return {
    action: 'create',
    fields: create.fields,
    request: {
      op: 'discover',
      body: { provider_id: resource.name, name: spec.name, mcp_server_url: spec.mcp_server_url },
    },
    notes: [],
  };
}

/** Against the live provider: the fields that differ, sent by one PATCH; an adoption when converge has no record of it. */
function toUpdate(resource: ProviderResource, live: LiveProvider, ctx: ProviderContext): Planned {
  const compared = compareWithLive(resource, live, ctx);
  const count = patchedFieldCount(compared);
  const notes = ctx.applied ? [] : [adoptionNote(count)];
  notes.push(...compared.notes);
  if (compared.blockers.length > 0)
    return { action: 'blocked', fields: compared.fields, notes: [...compared.blockers, ...notes] };
  if (count === 0) return { action: 'noop', fields: [], notes };
  return {
    action: 'update',
    fields: compared.fields,
    request: { op: 'patch', body: compared.patch, sendClientSecret: compared.sendClientSecret },
    notes,
  };
}

/**
 * The change for one provider. When the service reads providers (`ctx.provider`), the live provider decides: none is a
 * create, one is compared field by field (client_secret by hash) and updated by PATCH. Otherwise (a service as the spec
 * describes it) the applied record is the only knowledge: created once, a later change blocked.
 */
export function diffProvider(resource: ProviderResource, ctx: ProviderContext): ProviderDiff {
  const spec = resource.spec;
  const definitionHash = providerDefinitionHash(resource, ctx.secretHashes);
  const blockers: string[] = [];
  if (ctx.secretErrors?.length) blockers.push(...ctx.secretErrors);
  else if (
    spec.mode === 'manual' &&
    spec.client_secret !== undefined &&
    ctx.secretHashes[CLIENT_SECRET] === undefined
  ) {
    const named = withLocation(CLIENT_SECRET, resource.secretLocations?.[CLIENT_SECRET]);
    blockers.push(`${named} could not be resolved; check its valueFrom (environment variable or file)`);
  }

  let planned: Planned;
  const recorded = ctx.applied?.definitionHash;
  if (blockers.length > 0) {
    planned = { action: 'blocked', fields: [], notes: blockers };
  } else if (ctx.provider?.live) {
    planned = toUpdate(resource, ctx.provider.live, ctx);
  } else if (!ctx.provider && recorded !== undefined) {
    planned = fromRecord(definitionHash, recorded);
  } else {
    planned = toCreate(resource, ctx);
    if (ctx.provider && recorded !== undefined) planned.notes.push(PROVIDER_GONE_NOTE);
  }

  const notes = [...planned.notes];
  if (resource.suspend) notes.push(SUSPENDED_NOTE);
  const change: PlanChange = {
    kind: 'OAuthProvider',
    name: resource.name,
    action: planned.action,
    new_revision: false,
    fields: planned.fields,
    reason: notes.length > 0 ? notes.join('; ') : null,
  };
  if (resource.suspend) change.suspended = true;
  if (resource.suspend || !planned.request) return { change, definitionHash };
  return { change, request: planned.request, definitionHash };
}
