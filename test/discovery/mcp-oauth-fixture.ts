// Real MCP servers with OAuth on loopback, built from the SDK's own server pieces, for discovery tests.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  createOAuthMetadata,
  mcpAuthMetadataRouter,
  mcpAuthRouter,
} from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { authorizationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';

export interface Listening {
  server: Server;
  origin: string;
  close(): Promise<void>;
}

/** An http server on 127.0.0.1 with a free port; the handler is attached once the origin is known. */
export async function listen(): Promise<Listening> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The demo in-memory provider, optionally without dynamic client registration. */
function makeProvider(registration: boolean): { provider: OAuthServerProvider; demo: DemoInMemoryAuthProvider } {
  const demo = new DemoInMemoryAuthProvider();
  if (registration) return { provider: demo, demo };
  const provider: OAuthServerProvider = {
    clientsStore: { getClient: (id) => demo.clientsStore.getClient(id) },
    authorize: (client, params, res) => demo.authorize(client, params, res),
    challengeForAuthorizationCode: (client, code) => demo.challengeForAuthorizationCode(client, code),
    exchangeAuthorizationCode: (client, code, verifier) => demo.exchangeAuthorizationCode(client, code, verifier),
    exchangeRefreshToken: (client, token, scopes, resource) =>
      demo.exchangeRefreshToken(client, token, scopes, resource),
    verifyAccessToken: (token) => demo.verifyAccessToken(token),
  };
  return { provider, demo };
}

/** Mounts a stateless MCP endpoint (one McpServer per request) behind requireBearerAuth. */
function mountMcpEndpoint(
  app: ReturnType<typeof express>,
  path: string,
  verifier: OAuthServerProvider,
  resourceMetadataUrl?: string,
): void {
  const auth = requireBearerAuth(resourceMetadataUrl ? { verifier, resourceMetadataUrl } : { verifier });
  app.post(path, express.json(), auth, async (req: { body: unknown }, res: { on(e: string, f: () => void): void }) => {
    const server = new McpServer({ name: 'converge-fixture', version: '1.0.0' });
    server.registerTool('ping', { description: 'answers pong' }, async () => ({
      content: [{ type: 'text', text: 'pong' }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req as never, res as never, req.body);
  });
}

export interface AuthServer extends Listening {
  issuer: string;
  metadata: OAuthMetadata;
  /** The in-memory provider: its clientsStore holds registered clients. */
  demo: DemoInMemoryAuthProvider;
}

export interface AuthServerOptions {
  /** Issuer path, e.g. "/tenants/acme": endpoints and metadata then live under it (RFC 8414 path insertion). */
  issuerPath?: string;
  /** Where metadata is published: RFC 8414 (default) or only OpenID Connect discovery. */
  discovery?: 'oauth' | 'openid';
  /** Offer dynamic client registration (default true). */
  registration?: boolean;
}

const NO_RATE_LIMIT = { rateLimit: false } as const;

/** A standalone authorization server from the SDK's handlers, publishing its metadata only where the options say. */
export async function startAuthServer(options: AuthServerOptions = {}): Promise<AuthServer> {
  const listening = await listen();
  const path = options.issuerPath ?? '';
  const issuer = `${listening.origin}${path}`;
  const { provider, demo } = makeProvider(options.registration ?? true);
  const base = createOAuthMetadata({ provider, issuerUrl: new URL(issuer) });
  const metadata: OAuthMetadata = {
    ...base,
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    registration_endpoint: base.registration_endpoint ? `${issuer}/register` : undefined,
  };
  delete metadata.revocation_endpoint;
  delete metadata.revocation_endpoint_auth_methods_supported;
  const app = express();
  app.use(`${path}/authorize`, authorizationHandler({ provider, ...NO_RATE_LIMIT }));
  app.use(`${path}/token`, tokenHandler({ provider, ...NO_RATE_LIMIT }));
  if (metadata.registration_endpoint) {
    app.use(`${path}/register`, clientRegistrationHandler({ clientsStore: provider.clientsStore, ...NO_RATE_LIMIT }));
  }
  if ((options.discovery ?? 'oauth') === 'oauth') {
    app.use(`/.well-known/oauth-authorization-server${path}`, metadataHandler(metadata));
  } else {
    const openid = {
      ...metadata,
      jwks_uri: `${issuer}/jwks`,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
    };
    // OpenID Connect Discovery 1.0 appends the well-known suffix to the issuer path.
    app.use(`${path}/.well-known/openid-configuration`, metadataHandler(openid));
  }
  listening.server.on('request', app);
  return { ...listening, issuer, metadata, demo };
}

export interface McpServerOptions {
  /** The authorization server the resource metadata names. */
  authServer: {
    issuer: string;
    metadata: OAuthMetadata;
    provider?: OAuthServerProvider;
    demo: DemoInMemoryAuthProvider;
  };
  /**
   * How the protected resource metadata is published: at the RFC 9728 well-known URL (mcpAuthMetadataRouter),
   * only at a private URL named by the 401's WWW-Authenticate resource_metadata, or not at all.
   */
  resourceMetadata: 'well-known' | 'challenge-only' | 'none';
  /** MCP endpoint path (default "/mcp"). */
  path?: string;
}

export interface McpResourceServer extends Listening {
  mcpUrl: string;
  /** The resource_metadata URL its 401 names, when it names one. */
  resourceMetadataUrl: string | null;
}

/** An MCP server (resource server) whose tokens come from a separate authorization server. */
export async function startMcpServer(options: McpServerOptions): Promise<McpResourceServer> {
  const listening = await listen();
  const path = options.path ?? '/mcp';
  const mcpUrl = `${listening.origin}${path}`;
  const app = express();
  let resourceMetadataUrl: string | null = null;
  const verifier = options.authServer.provider ?? options.authServer.demo;
  if (options.resourceMetadata === 'well-known') {
    app.use(mcpAuthMetadataRouter({ oauthMetadata: options.authServer.metadata, resourceServerUrl: new URL(mcpUrl) }));
    resourceMetadataUrl = `${listening.origin}/.well-known/oauth-protected-resource${path}`;
  } else if (options.resourceMetadata === 'challenge-only') {
    resourceMetadataUrl = `${listening.origin}/metadata/resource-for-mcp`;
    app.use(
      '/metadata/resource-for-mcp',
      metadataHandler({ resource: mcpUrl, authorization_servers: [options.authServer.issuer] }),
    );
  }
  mountMcpEndpoint(app, path, verifier, resourceMetadataUrl ?? undefined);
  listening.server.on('request', app);
  return { ...listening, mcpUrl, resourceMetadataUrl };
}

export interface CombinedServer extends McpResourceServer {
  issuer: string;
  demo: DemoInMemoryAuthProvider;
}

/**
 * The SDK's all-in-one shape: mcpAuthRouter (authorization server at the root, PRM at the path-inserted
 * well-known URL) and requireBearerAuth on the MCP endpoint, on one origin.
 */
export async function startCombinedServer(options: { registration?: boolean } = {}): Promise<CombinedServer> {
  const listening = await listen();
  const mcpUrl = `${listening.origin}/mcp`;
  const { provider, demo } = makeProvider(options.registration ?? true);
  const app = express();
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(listening.origin),
      resourceServerUrl: new URL(mcpUrl),
      authorizationOptions: NO_RATE_LIMIT,
      tokenOptions: NO_RATE_LIMIT,
      clientRegistrationOptions: NO_RATE_LIMIT,
      revocationOptions: NO_RATE_LIMIT,
    }),
  );
  const resourceMetadataUrl = `${listening.origin}/.well-known/oauth-protected-resource/mcp`;
  mountMcpEndpoint(app, '/mcp', provider, resourceMetadataUrl);
  listening.server.on('request', app);
  return { ...listening, mcpUrl, resourceMetadataUrl, issuer: `${listening.origin}/`, demo };
}
