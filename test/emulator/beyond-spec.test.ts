// The endpoints the real service has beyond the spec, through real HTTP: GET of one deployment, providers list/get/PATCH/DELETE, and --spec-only.
import { afterEach, describe, expect, test } from 'vitest';
import { sha256Hex } from '../../src/emulator/records.js';
import type { EmulatorOptions, RunningEmulator } from '../../src/emulator/server.js';
import { ORG, OTHER_TENANT, baseSeed, dockerBody, start, type Client } from './helpers.js';

const OTHER_ORG_TENANT = '44444444-4444-4444-8444-444444444444';
const OTHER_ORG = '55555555-5555-4555-8555-555555555555';
const UNKNOWN = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
let running: RunningEmulator | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function open(options: EmulatorOptions = {}): Promise<Client> {
  const seed = baseSeed();
  seed.tenants!.push({ id: OTHER_ORG_TENANT, name: 'partner', organization_id: OTHER_ORG });
  seed.providers = [
    {
      provider_id: 'entra',
      name: 'Entra',
      client_id: 'entra-client',
      client_secret: 'entra-secret',
      auth_url: 'https://login.example/authorize',
      token_url: 'https://login.example/token',
      provider_type: 'microsoft',
    },
    {
      provider_id: 'partner-sso',
      organization_id: OTHER_ORG,
      name: 'Partner',
      client_id: 'p',
      auth_url: 'https://p/a',
      token_url: 'https://p/t',
    },
  ];
  const { emulator, api } = await start({ seed, ...options });
  running = emulator;
  return api;
}

