// Repository resolution against a real code-host listing server on loopback.
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/service/client.js';
import { ServiceError } from '../../src/service/errors.js';
import { listVisibleRepositories, resolveRepositories } from '../../src/service/repositories.js';
import type { DeploymentResource, DeploymentSpec } from '../../src/core/model.js';
import { json, startServer, type ScriptedServer } from './scripted-server.js';

interface FakeIntegration {
  id: string;
  name: string;
  repos: Array<{ owner: string; name: string; default_branch?: string }>;
}

const ACME = 'aaaaaaaa-0000-4000-8000-000000000001';
const ACME_EU = 'aaaaaaaa-0000-4000-8000-000000000002';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A service that lists `integrations` and their repositories, answering repo listings after `delayMs`. */
async function codeHost(
  integrations: FakeIntegration[],
  delayMs = 0,
): Promise<{ server: ScriptedServer; client: ServiceClient }> {
  const server = await startServer(async (request, response) => {
    if (request.url.pathname === '/v1/integrations/forge/codehost/install') {
      return json(
        response,
        200,
        integrations.map((i, n) => ({ id: i.id, installation_id: 1000 + n, name: i.name })),
      );
    }
    const match = /^\/v1\/integrations\/forge\/codehost\/([^/]+)\/repos$/.exec(request.url.pathname);
    const integration = integrations.find((i) => i.id === match?.[1]);
    if (!integration) return json(response, 404, { detail: 'Integration not found' });
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    json(
      response,
      200,
      integration.repos.map((r, n) => ({
        host_integration_id: integration.id,
        id: n + 1,
        owner: r.owner,
        name: r.name,
        url: `https://codehost.example/${r.owner}/${r.name}`,
        default_branch: r.default_branch ?? 'main',
      })),
    );
  });
  const client = new ServiceClient({ baseUrl: server.url, retry: { attempts: 1 } });
  cleanups.push(
    () => server.close(),
    () => client.close(),
  );
  return { server, client };
}

function dep(name: string, spec: Partial<DeploymentSpec>): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: 'apps.yaml', line: 1, column: 1 },
    suspend: false,
    spec: { source: 'codehost', ...spec },
  };
}

const TWO: FakeIntegration[] = [
  {
    id: ACME,
    name: 'acme',
    repos: [
      { owner: 'acme', name: 'support-agent', default_branch: 'trunk' },
      { owner: 'shared', name: 'tools' },
    ],
  },
  {
    id: ACME_EU,
    name: 'acme-eu',
    repos: [
      { owner: 'acme-eu', name: 'billing' },
      { owner: 'shared', name: 'tools', default_branch: 'eu-main' },
    ],
  },
];

