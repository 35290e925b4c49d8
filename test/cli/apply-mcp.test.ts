// `converge apply` of an MCP-discovered provider, end to end: a real MCP OAuth server on loopback, the
// emulator running the real discovery on mcp-discover, BullMQ jobs on the real Redis.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emulatorDiscoveryHook } from '../../src/emulator/discovery-hook.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { startCombinedServer, type CombinedServer } from '../discovery/mcp-oauth-fixture.js';
import { runCapture } from '../helpers/cli.js';

let mcp: CombinedServer;
let emulator: RunningEmulator;
let dir: string;
const env = {
  NO_COLOR: '1',
  REDIS_URL: process.env.CONVERGE_TEST_REDIS_URL,
  CONVERGE_REDIS_PREFIX: `${process.env.CONVERGE_TEST_PREFIX}-apply-mcp`,
};

beforeAll(async () => {
  mcp = await startCombinedServer({ registration: true });
  emulator = await startEmulator({ discover: emulatorDiscoveryHook({ allowLocal: true }), allowLocalDiscovery: true });
  dir = await mkdtemp(join(tmpdir(), 'converge-apply-mcp-'));
  await writeFile(
    join(dir, 'tools.yaml'),
    `apiVersion: converge/v1\nkind: OAuthProvider\nmetadata:\n  name: tools\nspec:\n  name: Tools\n  mcp_server_url: ${mcp.mcpUrl}\n`,
  );
});
afterAll(async () => {
  await emulator.close();
  await mcp.close();
  await rm(dir, { recursive: true, force: true });
});

describe('converge apply with an MCP provider', () => {
  it('creates it once through mcp-discover with the discovered endpoints, then writes nothing', async () => {
    const args = ['apply', dir, '--api-url', emulator.url, '--allow-local-discovery', '--backoff', '50ms'];
    const first = await runCapture(args, env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/done\s+OAuthProvider\/tools: created/);

    const discovers = emulator.requestLog.filter(
      (e) => e.method === 'POST' && e.path === '/v2/auth/providers/mcp-discover',
    );
    expect(discovers.map((e) => e.status)).toEqual([200]);
    const stored = emulator.store.providers().find((p) => p.provider_id === 'tools');
    expect(stored).toMatchObject({
      auth_url: `${mcp.origin}/authorize`,
      token_url: `${mcp.origin}/token`,
      mcp_server_url: mcp.mcpUrl,
      uses_pkce: true,
      is_dynamic_client: true,
    });
    const clients = (mcp.demo.clientsStore as unknown as { clients: Map<string, unknown> }).clients;
    expect(clients.size).toBe(1);

    emulator.resetLog();
    const second = await runCapture(args, env);
    expect(second.code).toBe(0);
    expect(emulator.requestLog.filter((e) => e.method !== 'GET')).toEqual([]);
    expect(clients.size).toBe(1);
  });
});
