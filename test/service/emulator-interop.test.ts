// ServiceClient against the project's emulator on loopback: every endpoint, typed errors, and paging through injected faults.
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient, type RequestInfo } from '../../src/service/client.js';
import { ServiceError } from '../../src/service/errors.js';
import { resolveRepositories } from '../../src/service/repositories.js';
import { startEmulator, type EmulatorOptions } from '../../src/emulator/server.js';
import { prng } from '../helpers/prng.js';

const API_KEY = 'ck-interop-5e6f7a8b';
const INTEGRATION = 'eeeeeeee-0000-4000-8000-000000000001';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function emulatorClient(
  options: EmulatorOptions,
  attempts = 3,
): Promise<{ client: ServiceClient; infos: RequestInfo[] }> {
  const emulator = await startEmulator({ apiKey: API_KEY, buildMs: 0, ...options });
  const infos: RequestInfo[] = [];
  const client = new ServiceClient({
    baseUrl: emulator.url,
    apiKey: API_KEY,
    retry: { attempts, baseDelayMs: 1, maxDelayMs: 5 },
    onRequest: (info) => infos.push(info),
  });
  cleanups.push(
    () => emulator.close(),
    () => client.close(),
  );
  return { client, infos };
}

describe('ServiceClient against the emulator', () => {
  it('creates, patches, lists, and registers providers; errors come back typed and readable', async () => {
    const { client } = await emulatorClient({
      seed: {
        integrations: [
          {
            id: INTEGRATION,
            installation_id: 3,
            name: 'acme',
            repositories: [{ id: 1, name: 'agent', default_branch: 'trunk' }],
          },
        ],
      },
    });
    const created = await client.createDeployment({
      name: 'agent',
      source: 'codehost',
      source_config: { integration_id: INTEGRATION, repo_url: 'https://codehost.example.com/acme/agent' },
      source_revision_config: { repo_ref: 'trunk', graph_config_path: 'langgraph.json' },
      secrets: [{ name: 'TOKEN', value: 'tok-value-1' }],
    });
    expect(created.name).toBe('agent');
    const patched = await client.patchDeployment(created.id, { source_config: { build_on_push: true } });
    expect(patched.source_config.build_on_push).toBe(true);

    const duplicate = await client
      .createDeployment({
        name: 'agent',
        source: 'internal_template',
        source_config: {},
        source_revision_config: {},
        secrets: [],
      })
      .catch((e: unknown) => e);
    expect(duplicate).toBeInstanceOf(ServiceError);
    expect((duplicate as ServiceError).status).toBe(409);

    const invalid = (await client
      .createDeployment({
        name: 'Not Valid',
        source: 'internal_template',
        source_config: {},
        source_revision_config: {},
        secrets: [],
      })
      .catch((e: unknown) => e)) as ServiceError;
    expect(invalid.status).toBe(422);
    expect(invalid.detail).toMatch(/^body\.name: /);

    const provider = await client.createProvider({
      provider_id: 'slack',
      name: 'Slack',
      client_id: '123.456',
      client_secret: 'very-secret',
      auth_url: 'https://slack.com/oauth/v2/authorize',
      token_url: 'https://slack.com/api/oauth.v2.access',
    });
    expect(provider.provider_id).toBe('slack');
    expect(JSON.stringify(provider)).not.toContain('very-secret');

    const [integration] = await client.listIntegrations();
    expect(integration).toMatchObject({ id: INTEGRATION, name: 'acme' });
    const repos = await client.listRepositories(INTEGRATION);
    expect(repos.map((r) => `${r.owner}/${r.name}@${r.default_branch}`)).toEqual(['acme/agent@trunk']);
    const resolution = await resolveRepositories(client, [
      {
        kind: 'Deployment',
        name: 'agent',
        location: { file: 'a.yaml', line: 1, column: 1 },
        suspend: false,
        spec: { source: 'codehost', repository: 'acme/agent' },
      },
    ]);
    expect(resolution.resolved.get('agent')).toEqual({
      integration_id: INTEGRATION,
      repo_url: repos[0]!.url,
      default_branch: 'trunk',
    });

    const names = (await client.listDeployments({ name_contains: 'age' })).map((d) => d.name);
    expect(names).toEqual(['agent']);
  });

  it('a wrong API key is a fatal 403 with the service detail, without the key', async () => {
    const emulator = await startEmulator({ apiKey: API_KEY });
    const client = new ServiceClient({ baseUrl: emulator.url, apiKey: 'wrong-key-abcdef' });
    cleanups.push(
      () => emulator.close(),
      () => client.close(),
    );
    const error = (await client.listIntegrations().catch((e: unknown) => e)) as ServiceError;
    expect(error.code).toBe('E_SERVICE_403');
    expect(error.message).not.toContain('wrong-key-abcdef');
  });

  const LIST_FAULT_SEEDS = { jitter: 6, reset: 7, fail: 8, rateLimit: 9, lost: 10 } as const;

  it('lists 230 deployments through short pages, 503s, 429s and dropped connections without losing or repeating one', async () => {
    const deployments = Array.from({ length: 230 }, (_, i) => ({
      name: `svc-${String(i).padStart(3, '0')}`,
      source: 'internal_template' as const,
    }));
    const { client, infos } = await emulatorClient(
      {
        seed: { deployments },
        pageCap: 37,
        failRate: 0.25,
        rateLimitRate: 0.25,
        resetRate: 0.15,
        retryAfterSeconds: 0,
        randomFor: (site) => prng(LIST_FAULT_SEEDS[site]),
      },
      12,
    );
    const names = (await client.listDeployments()).map((d) => d.name);
    expect(names).toHaveLength(230);
    expect(new Set(names)).toEqual(new Set(deployments.map((d) => d.name)));
    // 7 pages of 37 or fewer plus the empty one answered 200; every other attempt was an injected fault that was retried.
    const answered = infos.filter((i) => i.status === 200);
    const faults = infos.filter((i) => i.status !== 200);
    expect(answered).toHaveLength(8);
    expect(faults.every((i) => i.status === 503 || i.status === 429 || i.status === 'network')).toBe(true);
    // One seeded stream per knob, each firing on its first draw: with four pages read ahead the requests
    // interleave differently on every run, yet every run meets each kind at least once.
    expect(new Set(faults.map((i) => i.status))).toEqual(new Set([503, 429, 'network']));
  });
});
