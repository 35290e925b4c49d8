// The OAuth provider endpoints of ServiceClient: list, read, create, discover (MCP), patch and delete.
import { z } from 'zod';
import { ServiceError } from '../core/errors.js';
import type { LiveProviders } from '../core/model.js';
import {
  OAuthProvider,
  type CreateProviderRequest,
  type McpDiscoverRequest,
  type PatchProviderRequest,
} from '../core/wire/schema.js';
import { ABSENT_ENDPOINT, ROUTES, secretValues } from './endpoints.js';
import type { HttpTransport } from './transport.js';

/** GET /v2/auth/providers answers a plain array (docs/against-the-real-service.md §6; the emulator does the same): no paging. */
const ProviderList = z.array(OAuthProvider);

function providersUnreadableNote(status: number): string {
  return (
    `the service has no GET ${ROUTES.providers} (it answered ${status}), so converge cannot read or update OAuth providers: ` +
    'it plans them from its own records as the spec alone allows (each is created once; a later change to one is blocked)'
  );
}

/** GET /v2/auth/providers (beyond the spec): every provider, or `readable: false` with a plan's note when the service lacks it (404, 405). */
export async function listProviders(http: HttpTransport): Promise<LiveProviders> {
  try {
    const providers = await http.send({
      method: 'GET',
      route: ROUTES.providers,
      path: ROUTES.providers,
      schema: ProviderList,
    });
    return { readable: true, providers };
  } catch (error) {
    if (!(error instanceof ServiceError) || !ABSENT_ENDPOINT.has(error.status)) throw error;
    return { readable: false, note: providersUnreadableNote(error.status) };
  }
}

/** GET /v2/auth/providers/{provider_id} (beyond the spec); undefined when the service has no such provider (404). */
export async function getProvider(http: HttpTransport, providerId: string): Promise<OAuthProvider | undefined> {
  try {
    return await http.send({
      method: 'GET',
      route: ROUTES.provider,
      path: `${ROUTES.providers}/${encodeURIComponent(providerId)}`,
      schema: OAuthProvider,
    });
  } catch (error) {
    if (error instanceof ServiceError && error.status === 404) return undefined;
    throw error;
  }
}

/** POST /v2/auth/providers. Not retried. */
export async function createProvider(http: HttpTransport, body: CreateProviderRequest): Promise<OAuthProvider> {
  return http.send({
    method: 'POST',
    route: ROUTES.providers,
    path: ROUTES.providers,
    body,
    sensitive: secretValues(body),
    schema: OAuthProvider,
  });
}

/** POST /v2/auth/providers/mcp-discover. Not retried. */
export async function discoverProvider(http: HttpTransport, body: McpDiscoverRequest): Promise<OAuthProvider> {
  return http.send({
    method: 'POST',
    route: ROUTES.mcpDiscover,
    path: ROUTES.mcpDiscover,
    body,
    schema: OAuthProvider,
  });
}

/** PATCH /v2/auth/providers/{provider_id} (beyond the spec). Not retried. */
export async function patchProvider(
  http: HttpTransport,
  providerId: string,
  body: PatchProviderRequest,
): Promise<OAuthProvider> {
  return http.send({
    method: 'PATCH',
    route: ROUTES.provider,
    path: `${ROUTES.providers}/${encodeURIComponent(providerId)}`,
    body,
    sensitive: secretValues(body),
    schema: OAuthProvider,
  });
}

/** DELETE /v2/auth/providers/{provider_id} (beyond the spec; 204); `gone` on 404. Not retried. */
export async function deleteProvider(http: HttpTransport, providerId: string): Promise<'deleted' | 'gone'> {
  try {
    await http.send({
      method: 'DELETE',
      route: ROUTES.provider,
      path: `${ROUTES.providers}/${encodeURIComponent(providerId)}`,
      schema: z.undefined(),
      noContent: true,
    });
    return 'deleted';
  } catch (error) {
    if (error instanceof ServiceError && error.status === 404) return 'gone';
    throw error;
  }
}
