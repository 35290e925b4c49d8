// MCP discovery against real SDK-built OAuth servers on loopback, and against broken ones.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { discoverProvider, previewDiscovery } from '../../src/discovery/discover.js';
import type { ValidationIssue } from '../../src/core/wire/schema.js';
import { emulatorDiscoveryHook } from '../../src/emulator/discovery-hook.js';
import { DiscoveryError } from '../../src/discovery/errors.js';
import { listen, startAuthServer, startCombinedServer, startMcpServer, type Listening } from './mcp-oauth-fixture.js';

const open: Listening[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

function track<T extends Listening>(server: T): T {
  open.push(server);
  return server;
}

async function discoveryFailure(promise: Promise<unknown>): Promise<DiscoveryError> {
  const error = await promise.then(
    () => {
      throw new Error('expected discovery to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DiscoveryError);
  return error as DiscoveryError;
}

async function rawServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Listening & { hits: string[] }> {
  const listening = track(await listen());
  const hits: string[] = [];
  listening.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    hits.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  return { ...listening, hits };
}

const local = { allowLocal: true } as const;

describe('discoverProvider against SDK-built servers', () => {
  it('finds the endpoints of mcpAuthRouter + requireBearerAuth and registers a working client', async () => {
    const server = track(await startCombinedServer());
    const outcome = await discoverProvider(server.mcpUrl, { ...local, register: true, clientName: 'converge-test' });
    expect(outcome.provider).toEqual({
      mcp_server_url: server.mcpUrl,
      auth_url: `${server.origin}/authorize`,
      token_url: `${server.origin}/token`,
      client_id: expect.any(String),
      uses_pkce: true,
      code_challenge_method: 'S256',
      is_dynamic_client: true,
      issuer: `${server.origin}/`,
      authorization_server_url: `${server.origin}/`,
      registration_offered: true,
      token_endpoint_auth_method: 'client_secret_post',
      redirect_uris: ['http://127.0.0.1/oauth/callback'],
      resource_metadata_url: `${server.origin}/.well-known/oauth-protected-resource/mcp`,
    });
    const registered = await server.demo.clientsStore.getClient(outcome.provider.client_id!);
    expect(registered?.client_name).toBe('converge-test');
    expect(outcome.clientSecret).toEqual(registered?.client_secret);
    expect(typeof outcome.clientSecret).toBe('string');
    // the secret is not enumerable: it is in no JSON, spread or inspected form of the outcome
    expect(JSON.stringify(outcome)).not.toContain(outcome.clientSecret!);
    expect(inspect(outcome, { depth: 5 })).not.toContain(outcome.clientSecret!);
    expect(Object.keys({ ...outcome })).toEqual(['provider']);

    // the discovered endpoints and client work: authorize (PKCE), exchange the code, call the MCP server
    const redirectUri = 'http://127.0.0.1/oauth/callback';
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const authorize = new URL(outcome.provider.auth_url);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: outcome.provider.client_id!,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }).toString();
    const redirected = await fetch(authorize, { redirect: 'manual' });
    expect(redirected.status).toBe(302);
    const code = new URL(redirected.headers.get('location')!).searchParams.get('code')!;
    const token = await fetch(outcome.provider.token_url, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        client_id: outcome.provider.client_id!,
        client_secret: outcome.clientSecret!,
      }),
    });
    expect(token.status).toBe(200);
    const { access_token } = (await token.json()) as { access_token: string };
    const mcp = await fetch(server.mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(mcp.status).toBe(200);
    expect(await mcp.text()).toContain('converge-fixture');
  });

  it('does not register when register is false', async () => {
    const server = track(await startCombinedServer());
    const outcome = await discoverProvider(server.mcpUrl, { ...local, register: false });
    expect(outcome.provider.client_id).toBeNull();
    expect(outcome.provider.is_dynamic_client).toBe(false);
    expect(outcome.provider.registration_offered).toBe(true);
    expect(outcome.clientSecret).toBeNull();
  });

  it('uses path insertion for an issuer that has a path (separate authorization server)', async () => {
    const as = track(await startAuthServer({ issuerPath: '/tenants/acme' }));
    const rs = track(await startMcpServer({ authServer: as, resourceMetadata: 'well-known' }));
    const outcome = await discoverProvider(rs.mcpUrl, { ...local, register: true });
    expect(outcome.provider).toMatchObject({
      auth_url: `${as.origin}/tenants/acme/authorize`,
      token_url: `${as.origin}/tenants/acme/token`,
      issuer: `${as.origin}/tenants/acme`,
      authorization_server_url: `${as.origin}/tenants/acme`,
      uses_pkce: true,
      registration_offered: true,
      is_dynamic_client: true,
      resource_metadata_url: `${rs.origin}/.well-known/oauth-protected-resource/mcp`,
    });
    expect(await as.demo.clientsStore.getClient(outcome.provider.client_id!)).toBeDefined();
  });

  it('falls back to OpenID Connect discovery when only openid-configuration is published', async () => {
    const as = track(await startAuthServer({ issuerPath: '/realms/demo', discovery: 'openid' }));
    const rs = track(await startMcpServer({ authServer: as, resourceMetadata: 'well-known' }));
    const outcome = await discoverProvider(rs.mcpUrl, { ...local, register: true });
    expect(outcome.provider).toMatchObject({
      auth_url: `${as.origin}/realms/demo/authorize`,
      token_url: `${as.origin}/realms/demo/token`,
      issuer: `${as.origin}/realms/demo`,
      uses_pkce: true,
      is_dynamic_client: true,
    });
    expect(outcome.provider.client_id).toEqual(expect.any(String));
  });

  it('reports no registration when the authorization server offers none', async () => {
    const server = track(await startCombinedServer({ registration: false }));
    const outcome = await discoverProvider(server.mcpUrl, { ...local, register: true });
    expect(outcome.provider).toMatchObject({
      auth_url: `${server.origin}/authorize`,
      token_url: `${server.origin}/token`,
      client_id: null,
      registration_offered: false,
      is_dynamic_client: false,
      uses_pkce: true,
    });
    const error = await discoveryFailure(emulatorDiscoveryHook(local)(server.mcpUrl));
    expect(error.step).toBe('client-registration');
    expect(error.message).toContain('no dynamic client registration');
  });

  it('finds the resource metadata through the 401 WWW-Authenticate header when no well-known URL has it', async () => {
    const as = track(await startAuthServer());
    const rs = track(await startMcpServer({ authServer: as, resourceMetadata: 'challenge-only' }));
    const outcome = await discoverProvider(rs.mcpUrl, { ...local, register: true });
    expect(outcome.provider).toMatchObject({
      auth_url: `${as.origin}/authorize`,
      token_url: `${as.origin}/token`,
      authorization_server_url: `${as.origin}/`,
      resource_metadata_url: `${rs.origin}/metadata/resource-for-mcp`,
      is_dynamic_client: true,
    });
  });

  it("falls back to the MCP server's origin as authorization server when it publishes no resource metadata", async () => {
    const as = track(await startAuthServer());
    // the MCP server advertises nothing; its origin is the authorization server (legacy MCP auth)
    const rs = track(await startMcpServer({ authServer: as, resourceMetadata: 'none' }));
    const error = await discoveryFailure(discoverProvider(rs.mcpUrl, { ...local, register: false }));
    expect(error.step).toBe('authorization-server-metadata');
    expect(error.message).toContain(`${rs.origin}/.well-known/oauth-authorization-server (HTTP 404)`);
    expect(error.message).toContain(`${rs.origin}/.well-known/openid-configuration (HTTP 404)`);
    expect(error.failures.map((f) => f.step)).toEqual([
      'protected-resource-metadata',
      'protected-resource-metadata',
      'protected-resource-metadata',
      'authorization-server-metadata',
    ]);
    expect(error.failures[2]!.message).toContain('401 without resource_metadata');
    const legacy = await discoverProvider(as.origin, { ...local, register: false });
    expect(legacy.provider.auth_url).toBe(`${as.origin}/authorize`);
    expect(legacy.provider.resource_metadata_url).toBeUndefined();
  });
});

