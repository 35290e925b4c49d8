// The live side's listings against a fake client: deployments of the name prefix, page by page, stopped on request; providers listed only when a manifest or prune needs them.
import { describe, expect, it } from 'vitest';
import type { DesiredResource, LiveDeployment, LiveProviders } from '../core/model.js';
import { Deployment } from '../core/wire/schema.js';
import { listLiveDeployments, listLiveProviders } from './live.js';

/** A deployment as the wire schema decodes it from an answer. */
function deployment(name: string): LiveDeployment {
  return Deployment.parse({
    id: `id-${name}`,
    tenant_id: 'tenant-1',
    name,
    source: 'codehost',
    source_config: { repo_url: 'https://codehost.example.com/acme/web', build_on_push: true },
    source_revision_config: { repo_ref: 'main', repo_commit_sha: 'b0d4e445' },
    secrets: [{ name: 'OPENAI_API_KEY', value: 'v' }],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-02T00:00:00Z',
    status: 'READY',
    latest_revision_id: 'r-1',
    active_revision_id: 'r-1',
    image_version: '0.2.1',
    display_name: name,
  });
}

/** A client listing `pages` of deployments (each query recorded) and a provider list (each call counted). */
function fakeClient(pages: string[][]) {
  const client = {
    queries: [] as Array<{ name_contains?: string }>,
    providerLists: 0,
    async *listDeploymentPages(query: { name_contains?: string }) {
      client.queries.push(query);
      for (const page of pages) yield page.map(deployment);
    },
    async listProviders(): Promise<LiveProviders> {
      client.providerLists += 1;
      return { readable: true, providers: [] };
    },
  };
  return client;
}

const provider = { kind: 'OAuthProvider', name: 'slack' } as DesiredResource;
const web = { kind: 'Deployment', name: 'web' } as DesiredResource;

describe('listLiveDeployments', () => {
  it('lists every page; under a name prefix asks name_contains and keeps only names that start with it', async () => {
    const client = fakeClient([['team-a-web', 'other-team-a'], ['team-a-api']]);
    const seen: number[] = [];
    expect((await listLiveDeployments(client)).map((d) => d.name)).toEqual([
      'team-a-web',
      'other-team-a',
      'team-a-api',
    ]);
    expect(
      (await listLiveDeployments(client, { namePrefix: 'team-a', onProgress: (n) => seen.push(n) })).map((d) => d.name),
    ).toEqual(['team-a-web', 'team-a-api']);
    expect(client.queries).toEqual([{}, { name_contains: 'team-a' }]);
    expect(seen).toEqual([1, 2]);
  });

  it('keeps what a plan reads: no tenant, creation time, image version, commit or unknown field', async () => {
    const [listed] = await listLiveDeployments(fakeClient([['web']]));
    expect(listed).toEqual({
      id: 'id-web',
      name: 'web',
      source: 'codehost',
      status: 'READY',
      updated_at: '2026-01-02T00:00:00Z',
      source_config: { repo_url: 'https://codehost.example.com/acme/web', build_on_push: true },
      source_revision_config: { repo_ref: 'main' },
      secrets: [{ name: 'OPENAI_API_KEY', value: 'v' }],
      latest_revision_id: 'r-1',
      active_revision_id: 'r-1',
    });
  });

  it('stops after the page in hand once asked to', async () => {
    const stop = { requested: false };
    const client = fakeClient([['a'], ['b'], ['c']]);
    const listed = await listLiveDeployments(client, { stop, onProgress: () => (stop.requested = true) });
    expect(listed.map((d) => d.name)).toEqual(['a']);
  });
});

describe('listLiveProviders', () => {
  const owned = (keys: string[]) => () => Promise.resolve(keys);

  it('lists when a manifest declares a provider, or prune is on and converge owns one; otherwise asks nothing', async () => {
    const client = fakeClient([]);
    expect(await listLiveProviders(client, [web, provider], false, owned([]))).toEqual({
      readable: true,
      providers: [],
    });
    expect(client.providerLists).toBe(1);
    expect(await listLiveProviders(client, [web], true, owned(['Deployment/web', 'OAuthProvider/gone']))).toEqual({
      readable: true,
      providers: [],
    });
    expect(client.providerLists).toBe(2);
    expect(await listLiveProviders(client, [web], false, owned(['OAuthProvider/gone']))).toBeUndefined();
    expect(await listLiveProviders(client, [web], true, owned(['Deployment/web']))).toBeUndefined();
    expect(client.providerLists).toBe(2);
  });

  it('reads the applied records only when it needs them: an unreadable applied state is not asked when a manifest declares a provider', async () => {
    const client = fakeClient([]);
    let asked = 0;
    const unreadable = () => ((asked += 1), Promise.reject(new Error('Redis unreachable')));
    expect(await listLiveProviders(client, [provider], true, unreadable)).toEqual({ readable: true, providers: [] });
    expect(await listLiveProviders(client, [web], false, unreadable)).toBeUndefined();
    expect(asked).toBe(0);
    await expect(listLiveProviders(client, [web], true, unreadable)).rejects.toThrow('Redis unreachable');
    expect(asked).toBe(1);
  });
});
