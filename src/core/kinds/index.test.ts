// The table of kinds: each kind is found, its job payload holds no secret value and turns back, its fingerprint holds none.
import { describe, expect, it } from 'vitest';
import type {
  DeploymentResource,
  DesiredResource,
  LiveDeployment,
  LiveProvider,
  ProviderResource,
  ResourceKind,
  SecretSource,
} from '../model.js';
import {
  allKinds,
  isKind,
  JOB_OPERATIONS,
  JobResource,
  KIND_NAMES,
  kindOf,
  kinds,
  liveView,
  manifestHooksOf,
  type JobSecretSource,
} from './index.js';

const LITERAL = 'planted-literal-value-3c9e';
const CLIENT_LITERAL = 'planted-client-literal-8b21';

function deployment(): DeploymentResource {
  return {
    kind: 'Deployment',
    name: 'web',
    location: { file: 'apps/web.yaml', line: 1, column: 1 },
    suspend: false,
    spec: {
      source: 'external_docker',
      source_revision_config: { image_uri: 'docker.io/acme/web:1' },
      secrets: [
        { name: 'FROM_ENV', from: { env: 'WEB_TOKEN' } },
        { name: 'FROM_FILE', from: { file: '/run/secrets/web' } },
        { name: 'LITERAL', from: { value: LITERAL } },
      ],
    },
    secretLocations: { LITERAL: { file: 'apps/web.yaml', line: 12, column: 14 } },
  };
}

function provider(): ProviderResource {
  return {
    kind: 'OAuthProvider',
    name: 'slack',
    location: { file: 'providers/slack.yaml', line: 1, column: 1 },
    suspend: false,
    spec: {
      mode: 'manual',
      name: 'Slack',
      client_id: 'c',
      auth_url: 'https://a.example/a',
      token_url: 'https://a.example/t',
      client_secret: { value: CLIENT_LITERAL },
    },
  };
}

const EXAMPLES: Record<ResourceKind, () => DesiredResource> = { Deployment: deployment, OAuthProvider: provider };

/** Maps a job's secret source back as a worker holding the literal values would. */
function fromJob(literals: Record<string, string>) {
  return (source: JobSecretSource, name: string): SecretSource => {
    if ('env' in source) return { env: source.env };
    if ('file' in source) return { file: source.file };
    return { value: literals[name]! };
  };
}

describe('the table of kinds', () => {
  it('finds each kind under its own name, with operations of its own', () => {
    expect(Object.keys(kinds).sort()).toEqual(['Deployment', 'OAuthProvider']);
    for (const kind of Object.keys(kinds) as ResourceKind[]) expect(kindOf(kind).kind).toBe(kind);
    expect(kindOf('Deployment').listed).toBe(true);
    expect(kindOf('OAuthProvider').listed).toBe(false);
    const operations = Object.values(kinds).flatMap((module) => [...module.operations]);
    expect(new Set(operations).size).toBe(operations.length);
    expect([...JOB_OPERATIONS].sort()).toEqual(operations.sort());
    expect(kindOf('Deployment').operation(deployment(), 'create')).toBe('create-deployment');
    expect(kindOf('Deployment').operation(deployment(), 'update')).toBe('patch-deployment');
    expect(kindOf('OAuthProvider').operation(provider(), 'create')).toBe('create-provider');
  });

  it.each(Object.keys(EXAMPLES) as ResourceKind[])(
    '%s: the job payload holds pointers, never a value, and turns back into the resource',
    (kind) => {
      const resource = EXAMPLES[kind]();
      const module = kindOf(kind);
      const payload = JobResource.parse(module.jobPayload(resource));
      const text = JSON.stringify(payload);
      expect(text).not.toContain(LITERAL);
      expect(text).not.toContain(CLIENT_LITERAL);
      const literals = Object.fromEntries(
        module.secretSources(resource).flatMap(({ name, from }) => ('value' in from ? [[name, from.value]] : [])),
      );
      expect(Object.keys(literals)).toHaveLength(1);
      expect(module.fromJobPayload(payload, fromJob(literals))).toEqual(resource);
    },
  );

  it('keeps the position of a literal in the pointer, and the schema refuses a value in place of a source', () => {
    const payload = JobResource.parse(kindOf('Deployment').jobPayload(deployment()));
    expect(payload.kind === 'Deployment' && payload.spec.secrets?.map((s) => s.from)).toEqual([
      { env: 'WEB_TOKEN' },
      { file: '/run/secrets/web' },
      { manifest: { file: 'apps/web.yaml', line: 12, column: 14 } },
    ]);
    for (const resource of [deployment(), provider()]) {
      expect(() => JobResource.parse(resource)).toThrow();
    }
  });

  it('names every declared secret source per kind', () => {
    expect(
      kindOf('Deployment')
        .secretSources(deployment())
        .map((s) => s.name),
    ).toEqual(['FROM_ENV', 'FROM_FILE', 'LITERAL']);
    expect(kindOf('OAuthProvider').secretSources(provider())).toEqual([
      { name: 'client_secret', from: { value: CLIENT_LITERAL } },
    ]);
    const mcp: ProviderResource = {
      ...provider(),
      spec: { mode: 'mcp', name: 'Linear', mcp_server_url: 'https://mcp.example/mcp' },
    };
    expect(kindOf('OAuthProvider').secretSources(mcp)).toEqual([]);
  });

  it.each(Object.keys(EXAMPLES) as ResourceKind[])(
    '%s: the fingerprint ignores where the manifest is, follows the secret hashes, holds no value',
    (kind) => {
      const resource = EXAMPLES[kind]();
      const module = kindOf(kind);
      const hashes = { LITERAL: 'a'.repeat(64) };
      const fingerprint = module.fingerprint(resource, hashes);
      expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(module.fingerprint({ ...resource, location: { file: 'moved.yaml', line: 9, column: 1 } }, hashes)).toBe(
        fingerprint,
      );
      expect(module.fingerprint(resource, { LITERAL: 'b'.repeat(64) })).not.toBe(fingerprint);
      // a literal value changes only through its hash: the fingerprint does not read the value itself
      const other = EXAMPLES[kind]();
      const changed = JSON.parse(
        JSON.stringify(other).replaceAll(LITERAL, 'other').replaceAll(CLIENT_LITERAL, 'other'),
      ) as DesiredResource;
      expect(module.fingerprint(changed, hashes)).toBe(fingerprint);
    },
  );
});