describe('discoverProvider failures name the step and URL', () => {
  it('an unreachable server fails protected-resource-metadata', async () => {
    const closed = await listen();
    await closed.close();
    const error = await discoveryFailure(discoverProvider(`${closed.origin}/mcp`, { ...local, register: true }));
    expect(error.step).toBe('protected-resource-metadata');
    expect(error.message).toContain(`${closed.origin}/.well-known/oauth-protected-resource/mcp`);
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('a slow authorization server fails authorization-server-metadata with a timeout', async () => {
    const slow = await rawServer(() => undefined);
    const rs = await rawServer((req, res) => {
      if (req.url === '/.well-known/oauth-protected-resource/mcp') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({ resource: `http://${req.headers.host}/mcp`, authorization_servers: [slow.origin] }),
        );
      }
      res.writeHead(404).end();
    });
    const error = await discoveryFailure(
      discoverProvider(`${rs.origin}/mcp`, { ...local, register: true, timeoutMs: 300 }),
    );
    expect(error.step).toBe('authorization-server-metadata');
    expect(error.message).toContain('within 300 ms');
    expect(error.url).toBe(`${slow.origin}/.well-known/oauth-authorization-server`);
  });

  it('the whole discovery has a deadline', async () => {
    const slow = await rawServer(() => undefined);
    const error = await discoveryFailure(
      discoverProvider(`${slow.origin}/mcp`, { ...local, register: false, timeoutMs: 5_000, deadlineMs: 250 }),
    );
    expect(error.step).toBe('protected-resource-metadata');
    expect((error.cause as { code?: string }).code).toBe('E_DISCOVERY_TIMEOUT');
    expect(error.message).toContain('ran out of time');
  });

  it('a server answering HTML everywhere fails with what it answered', async () => {
    const html = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>Welcome</title>');
    });
    const error = await discoveryFailure(discoverProvider(`${html.origin}/mcp`, { ...local, register: true }));
    expect(error.step).toBe('authorization-server-metadata');
    expect(error.message).toContain(
      `${html.origin}/.well-known/oauth-authorization-server answered HTTP 200 with text/html, which is not JSON`,
    );
    expect(error.failures[0]).toMatchObject({ step: 'protected-resource-metadata' });
    expect(error.failures[0]!.message).toContain('text/html');
    expect(error.failures[1]!.message).toContain('answered HTTP 200, not 401');
  });

  it('invalid JSON and invalid metadata documents are reported as such', async () => {
    const broken = await rawServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.startsWith('/.well-known/oauth-protected-resource')) return void res.end('{"resource": ');
      res.end(JSON.stringify({ issuer: 'x', token_endpoint: 'not a url' }));
    });
    const error = await discoveryFailure(discoverProvider(`${broken.origin}/mcp`, { ...local, register: false }));
    expect(error.step).toBe('authorization-server-metadata');
    expect(error.message).toContain('not valid metadata');
    expect(error.message).toContain('authorization_endpoint');
    expect(error.failures[0]!.message).toContain('application/json, which is not JSON');
  });

  it('a redirect loop stops at the redirect limit', async () => {
    const loop = await rawServer((req, res) => void res.writeHead(302, { location: req.url ?? '/' }).end());
    const error = await discoveryFailure(discoverProvider(`${loop.origin}/mcp`, { ...local, register: false }));
    expect(error.step).toBe('protected-resource-metadata');
    expect((error.cause as { code?: string }).code).toBe('E_DISCOVERY_TOO_MANY_REDIRECTS');
    expect(loop.hits).toHaveLength(4);
  });

  it('an oversize metadata document is refused', async () => {
    const big = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource: 'x', padding: 'p'.repeat(300 * 1024) }));
    });
    const error = await discoveryFailure(discoverProvider(`${big.origin}/mcp`, { ...local, register: false }));
    expect(error.step).toBe('protected-resource-metadata');
    expect((error.cause as { code?: string }).code).toBe('E_DISCOVERY_TOO_LARGE');
  });

  it('resource metadata pointing at a metadata address is refused at the authorization server step', async () => {
    const rs = await rawServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          resource: `http://${req.headers.host}/mcp`,
          authorization_servers: ['http://169.254.169.254/latest'],
        }),
      );
    });
    const error = await discoveryFailure(discoverProvider(`${rs.origin}/mcp`, { ...local, register: false }));
    expect(error.step).toBe('authorization-server-metadata');
    expect((error.cause as { code?: string }).code).toBe('E_DISCOVERY_BLOCKED_ADDRESS');
  });

  it('a token endpoint on a metadata address is refused even though nothing fetches it during discovery', async () => {
    const as = await rawServer((req, res) => {
      if (req.url !== '/.well-known/oauth-authorization-server') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          issuer: 'http://as',
          authorization_endpoint: 'http://127.0.0.1/authorize',
          token_endpoint: 'http://169.254.169.254/token',
          response_types_supported: ['code'],
        }),
      );
    });
    const error = await discoveryFailure(discoverProvider(as.origin, { ...local, register: false }));
    expect(error.step).toBe('authorization-server-metadata');
    expect(error.message).toContain('token_endpoint refused');
  });

  it('resource metadata describing another resource is refused', async () => {
    const as = track(await startAuthServer());
    const rs = await rawServer((req, res) => {
      if (req.url !== '/.well-known/oauth-protected-resource/mcp') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource: 'https://other.example.com/mcp', authorization_servers: [as.issuer] }));
    });
    const error = await discoveryFailure(discoverProvider(`${rs.origin}/mcp`, { ...local, register: true }));
    expect(error.step).toBe('protected-resource-metadata');
    expect(error.message).toContain('"https://other.example.com/mcp", which does not cover the MCP server');
    expect((as.demo.clientsStore as unknown as { clients: Map<string, unknown> }).clients.size).toBe(0);
  });

  it('a link-local MCP URL is refused without a single request', async () => {
    const error = await discoveryFailure(discoverProvider('http://169.254.169.254/mcp', { ...local, register: true }));
    expect(error.step).toBe('mcp-server-url');
    expect(error.message).toBe(
      'mcp-server-url: refusing http://169.254.169.254/mcp: 169.254.169.254, a link-local or cloud metadata address, which is never fetched',
    );
    expect((error.cause as { code?: string }).code).toBe('E_DISCOVERY_BLOCKED_ADDRESS');
  });

  it('without allowLocal, http and private addresses are refused before connecting', async () => {
    const server = track(await startCombinedServer());
    const hits: string[] = [];
    server.server.on('request', (req: IncomingMessage) => hits.push(req.url ?? ''));
    const http = await discoveryFailure(discoverProvider(server.mcpUrl, { register: true }));
    expect(http.step).toBe('mcp-server-url');
    expect((http.cause as { code?: string }).code).toBe('E_DISCOVERY_BLOCKED_URL');
    const httpsPrivate = await discoveryFailure(discoverProvider('https://10.1.2.3/mcp', { register: true }));
    expect((httpsPrivate.cause as { code?: string }).code).toBe('E_DISCOVERY_BLOCKED_ADDRESS');
    expect(hits).toEqual([]);
  });

  it('a value that is not a URL fails the mcp-server-url step', async () => {
    const error = await discoveryFailure(discoverProvider('mcp.example.com', { register: false }));
    expect(error.step).toBe('mcp-server-url');
  });
});