describe('resolveRepositories', () => {
  it('resolves across two integrations, case-insensitively, with one listing per integration', async () => {
    const { server, client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [
      dep('support', { repository: 'ACME/Support-Agent' }),
      dep('billing', { repository: 'acme-eu/billing' }),
      dep('plain', {}),
    ]);
    expect(Object.fromEntries(result.resolved)).toEqual({
      support: {
        integration_id: ACME,
        repo_url: 'https://codehost.example/acme/support-agent',
        default_branch: 'trunk',
      },
      billing: {
        integration_id: ACME_EU,
        repo_url: 'https://codehost.example/acme-eu/billing',
        default_branch: 'main',
      },
    });
    expect(result.errors.size).toBe(0);
    expect(server.received.map((r) => r.url.pathname).sort()).toEqual([
      '/v1/integrations/forge/codehost/aaaaaaaa-0000-4000-8000-000000000001/repos',
      '/v1/integrations/forge/codehost/aaaaaaaa-0000-4000-8000-000000000002/repos',
      '/v1/integrations/forge/codehost/install',
    ]);
  });

  it('reports a missing repository, naming the accounts searched', async () => {
    const { client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [dep('ghost', { repository: 'acme/ghost' })]);
    expect(result.resolved.size).toBe(0);
    expect(result.errors.get('ghost')).toBe(
      'repository "acme/ghost" is not reachable through any code-host integration (searched "acme", "acme-eu"); check the name or install the code-host app on its owner',
    );
  });

  it('a misspelt repository gets the nearest one the service can see', async () => {
    const { client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [dep('support', { repository: 'acme/suport-agent' })]);
    expect(result.errors.get('support')).toBe(
      'repository "acme/suport-agent" is not reachable through any code-host integration (searched "acme", "acme-eu"); did you mean "acme/support-agent"? Otherwise check the name or install the code-host app on its owner',
    );
  });

  it('reports an ambiguous repository, naming both candidate accounts', async () => {
    const { client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [dep('tools', { repository: 'shared/tools' })]);
    expect(result.errors.get('tools')).toBe(
      `repository "shared/tools" is reachable through several integrations: "acme" (integration ${ACME}), "acme-eu" (integration ${ACME_EU}); set spec.integration to one of these account names`,
    );
  });

  it('spec.integration picks among several', async () => {
    const { client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [
      dep('tools-eu', { repository: 'shared/tools', integration: 'ACME-EU' }),
      dep('tools-us', { repository: 'shared/tools', integration: 'acme' }),
    ]);
    expect(result.resolved.get('tools-eu')).toEqual({
      integration_id: ACME_EU,
      repo_url: 'https://codehost.example/shared/tools',
      default_branch: 'eu-main',
    });
    expect(result.resolved.get('tools-us')).toEqual({
      integration_id: ACME,
      repo_url: 'https://codehost.example/shared/tools',
      default_branch: 'main',
    });
  });

  it('explains a spec.integration that names no account, or one that cannot reach the repository', async () => {
    const { client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [
      dep('a', { repository: 'shared/tools', integration: 'nobody' }),
      dep('b', { repository: 'acme-eu/billing', integration: 'acme' }),
    ]);
    expect(result.errors.get('a')).toBe(
      'spec.integration "nobody" names no code-host integration; the service sees "acme", "acme-eu"',
    );
    expect(result.errors.get('b')).toBe(
      'repository "acme-eu/billing" is not reachable through integration "acme"; it is reachable through "acme-eu"',
    );
  });

  it('rejects malformed names, non-codehost sources and conflicting explicit values', async () => {
    const { client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [
      dep('bad', { repository: 'just-a-name' }),
      dep('docker', { source: 'external_docker', repository: 'acme/support-agent' }),
      dep('clash', { repository: 'acme/support-agent', source_config: { repo_url: 'https://elsewhere/x' } }),
    ]);
    expect(result.errors.get('bad')).toBe('spec.repository "just-a-name" is not of the form owner/name');
    expect(result.errors.get('docker')).toBe('spec.repository applies only to source codehost, not external_docker');
    expect(result.errors.get('clash')).toMatch(
      /resolves to https:\/\/codehost\.example\/acme\/support-agent but source_config\.repo_url is https:\/\/elsewhere\/x/,
    );
  });

  it('sends no request when no deployment names a repository', async () => {
    const { server, client } = await codeHost(TWO);
    const result = await resolveRepositories(client, [dep('plain', {})]);
    expect(result.resolved.size + result.errors.size).toBe(0);
    expect(server.received).toHaveLength(0);
  });

  it('lists 30 integrations concurrently within the bound: exactly 1 + 30 requests for many deployments', async () => {
    const many: FakeIntegration[] = Array.from({ length: 30 }, (_, n) => ({
      id: `bbbbbbbb-0000-4000-8000-${String(n).padStart(12, '0')}`,
      name: `org-${n}`,
      repos: [
        { owner: `org-${n}`, name: 'app' },
        { owner: `org-${n}`, name: 'lib' },
      ],
    }));
    const { server, client } = await codeHost(many, 40);
    const deployments = many.flatMap((_, n) => [
      dep(`app-${n}`, { repository: `org-${n}/app` }),
      dep(`lib-${n}`, { repository: `org-${n}/lib` }),
    ]);
    const result = await resolveRepositories(client, deployments, { concurrency: 6 });
    expect(result.errors.size).toBe(0);
    expect(result.resolved.size).toBe(60);
    expect(result.resolved.get('lib-17')!.integration_id).toBe(many[17]!.id);
    expect(server.received).toHaveLength(31);
    expect(server.maxInFlight).toBeLessThanOrEqual(6);
    expect(server.maxInFlight).toBeGreaterThan(1);
  });

  it('a listing that fails rejects with the typed error', async () => {
    const { client } = await codeHost([
      ...TWO,
      { id: 'cccccccc-0000-4000-8000-000000000003', name: 'gone', repos: [] },
    ]);
    // Make the third integration's listing fail by pointing it at an id the server does not know.
    const failing = {
      listIntegrations: () =>
        client.listIntegrations().then((list) => list.map((i) => (i.name === 'gone' ? { ...i, id: 'unknown' } : i))),
      listRepositories: (id: string) => client.listRepositories(id),
    };
    const error = await resolveRepositories(failing, [dep('support', { repository: 'acme/support-agent' })]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).status).toBe(404);
  });
});

describe('listVisibleRepositories', () => {
  it('lists every repository of every integration, sorted by account then owner/name', async () => {
    const { client } = await codeHost(TWO);
    const rows = await listVisibleRepositories(client);
    expect(rows.map((r) => [r.account, r.full_name, r.default_branch])).toEqual([
      ['acme', 'acme/support-agent', 'trunk'],
      ['acme', 'shared/tools', 'main'],
      ['acme-eu', 'acme-eu/billing', 'main'],
      ['acme-eu', 'shared/tools', 'eu-main'],
    ]);
    expect(rows[0]).toEqual({
      account: 'acme',
      integration_id: ACME,
      installation_id: 1000,
      owner: 'acme',
      name: 'support-agent',
      full_name: 'acme/support-agent',
      default_branch: 'trunk',
      url: 'https://codehost.example/acme/support-agent',
    });
  });
});