function liveDeployment(name: string, extra: Partial<LiveDeployment> = {}): LiveDeployment {
  return {
    id: `id-${name}`,
    name,
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    secrets: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-02T00:00:00Z',
    status: 'READY',
    ...extra,
  };
}

function liveProvider(providerId: string): LiveProvider {
  return {
    id: `p-${providerId}`,
    organization_id: 'o-1',
    provider_id: providerId,
    name: providerId,
    client_id: 'c',
    auth_url: 'https://a.example',
    token_url: 'https://t.example',
    uses_pkce: true,
    code_challenge_method: 'S256',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-03T00:00:00Z',
  };
}

describe("each kind's hooks in the manifest format", () => {
  it('finds the hooks of a kind by the name a document writes, and none for another word (not even an Object method)', () => {
    for (const kind of KIND_NAMES) expect(manifestHooksOf(kind)).toBe(kinds[kind].manifest);
    for (const word of ['Deploy', 'deployment', 'constructor', 'toString', '__proto__', undefined, 3]) {
      expect(manifestHooksOf(word), String(word)).toBeUndefined();
      expect(isKind(word)).toBe(false);
    }
    expect(allKinds().map((k) => k.kind)).toEqual(KIND_NAMES);
  });

  it('names the literal secret fields of each kind, at their paths, without the value', () => {
    const deployment = {
      kind: 'Deployment',
      spec: {
        secrets: [
          { name: 'A', value: LITERAL },
          { name: 'B', valueFrom: { env: 'B' } },
          { name: 'C', value: LITERAL, valueFrom: { env: 'C' } },
        ],
      },
    };
    const found = manifestHooksOf('Deployment')!.literalSecrets(deployment);
    expect(found.map((f) => f.path)).toEqual([['spec', 'secrets', 0, 'value']]);
    const provider = { kind: 'OAuthProvider', spec: { client_secret: CLIENT_LITERAL } };
    expect(
      manifestHooksOf('OAuthProvider')!
        .literalSecrets(provider)
        .map((f) => f.path),
    ).toEqual([['spec', 'client_secret']]);
    expect(JSON.stringify([found, manifestHooksOf('OAuthProvider')!.literalSecrets(provider)])).not.toMatch(/planted/);
    // Each kind reads only its own fields: a provider's hooks see no deployment secrets, and the other way round.
    expect(manifestHooksOf('OAuthProvider')!.literalSecrets(deployment)).toEqual([]);
    expect(manifestHooksOf('Deployment')!.literalSecrets(provider)).toEqual([]);
  });

  it('hints where a misplaced key belongs, for the kind that knows', () => {
    expect(manifestHooksOf('Deployment')!.keyHint('spec', 'max_scale')).toBe(
      'it belongs in spec.source_config.resource_spec',
    );
    expect(manifestHooksOf('Deployment')!.keyHint('spec', 'name')).toBe("a deployment's name is metadata.name");
    expect(manifestHooksOf('Deployment')!.keyHint('spec.source_config.resource_spec', 'max_scale')).toBeUndefined();
    expect(manifestHooksOf('OAuthProvider')!.keyHint('spec', 'max_scale')).toBeUndefined();
  });
});

