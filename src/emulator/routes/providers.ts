// OAuth provider routes per organization: the spec's two creates; beyond it (unless spec-only) list, get, PATCH and DELETE.
import {
  CreateProviderRequest,
  McpDiscoverRequest,
  TOKEN_AUTH_METHODS,
  ValidationIssue,
  type TokenEndpointAuthMethod,
} from '../../core/wire/schema.js';
import type { DiscoverHook } from '../discover.js';
import { replyFailure, type Route } from '../handler.js';
import { issue, parseWith } from '../issues.js';
import { ProviderPatchBody } from '../requests.js';
import { providerNotFound, type EmulatorStore } from '../store.js';
import { providerView } from '../view.js';

/** A hook's error may carry its own 422 items (one per failed discovery step) in `detail`. */
const ValidationItems = ValidationIssue.array();

export interface ProviderRouteOptions {
  store: EmulatorStore;
  discover: DiscoverHook;
  /** Only the spec's endpoints: no list, get, PATCH or DELETE. */
  specOnly: boolean;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** POST /v2/auth/providers. */
function createRoute(store: EmulatorStore): Route {
  return {
    method: 'POST',
    path: '/v2/auth/providers',
    body: true,
    async handle(ctx) {
      const parsed = parseWith(CreateProviderRequest, ctx.body, 'body');
      if (!parsed.ok) return replyFailure(parsed.error);
      const created = store.createProvider(ctx.tenant.organization_id, parsed.value);
      if (!created.ok) return replyFailure(created.error);
      await ctx.persist();
      return { status: 200, body: providerView(created.value) };
    },
  };
}

/** POST /v2/auth/providers/mcp-discover: discovery through the hook, then a create. */
function discoverRoute(options: ProviderRouteOptions): Route {
  const { store } = options;
  return {
    method: 'POST',
    path: '/v2/auth/providers/mcp-discover',
    body: true,
    async handle(ctx) {
      const parsed = parseWith(McpDiscoverRequest, ctx.body, 'body');
      if (!parsed.ok) return replyFailure(parsed.error);
      const { provider_id, name, mcp_server_url } = parsed.value;
      const loc = ['body', 'mcp_server_url'];
      if (!isHttpUrl(mcp_server_url)) {
        return {
          status: 422,
          body: { detail: [issue(loc, 'Input should be a valid URL with an http or https scheme', 'url_parsing')] },
        };
      }
      const orgId = ctx.tenant.organization_id;
      const conflict = `OAuth provider "${provider_id}" already exists in organization ${orgId}`;
      if (store.provider(orgId, provider_id)) return { status: 409, body: { detail: conflict } };
      let found;
      try {
        found = await options.discover(mcp_server_url);
      } catch (error) {
        const items = ValidationItems.safeParse((error as { detail?: unknown } | null)?.detail);
        if (items.success && items.data.length > 0) return { status: 422, body: { detail: items.data } };
        const reason = error instanceof Error ? error.message : String(error);
        return { status: 422, body: { detail: [issue(loc, `MCP discovery failed: ${reason}`)] } };
      }
      if (found.client_id === null || found.client_id === '') {
        const msg =
          'MCP discovery registered no client (the authorization server offers no dynamic client registration); create the provider manually with its client_id';
        return { status: 422, body: { detail: [issue(loc, msg)] } };
      }
      const method = found.token_endpoint_auth_method ?? 'client_secret_post';
      if (!(TOKEN_AUTH_METHODS as readonly string[]).includes(method)) {
        return {
          status: 422,
          body: {
            detail: [
              issue(
                loc,
                `MCP discovery registered a client with token_endpoint_auth_method "${method}", which the service does not support`,
              ),
            ],
          },
        };
      }
      // Discovery awaited: the provider_id may have been taken meanwhile; the store answers 409 then.
      const created = store.createProvider(orgId, {
        provider_id,
        name,
        mcp_server_url,
        auth_url: found.auth_url,
        token_url: found.token_url,
        client_id: found.client_id,
        client_secret: found.client_secret ?? null,
        uses_pkce: found.uses_pkce,
        code_challenge_method: found.code_challenge_method ?? null,
        token_endpoint_auth_method: method as TokenEndpointAuthMethod,
        is_dynamic_client: found.is_dynamic_client,
        provider_type: found.provider_type ?? null,
        authorization_params: found.authorization_params,
        allowed_redirect_uris: found.allowed_redirect_uris,
      });
      if (!created.ok) return replyFailure(created.error);
      await ctx.persist();
      return { status: 200, body: providerView(created.value) };
    },
  };
}

/** GET /v2/auth/providers (beyond the spec). */
function listRoute(store: EmulatorStore): Route {
  return {
    method: 'GET',
    path: '/v2/auth/providers',
    handle(ctx) {
      return { status: 200, body: store.providers(ctx.tenant.organization_id).map(providerView) };
    },
  };
}

/** GET /v2/auth/providers/{provider_id} (beyond the spec). */
function readRoute(store: EmulatorStore): Route {
  return {
    method: 'GET',
    path: '/v2/auth/providers/{provider_id}',
    handle(ctx) {
      const provider = store.provider(ctx.tenant.organization_id, ctx.params.provider_id!);
      if (!provider) return { status: 404, body: { detail: providerNotFound(ctx.params.provider_id!) } };
      return { status: 200, body: providerView(provider) };
    },
  };
}

/** PATCH /v2/auth/providers/{provider_id} (beyond the spec). */
function updateRoute(store: EmulatorStore): Route {
  return {
    method: 'PATCH',
    path: '/v2/auth/providers/{provider_id}',
    body: true,
    async handle(ctx) {
      const parsed = parseWith(ProviderPatchBody, ctx.body ?? {}, 'body');
      if (!parsed.ok) return replyFailure(parsed.error);
      const updated = store.patchProvider(ctx.tenant.organization_id, ctx.params.provider_id!, parsed.value);
      if (!updated.ok) return replyFailure(updated.error);
      await ctx.persist();
      return { status: 200, body: providerView(updated.value) };
    },
  };
}

/** DELETE /v2/auth/providers/{provider_id} (beyond the spec). */
function deleteRoute(store: EmulatorStore): Route {
  return {
    method: 'DELETE',
    path: '/v2/auth/providers/{provider_id}',
    async handle(ctx) {
      const deleted = store.deleteProvider(ctx.tenant.organization_id, ctx.params.provider_id!);
      if (!deleted.ok) return replyFailure(deleted.error);
      await ctx.persist();
      return { status: 204 };
    },
  };
}

export function providerRoutes(options: ProviderRouteOptions): Route[] {
  const { store } = options;
  const spec = [createRoute(store), discoverRoute(options)];
  if (options.specOnly) return spec;
  return [...spec, listRoute(store), readRoute(store), updateRoute(store), deleteRoute(store)];
}
