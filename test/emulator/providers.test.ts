// OAuth providers and code-host integrations through real HTTP: creation, defaults, conflicts, MCP discovery, repositories.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { probeOnlyDiscovery, refusedAddress } from '../../src/emulator/discover.js';
import { sha256Hex } from '../../src/emulator/records.js';
import type { EmulatorOptions, ProviderFromDiscovery, RunningEmulator } from '../../src/emulator/server.js';
import { ACME, baseSeed, LABS, ORG, start, type Client } from './helpers.js';

const OTHER_ORG_TENANT = '44444444-4444-4444-8444-444444444444';
const OTHER_ORG = '55555555-5555-4555-8555-555555555555';
let running: RunningEmulator | undefined;
const servers: Server[] = [];

afterEach(async () => {
  await running?.close();
  running = undefined;
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function open(options: EmulatorOptions = {}): Promise<Client> {
  const seed = baseSeed();
  seed.tenants!.push({ id: OTHER_ORG_TENANT, name: 'partner', organization_id: OTHER_ORG });
  const { emulator, api } = await start({ seed, ...options });
  running = emulator;
  return api;
}

const slack = {
  provider_id: 'slack',
  name: 'Slack',
  client_id: '123.456',
  client_secret: 'very-secret-value',
  auth_url: 'https://slack.com/oauth/v2/authorize',
  token_url: 'https://slack.com/api/oauth.v2.access',
  provider_type: 'slack',
};

/** A plain HTTP server on loopback answering every request with `status` (or never, when hang is set). */
async function loopbackServer(status: number, hang = false): Promise<string> {
  const server = createServer((_req, res) => {
    if (hang) return;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end('hello');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

describe('POST /v2/auth/providers', () => {
  test('answers 200 with the spec defaults and never client_secret; only its hash is kept', async () => {
    const api = await open();
    const answer = await api.call('POST', '/v2/auth/providers', slack);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      organization_id: ORG,
      provider_id: 'slack',
      name: 'Slack',
      client_id: '123.456',
      auth_url: slack.auth_url,
      token_url: slack.token_url,
      uses_pkce: false,
      code_challenge_method: 'S256',
      provider_type: 'slack',
      mcp_server_url: null,
      token_endpoint_auth_method: 'client_secret_post',
      authorization_params: {},
      is_dynamic_client: false,
      allowed_redirect_uris: [],
    });
    expect(answer.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.body.created_at).toBe(answer.body.updated_at);
    expect(JSON.stringify(answer.body)).not.toContain('very-secret-value');
    expect(answer.body).not.toHaveProperty('client_secret');
    const stored = running!.store.provider(ORG, 'slack')!;
    expect(stored.client_secret_sha256).toBe(sha256Hex('very-secret-value'));
    expect(JSON.stringify(stored)).not.toContain('very-secret-value');
    expect(JSON.stringify(running!.requestLog)).not.toContain('very-secret-value');
    expect(running!.requestLog.at(-1)!.body).toMatchObject({
      client_secret: `<redacted sha256:${sha256Hex('very-secret-value').slice(0, 12)}>`,
    });
  });

  test('given options are kept', async () => {
    const api = await open();
    const answer = await api.call('POST', '/v2/auth/providers', {
      ...slack,
      client_secret: null,
      uses_pkce: true,
      code_challenge_method: 'plain',
      token_endpoint_auth_method: 'client_secret_basic',
      authorization_params: { prompt: 'consent' },
      allowed_redirect_uris: ['https://app.example.com/cb'],
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      uses_pkce: true,
      code_challenge_method: 'plain',
      token_endpoint_auth_method: 'client_secret_basic',
      authorization_params: { prompt: 'consent' },
      allowed_redirect_uris: ['https://app.example.com/cb'],
    });
  });

  test('409 for a second provider_id in the organization; another organization may use it', async () => {
    const api = await open();
    expect((await api.call('POST', '/v2/auth/providers', slack)).status).toBe(200);
    const again = await api.call('POST', '/v2/auth/providers', { ...slack, name: 'Other' });
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/"slack" already exists/);
    const partner = await api.call('POST', '/v2/auth/providers', slack, { 'x-tenant-id': OTHER_ORG_TENANT });
    expect(partner.status).toBe(200);
    expect(partner.body.organization_id).toBe(OTHER_ORG);
  });

  test('422 for invalid bodies', async () => {
    const api = await open();
    const cases: Array<[Record<string, unknown>, Array<string | number>, string]> = [
      [{ ...slack, provider_id: undefined }, ['body', 'provider_id'], 'missing'],
      [{ ...slack, token_url: undefined }, ['body', 'token_url'], 'missing'],
      [{ ...slack, provider_type: 'github' }, ['body', 'provider_type'], 'enum'],
      [{ ...slack, token_endpoint_auth_method: 'private_key_jwt' }, ['body', 'token_endpoint_auth_method'], 'enum'],
      [{ ...slack, uses_pkce: 'yes' }, ['body', 'uses_pkce'], 'bool_type'],
      [{ ...slack, client_secret: 42 }, ['body', 'client_secret'], 'string_type'],
    ];
    for (const [body, loc, type] of cases) {
      const answer = await api.call('POST', '/v2/auth/providers', body);
      expect(answer.status, JSON.stringify(loc)).toBe(422);
      expect(answer.body.detail).toContainEqual(expect.objectContaining({ loc, type }));
    }
  });
});

describe('POST /v2/auth/providers/mcp-discover', () => {
  const discovered: ProviderFromDiscovery = {
    auth_url: 'https://auth.linear.example/authorize',
    token_url: 'https://auth.linear.example/token',
    client_id: 'dyn-client-1',
    client_secret: 'registered-secret',
    uses_pkce: true,
    code_challenge_method: 'S256',
    token_endpoint_auth_method: 'client_secret_basic',
    is_dynamic_client: true,
  };
  const body = { provider_id: 'linear', name: 'Linear', mcp_server_url: 'https://mcp.linear.example/mcp' };

  test('with a discovery hook: 200 with the discovered endpoints; the registered secret is only hashed', async () => {
    const seen: string[] = [];
    const api = await open({ discover: async (url) => (seen.push(url), discovered) });
    const answer = await api.call('POST', '/v2/auth/providers/mcp-discover', body);
    expect(answer.status).toBe(200);
    expect(seen).toEqual(['https://mcp.linear.example/mcp']);
    expect(answer.body).toMatchObject({
      provider_id: 'linear',
      name: 'Linear',
      mcp_server_url: body.mcp_server_url,
      auth_url: discovered.auth_url,
      token_url: discovered.token_url,
      client_id: 'dyn-client-1',
      uses_pkce: true,
      is_dynamic_client: true,
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(answer.body).not.toHaveProperty('client_secret');
    expect(running!.store.provider(ORG, 'linear')!.client_secret_sha256).toBe(sha256Hex('registered-secret'));
    const again = await api.call('POST', '/v2/auth/providers/mcp-discover', body);
    expect(again.status).toBe(409);
    expect(seen).toHaveLength(1);
  });

  test('a failing hook answers 422: its message, or its own detail items', async () => {
    let mode: 'message' | 'detail' | 'no-client' = 'message';
    const api = await open({
      discover: async () => {
        if (mode === 'no-client') return { ...discovered, client_id: null };
        const error = new Error(
          'authorization-server-metadata: https://auth.example/.well-known/oauth-authorization-server answered 404',
        );
        if (mode === 'detail')
          Object.assign(error, {
            detail: [
              { loc: ['body', 'mcp_server_url'], msg: 'step one failed', type: 'discovery.protected-resource' },
              { loc: ['body', 'mcp_server_url'], msg: 'step two failed', type: 'discovery.as-metadata' },
            ],
          });
        throw error;
      },
    });
    const plain = await api.call('POST', '/v2/auth/providers/mcp-discover', body);
    expect(plain.status).toBe(422);
    expect(plain.body.detail).toEqual([
      {
        loc: ['body', 'mcp_server_url'],
        msg: expect.stringMatching(/^MCP discovery failed: authorization-server-metadata: .* answered 404$/),
        type: 'value_error',
      },
    ]);
    mode = 'detail';
    const detailed = await api.call('POST', '/v2/auth/providers/mcp-discover', body);
    expect(detailed.body.detail.map((d: { type: string }) => d.type)).toEqual([
      'discovery.protected-resource',
      'discovery.as-metadata',
    ]);
    mode = 'no-client';
    const noClient = await api.call('POST', '/v2/auth/providers/mcp-discover', body);
    expect(noClient.status).toBe(422);
    expect(noClient.body.detail[0].msg).toMatch(/registered no client/);
    expect(running!.store.provider(ORG, 'linear')).toBeUndefined();
  });

  test('two concurrent discoveries of one provider_id: one 200, one 409', async () => {
    const api = await open({ discover: () => new Promise((resolve) => setTimeout(() => resolve(discovered), 50)) });
    const answers = await Promise.all([
      api.call('POST', '/v2/auth/providers/mcp-discover', body),
      api.call('POST', '/v2/auth/providers/mcp-discover', body),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
  });

  test('422 for invalid bodies and URLs', async () => {
    const api = await open({ discover: async () => discovered });
    const missing = await api.call('POST', '/v2/auth/providers/mcp-discover', { provider_id: 'x', name: 'X' });
    expect(missing.body.detail).toEqual([{ loc: ['body', 'mcp_server_url'], msg: 'Field required', type: 'missing' }]);
    const notUrl = await api.call('POST', '/v2/auth/providers/mcp-discover', {
      ...body,
      mcp_server_url: 'mcp.linear.example',
    });
    expect(notUrl.status).toBe(422);
    expect(notUrl.body.detail[0].type).toBe('url_parsing');
    const ftp = await api.call('POST', '/v2/auth/providers/mcp-discover', {
      ...body,
      mcp_server_url: 'ftp://mcp.example/x',
    });
    expect(ftp.body.detail[0].type).toBe('url_parsing');
  });

  test('without a hook: a clear 422 for an unreachable server, refused addresses, and a reachable one', async () => {
    const up = await loopbackServer(200);
    const down = await loopbackServer(200);
    await new Promise((r) => servers.pop()!.close(r));
    const api = await open({ allowLocalDiscovery: true });
    const refused = await api.call('POST', '/v2/auth/providers/mcp-discover', { ...body, mcp_server_url: down });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toEqual([
      {
        loc: ['body', 'mcp_server_url'],
        msg: expect.stringMatching(/^MCP discovery failed: MCP server unreachable: ECONNREFUSED/),
        type: 'value_error',
      },
    ]);
    const reachable = await api.call('POST', '/v2/auth/providers/mcp-discover', { ...body, mcp_server_url: up });
    expect(reachable.status).toBe(422);
    expect(reachable.body.detail[0].msg).toMatch(
      /answered HTTP 200, but MCP OAuth discovery is not available in this emulator build/,
    );
    const metadata = await api.call('POST', '/v2/auth/providers/mcp-discover', {
      ...body,
      mcp_server_url: 'http://169.254.169.254/latest',
    });
    expect(metadata.body.detail[0].msg).toMatch(/link-local address, which is never fetched/);
    await running!.close();
    running = undefined;
    const strict = await open();
    const http = await strict.call('POST', '/v2/auth/providers/mcp-discover', { ...body, mcp_server_url: up });
    expect(http.body.detail[0].msg).toMatch(/only https URLs are fetched/);
    const loopback = await strict.call('POST', '/v2/auth/providers/mcp-discover', {
      ...body,
      mcp_server_url: 'https://127.0.0.1:1/mcp',
    });
    expect(loopback.body.detail[0].msg).toMatch(/loopback or private address; allow it with --allow-local-discovery/);
    const named = await strict.call('POST', '/v2/auth/providers/mcp-discover', {
      ...body,
      mcp_server_url: 'https://localhost:1/mcp',
    });
    expect(named.body.detail[0].msg).toMatch(/localhost resolves to .* loopback or private address/);
  });

  test('the fallback probe gives up after its timeout', async () => {
    const hanging = await loopbackServer(200, true);
    const probe = probeOnlyDiscovery({ allowLocal: true, timeoutMs: 100 });
    await expect(probe(hanging)).rejects.toThrow(/MCP server unreachable: no answer within 100 ms/);
  });

  test('address classes', () => {
    expect(refusedAddress('8.8.8.8', false)).toBeNull();
    expect(refusedAddress('10.1.2.3', false)).toMatch(/private/);
    expect(refusedAddress('10.1.2.3', true)).toBeNull();
    expect(refusedAddress('169.254.169.254', true)).toMatch(/never fetched/);
    expect(refusedAddress('fe80::1', true)).toMatch(/never fetched/);
    expect(refusedAddress('::ffff:127.0.0.1', false)).toMatch(/loopback/);
    expect(refusedAddress('::1', false)).toMatch(/loopback/);
    expect(refusedAddress('2606:4700::1111', false)).toBeNull();
  });
});

describe('code-host integrations', () => {
  test('GET .../install lists the integrations; GET .../{id}/repos their repositories', async () => {
    const api = await open();
    const installs = await api.call('GET', '/v1/integrations/forge/codehost/install');
    expect(installs.status).toBe(200);
    expect(installs.body).toEqual([
      { id: ACME, installation_id: 101, name: 'acme' },
      { id: LABS, installation_id: 202, name: 'acme-labs' },
    ]);
    const repos = await api.call('GET', `/v1/integrations/forge/codehost/${ACME}/repos`);
    expect(repos.status).toBe(200);
    expect(repos.body).toEqual([
      {
        host_integration_id: ACME,
        id: 1,
        name: 'support-agent',
        owner: 'acme',
        url: 'https://codehost.example.com/acme/support-agent',
        default_branch: 'main',
      },
      {
        host_integration_id: ACME,
        id: 2,
        name: 'billing-bot',
        owner: 'acme',
        url: 'https://codehost.example.com/acme/billing-bot',
        default_branch: 'trunk',
      },
    ]);
    const labs = await api.call('GET', `/v1/integrations/forge/codehost/${LABS.toUpperCase()}/repos`);
    expect(labs.body[0]).toMatchObject({ name: 'research-agent', owner: 'acme-labs', default_branch: 'main' });
  });

  test('404 for an unknown integration, 422 for a malformed id', async () => {
    const api = await open();
    const unknown = await api.call('GET', '/v1/integrations/forge/codehost/cccccccc-cccc-4ccc-8ccc-cccccccccccc/repos');
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toMatch(/Integration .* not found/);
    const malformed = await api.call('GET', '/v1/integrations/forge/codehost/acme/repos');
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail).toEqual([
      { loc: ['path', 'integration_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' },
    ]);
  });
});