describe("each kind's live side", () => {
  const listing = [
    liveDeployment('web', { latest_revision_id: 'r2', active_revision_id: 'r1' }),
    liveDeployment('old'),
  ];
  const providers = { readable: true as const, providers: [liveProvider('slack'), liveProvider('gone')] };

  it('stamps the live resource of a name from its own listing', () => {
    const view = liveView({ deployments: listing, providers });
    expect(kindOf('Deployment').liveStamp('web', view)).toEqual({
      id: 'id-web',
      updated_at: '2026-01-02T00:00:00Z',
      latest_revision_id: 'r2',
      active_revision_id: 'r1',
    });
    expect(kindOf('Deployment').liveStamp('slack', view)).toBeNull();
    expect(kindOf('OAuthProvider').liveStamp('slack', view)).toEqual({
      id: 'p-slack',
      updated_at: '2026-01-03T00:00:00Z',
      latest_revision_id: null,
      active_revision_id: null,
    });
    expect(kindOf('OAuthProvider').liveStamp('web', view)).toBeNull();
    expect(kindOf('OAuthProvider').liveStamp('slack', liveView({ deployments: listing }))).toBeNull();
  });

  it("tells the diff a provider's live side only when the service listed providers", () => {
    expect(kindOf('OAuthProvider').liveContext('slack', liveView({ deployments: [], providers }))).toEqual({
      provider: { live: providers.providers[0] },
    });
    expect(kindOf('OAuthProvider').liveContext('none', liveView({ deployments: [], providers }))).toEqual({
      provider: { live: undefined },
    });
    expect(
      kindOf('OAuthProvider').liveContext(
        'slack',
        liveView({ deployments: [], providers: { readable: false, note: 'cannot list' } }),
      ),
    ).toEqual({});
    expect(kindOf('Deployment').liveContext('web', liveView({ deployments: listing, providers }))).toEqual({});
  });

  it('names as orphans the unclaimed listing entries and the listed providers no manifest declares', () => {
    const view = liveView({ deployments: listing, providers }, [listing[1]!]);
    const declared = new Set(['Deployment/web', 'OAuthProvider/slack', 'Deployment/gone']);
    expect(allKinds().flatMap((kind) => kind.orphans(view, declared))).toEqual([
      { kind: 'Deployment', name: 'old', id: 'id-old', status: 'READY', reportUnowned: true },
      { kind: 'OAuthProvider', name: 'gone', id: 'p-gone', reportUnowned: false },
    ]);
    expect(kindOf('OAuthProvider').orphans(liveView({ deployments: listing }), new Set())).toEqual([]);
  });

  it('exports each kind from its own listing, saying what it skipped', () => {
    const source = {
      deployments: [liveDeployment('web'), liveDeployment('pr-1', { is_preview: true })],
      catalog: [],
      providers: { readable: false as const, note: 'the service cannot list providers' },
    };
    const deployments = kindOf('Deployment').exportLive(source);
    expect(deployments.docs.map((d) => `${d.kind}/${d.name}`)).toEqual(['Deployment/web']);
    expect(deployments.skipped).toEqual(['Deployment/pr-1: a preview deployment (converge never writes to one)']);
    expect(kindOf('OAuthProvider').exportLive(source)).toEqual({
      docs: [],
      skipped: ['OAuth providers: the service cannot list providers'],
    });
    expect(
      kindOf('OAuthProvider')
        .exportLive({ ...source, providers })
        .docs.map((d) => `${d.kind}/${d.name}`),
    ).toEqual(['OAuthProvider/slack', 'OAuthProvider/gone']);
  });
});