describe('previewDiscovery', () => {
  it('runs read-only and returns what plan shows', async () => {
    const server = track(await startCombinedServer());
    const preview = await previewDiscovery(server.mcpUrl, local);
    expect(preview).toEqual({
      ok: true,
      auth_url: `${server.origin}/authorize`,
      token_url: `${server.origin}/token`,
      uses_pkce: true,
      registration: true,
      issuer: `${server.origin}/`,
      resource_metadata_url: `${server.origin}/.well-known/oauth-protected-resource/mcp`,
    });
    // nothing was registered
    expect((server.demo.clientsStore as unknown as { clients: Map<string, unknown> }).clients.size).toBe(0);
  });

  it('returns the failing step instead of throwing', async () => {
    const preview = await previewDiscovery('https://10.0.0.1/mcp');
    expect(preview).toMatchObject({ ok: false, step: 'mcp-server-url' });
    expect(preview.ok === false && preview.message).toContain('--allow-local-discovery');
  });
});

describe('emulator hook', () => {
  it('registers and returns the provider fields with the client secret for the emulator to hash', async () => {
    const server = track(await startCombinedServer());
    const found = await emulatorDiscoveryHook({ ...local, redirectUris: ['https://app.example.com/cb'] })(
      server.mcpUrl,
    );
    const stored = await server.demo.clientsStore.getClient(found.client_id!);
    expect(found).toEqual({
      auth_url: `${server.origin}/authorize`,
      token_url: `${server.origin}/token`,
      client_id: stored!.client_id,
      client_secret: stored!.client_secret,
      uses_pkce: true,
      code_challenge_method: 'S256',
      is_dynamic_client: true,
      allowed_redirect_uris: ['https://app.example.com/cb'],
      token_endpoint_auth_method: 'client_secret_post',
    });
  });

  it('fails with every failed attempt in the message and as 422 detail items', async () => {
    const html = await rawServer(
      (_req, res) => void res.writeHead(404, { 'content-type': 'text/html' }).end('<p>no</p>'),
    );
    const error = await discoveryFailure(emulatorDiscoveryHook(local)(`${html.origin}/mcp`));
    expect(error.step).toBe('authorization-server-metadata');
    // the emulator's route answers this `detail` as the 422's items
    const detail = (error as DiscoveryError & { detail: ValidationIssue[] }).detail;
    expect(detail).toHaveLength(error.failures.length);
    expect(detail.map((d) => d.type)).toEqual([
      'discovery.protected-resource-metadata',
      'discovery.protected-resource-metadata',
      'discovery.protected-resource-metadata',
      'discovery.authorization-server-metadata',
    ]);
    expect(detail[0]).toEqual({
      loc: ['body', 'mcp_server_url'],
      msg: `protected-resource-metadata: no protected resource metadata (HTTP 404) (${html.origin}/.well-known/oauth-protected-resource/mcp)`,
      type: 'discovery.protected-resource-metadata',
    });
    expect(error.message.split('; ')).toEqual(detail.map((d) => d.msg));
  });
});