describe('GET /v2/deployments/{deployment_id}', () => {
  test('200 with the Deployment; 404 in the service shape for unknown ids and other tenants; 422 for malformed ids', async () => {
    const api = await open();
    const created = await api.call('POST', '/v2/deployments', dockerBody('one'));
    const read = await api.call('GET', `/v2/deployments/${created.body.id.toUpperCase()}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    expect(read.body).toEqual(
      (await api.call('GET', `/v2/deployments?deployment_ids=${created.body.id}`)).body.resources[0],
    );
    expect(await api.call('GET', `/v2/deployments/${UNKNOWN}`)).toMatchObject({
      status: 404,
      body: { detail: `Deployment ID ${UNKNOWN} not found.` },
    });
    expect(
      (await api.call('GET', `/v2/deployments/${created.body.id}`, undefined, { 'x-tenant-id': OTHER_TENANT })).status,
    ).toBe(404);
    const malformed = await api.call('GET', '/v2/deployments/nope');
    expect(malformed.body.detail).toEqual([
      { loc: ['path', 'deployment_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' },
    ]);
    expect(running!.requestLog.at(-1)!.route).toBe('/v2/deployments/{deployment_id}');
  });
});

describe('providers beyond the spec', () => {
  test('GET /v2/auth/providers lists the organization of the tenant only, never a client secret', async () => {
    const api = await open();
    await api.call('POST', '/v2/auth/providers', {
      provider_id: 'slack',
      name: 'Slack',
      client_id: 'c',
      client_secret: 'slack-secret',
      auth_url: 'https://a',
      token_url: 'https://t',
    });
    const list = await api.call('GET', '/v2/auth/providers');
    expect(list.status).toBe(200);
    expect(list.body.map((p: { provider_id: string }) => p.provider_id)).toEqual(['entra', 'slack']);
    expect(list.body[0]).toMatchObject({
      organization_id: ORG,
      name: 'Entra',
      client_id: 'entra-client',
      provider_type: 'microsoft',
      uses_pkce: false,
      code_challenge_method: 'S256',
    });
    expect(JSON.stringify(list.body)).not.toMatch(/"client_secret"|entra-secret|slack-secret/);
    const partner = await api.call('GET', '/v2/auth/providers', undefined, { 'x-tenant-id': OTHER_ORG_TENANT });
    expect(partner.body.map((p: { provider_id: string }) => p.provider_id)).toEqual(['partner-sso']);
  });

  test('GET /v2/auth/providers/{provider_id}: 200 or 404', async () => {
    const api = await open();
    const one = await api.call('GET', '/v2/auth/providers/entra');
    expect(one.status).toBe(200);
    expect(one.body).toEqual((await api.call('GET', '/v2/auth/providers')).body[0]);
    expect(await api.call('GET', '/v2/auth/providers/nobody')).toMatchObject({
      status: 404,
      body: { detail: 'OAuth provider nobody not found.' },
    });
    expect((await api.call('GET', '/v2/auth/providers/partner-sso')).status).toBe(404);
  });

  test('PATCH /v2/auth/providers/{provider_id} updates the seven fields, hashes client_secret, never returns it', async () => {
    let now = Date.UTC(2025, 6, 1);
    const api = await open({ clock: () => now });
    const before = (await api.call('GET', '/v2/auth/providers/entra')).body;
    now += 60_000;
    const patch = {
      name: 'Entra ID',
      client_id: 'entra-client-2',
      client_secret: 'rotated-secret',
      auth_url: 'https://login.example/v2/authorize',
      token_url: 'https://login.example/v2/token',
      uses_pkce: true,
      code_challenge_method: 'plain',
    };
    const answer = await api.call('PATCH', '/v2/auth/providers/entra', patch);
    expect(answer.status).toBe(200);
    const { client_secret: _secret, ...shown } = patch;
    expect(answer.body).toEqual({ ...before, ...shown, updated_at: new Date(now).toISOString() });
    expect(JSON.stringify(answer.body)).not.toContain('rotated-secret');
    expect(running!.store.provider(ORG, 'entra')!.client_secret_sha256).toBe(sha256Hex('rotated-secret'));
    expect(JSON.stringify(running!.requestLog)).not.toContain('rotated-secret');
    // Absent fields are kept; code_challenge_method null means none; the same values change nothing.
    now += 60_000;
    const partial = await api.call('PATCH', '/v2/auth/providers/entra', { code_challenge_method: null });
    expect(partial.body).toMatchObject({
      name: 'Entra ID',
      uses_pkce: true,
      code_challenge_method: null,
      updated_at: new Date(now).toISOString(),
    });
    now += 60_000;
    const same = await api.call('PATCH', '/v2/auth/providers/entra', { name: 'Entra ID' });
    expect(same.body.updated_at).toBe(partial.body.updated_at);
    // A field the PATCH does not take is ignored, as the service's framework does with unknown fields.
    const other = await api.call('PATCH', '/v2/auth/providers/entra', { provider_type: 'slack' });
    expect(other.status).toBe(200);
    expect(other.body.provider_type).toBe(partial.body.provider_type);
    expect(other.body.updated_at).toBe(partial.body.updated_at);
    expect((await api.call('PATCH', '/v2/auth/providers/nobody', { name: 'x' })).status).toBe(404);
  });

  test('DELETE /v2/auth/providers/{provider_id}: 204, then 404; the provider_id is free again', async () => {
    const api = await open();
    const gone = await api.call('DELETE', '/v2/auth/providers/entra');
    expect(gone.status).toBe(204);
    expect(gone.body).toBeUndefined();
    expect((await api.call('GET', '/v2/auth/providers/entra')).status).toBe(404);
    expect((await api.call('DELETE', '/v2/auth/providers/entra')).status).toBe(404);
    expect((await api.call('DELETE', '/v2/auth/providers/partner-sso')).status).toBe(404);
    const again = await api.call('POST', '/v2/auth/providers', {
      provider_id: 'entra',
      name: 'Entra',
      client_id: 'c',
      auth_url: 'https://a',
      token_url: 'https://t',
    });
    expect(again.status).toBe(200);
  });
});

describe('--spec-only', () => {
  const D = '00000000-0000-4000-8000-000000000001';
  const R = '00000000-0000-4000-8000-000000000002';
  const cases: Array<[string, string, number, string | null]> = [
    ['GET', `/v2/deployments/${D}`, 405, 'PATCH'],
    ['DELETE', `/v2/deployments/${D}`, 405, 'PATCH'],
    ['GET', `/v2/deployments/${D}/revisions`, 404, null],
    ['GET', `/v2/deployments/${D}/revisions/${R}`, 404, null],
    ['GET', '/v2/auth/providers', 405, 'POST'],
    ['GET', '/v2/auth/providers/entra', 404, null],
    ['PATCH', '/v2/auth/providers/entra', 404, null],
    ['DELETE', '/v2/auth/providers/entra', 404, null],
  ];

  test.each(cases)('%s %s answers %i as a service without it', async (method, path, status, allow) => {
    const api = await open({ specOnly: true });
    const answer = await api.call(method, path, method === 'PATCH' ? { name: 'x' } : undefined);
    expect(answer.status).toBe(status);
    expect(answer.body).toEqual({ detail: status === 404 ? 'Not Found' : 'Method Not Allowed' });
    expect(answer.headers.get('allow')).toBe(allow);
    // Nothing changed.
    expect(running!.store.provider(ORG, 'entra')).toBeDefined();
  });

  test('the same requests reach their endpoints without it', async () => {
    const api = await open();
    const d = (await api.call('POST', '/v2/deployments', dockerBody('here'))).body;
    const statuses = [];
    for (const [method, path] of [
      ['GET', `/v2/deployments/${d.id}`],
      ['GET', `/v2/deployments/${d.id}/revisions`],
      ['GET', `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`],
      ['GET', '/v2/auth/providers'],
      ['GET', '/v2/auth/providers/entra'],
      ['PATCH', '/v2/auth/providers/entra'],
      ['DELETE', '/v2/auth/providers/entra'],
      ['DELETE', `/v2/deployments/${d.id}`],
    ] as const) {
      statuses.push((await api.call(method, path, method === 'PATCH' ? { name: 'x' } : undefined)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 204, 204]);
  });

  test('the spec endpoints stay: create, patch, list, providers create and discovery, integrations', async () => {
    const api = await open({ specOnly: true });
    const d = await api.call('POST', '/v2/deployments', dockerBody('kept'));
    expect(d.status).toBe(201);
    expect(
      (await api.call('PATCH', `/v2/deployments/${d.body.id}`, { source_config: { custom_url: 'https://x' } })).status,
    ).toBe(200);
    expect((await api.call('GET', '/v2/deployments')).body.resources).toHaveLength(1);
    expect(
      (
        await api.call('POST', '/v2/auth/providers', {
          provider_id: 'slack',
          name: 'S',
          client_id: 'c',
          auth_url: 'https://a',
          token_url: 'https://t',
        })
      ).status,
    ).toBe(200);
    expect((await api.call('GET', '/v1/integrations/forge/codehost/install')).status).toBe(200);
  });
});
