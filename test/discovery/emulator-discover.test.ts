// mcp-discover through the emulator with the real discovery hook, against an SDK-built MCP OAuth server.
import { afterEach, describe, expect, it } from 'vitest';
import { emulatorDiscoveryHook } from '../../src/emulator/discovery-hook.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { listen, startAuthServer, startCombinedServer, startMcpServer, type Listening } from './mcp-oauth-fixture.js';

const open: Array<Listening | RunningEmulator> = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

async function emulator(allowLocal: boolean): Promise<RunningEmulator> {
  const running = await startEmulator({
    discover: emulatorDiscoveryHook({ allowLocal }),
    allowLocalDiscovery: allowLocal,
  });
  open.push(running);
  return running;
}

async function mcpDiscover(
  emu: RunningEmulator,
  body: Record<string, unknown>,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${emu.url}/v2/auth/providers/mcp-discover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

describe('emulator mcp-discover with real discovery', () => {
  it('creates a provider from the discovered endpoints and a dynamically registered client', async () => {
    const as = await startAuthServer({ issuerPath: '/tenants/acme' });
    const rs = await startMcpServer({ authServer: as, resourceMetadata: 'well-known' });
    open.push(as, rs);
    const emu = await emulator(true);
    const answer = await mcpDiscover(emu, { provider_id: 'acme', name: 'Acme', mcp_server_url: rs.mcpUrl });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      provider_id: 'acme',
      name: 'Acme',
      mcp_server_url: rs.mcpUrl,
      auth_url: `${as.origin}/tenants/acme/authorize`,
      token_url: `${as.origin}/tenants/acme/token`,
      uses_pkce: true,
      code_challenge_method: 'S256',
      is_dynamic_client: true,
    });
    expect(answer.body).not.toHaveProperty('client_secret');
    const registered = await as.demo.clientsStore.getClient(answer.body.client_id);
    expect(registered?.client_id).toBe(answer.body.client_id);
    expect(JSON.stringify(emu.requestLog)).not.toContain(registered!.client_secret!);
  });

  it('answers 422 naming each failing step', async () => {
    const server = await startCombinedServer({ registration: false });
    const closed = await listen();
    await closed.close();
    open.push(server);
    const emu = await emulator(true);
    const noRegistration = await mcpDiscover(emu, { provider_id: 'a', name: 'A', mcp_server_url: server.mcpUrl });
    expect(noRegistration.status).toBe(422);
    expect(noRegistration.body.detail).toEqual([
      {
        loc: ['body', 'mcp_server_url'],
        msg: expect.stringMatching(
          /^client-registration: the authorization server .* offers no dynamic client registration/,
        ),
        type: 'discovery.client-registration',
      },
    ]);
    const unreachable = await mcpDiscover(emu, { provider_id: 'b', name: 'B', mcp_server_url: `${closed.origin}/mcp` });
    expect(unreachable.status).toBe(422);
    expect(unreachable.body.detail).toEqual([
      {
        loc: ['body', 'mcp_server_url'],
        msg: expect.stringContaining(
          `protected-resource-metadata: cannot reach ${closed.origin}/.well-known/oauth-protected-resource/mcp`,
        ),
        type: 'discovery.protected-resource-metadata',
      },
    ]);
    expect(unreachable.body.detail[0].msg).toContain('ECONNREFUSED');
    const html = await listen();
    open.push(html);
    html.server.on('request', (_req, res) => void res.writeHead(404, { 'content-type': 'text/html' }).end('<p>no</p>'));
    const nothing = await mcpDiscover(emu, { provider_id: 'c', name: 'C', mcp_server_url: `${html.origin}/mcp` });
    expect(nothing.status).toBe(422);
    expect(nothing.body.detail.map((item: { type: string }) => item.type)).toEqual([
      'discovery.protected-resource-metadata',
      'discovery.protected-resource-metadata',
      'discovery.protected-resource-metadata',
      'discovery.authorization-server-metadata',
    ]);
    expect(emu.store.provider(emu.store.defaultTenant.organization_id, 'c')).toBeUndefined();
  });

  it('refuses loopback without allowLocal and link-local always', async () => {
    const server = await startCombinedServer();
    open.push(server);
    const strict = await emulator(false);
    const refused = await mcpDiscover(strict, { provider_id: 'a', name: 'A', mcp_server_url: server.mcpUrl });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body.detail)).toContain('--allow-local-discovery');
    const relaxed = await emulator(true);
    const metadata = await mcpDiscover(relaxed, {
      provider_id: 'b',
      name: 'B',
      mcp_server_url: 'http://169.254.169.254/mcp',
    });
    expect(metadata.status).toBe(422);
    expect(JSON.stringify(metadata.body.detail)).toContain('never fetched');
  });
});
