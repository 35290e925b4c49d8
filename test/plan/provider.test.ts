// Table tests of diffProvider and providerDefinitionHash: spec-only (no live provider: create, noop, blocked by applied hashes), MCP previews, suspension, and the diff against a live provider.
import { describe, expect, it } from 'vitest';
import { objectHash } from '../../src/core/hash.js';
import type { DiscoveryPreview, LiveProvider, ProviderResource } from '../../src/core/model.js';
import {
  diffProvider,
  providerDefinitionHash,
  type ProviderContext,
  type ProviderDiff,
} from '../../src/core/kinds/oauth-provider/index.js';
import { SLACK_SECRET_VALUE, applied, hashOf, linearProvider, slackProvider } from './fixtures.js';

const SLACK_HASH = hashOf('slack', 'client_secret', SLACK_SECRET_VALUE, 'OAuthProvider');
const SLACK_CTX: ProviderContext = { secretHashes: { client_secret: SLACK_HASH } };
const SLACK_DEFINITION = providerDefinitionHash(slackProvider(), { client_secret: SLACK_HASH });
const LINEAR_DEFINITION = providerDefinitionHash(linearProvider(), {});
const CHANGED =
  'the service cannot update an OAuth provider; delete it in the service and remove its applied state, or rename';

const PREVIEW_OK: DiscoveryPreview = {
  ok: true,
  auth_url: 'https://auth.linear.example/oauth/authorize',
  token_url: 'https://auth.linear.example/oauth/token',
  uses_pkce: true,
  registration: true,
  issuer: 'https://auth.linear.example',
};
const PREVIEW_FAILED: DiscoveryPreview = {
  ok: false,
  step: 'authorization server metadata',
  message: 'https://auth.linear.example/.well-known/oauth-authorization-server answered 404',
};

function renamedSlack(): ProviderResource {
  const resource = slackProvider();
  return { ...resource, spec: { ...resource.spec, name: 'Slack (acme)' } };
}

function slackChange(
  action: 'create' | 'update' | 'noop' | 'blocked',
  fields: ProviderDiff['change']['fields'],
  reason: string | null,
) {
  return { kind: 'OAuthProvider' as const, name: 'slack', action, new_revision: false, fields, reason };
}

const SLACK_CREATE_FIELDS = [
  { path: 'provider_id', before: null, after: 'slack', sensitive: false },
  { path: 'name', before: null, after: 'Slack', sensitive: false },
  { path: 'client_id', before: null, after: '123.456', sensitive: false },
  { path: 'auth_url', before: null, after: 'https://slack.com/oauth/v2/authorize', sensitive: false },
  { path: 'token_url', before: null, after: 'https://slack.com/api/oauth.v2.access', sensitive: false },
  { path: 'client_secret', before: null, after: '(sensitive)', sensitive: true },
  { path: 'provider_type', before: null, after: 'slack', sensitive: false },
];

const LINEAR_BASE_FIELDS = [
  { path: 'provider_id', before: null, after: 'linear', sensitive: false },
  { path: 'name', before: null, after: 'Linear', sensitive: false },
  { path: 'mcp_server_url', before: null, after: 'https://mcp.linear.example/mcp', sensitive: false },
];

interface Case {
  name: string;
  resource: ProviderResource;
  ctx: ProviderContext;
  expected: ProviderDiff;
}

const cases: Case[] = [
  {
    name: 'manual, no applied record: create with every value sent, client_secret sensitive',
    resource: slackProvider(),
    ctx: SLACK_CTX,
    expected: {
      change: slackChange('create', SLACK_CREATE_FIELDS, null),
      request: {
        op: 'create',
        body: {
          provider_id: 'slack',
          name: 'Slack',
          client_id: '123.456',
          auth_url: 'https://slack.com/oauth/v2/authorize',
          token_url: 'https://slack.com/api/oauth.v2.access',
          provider_type: 'slack',
        },
        sendClientSecret: true,
      },
      definitionHash: SLACK_DEFINITION,
    },
  },
  {
    name: 'manual, applied definition equal: noop',
    resource: slackProvider(),
    ctx: { ...SLACK_CTX, applied: applied({ client_secret: SLACK_HASH }, SLACK_DEFINITION) },
    expected: { change: slackChange('noop', [], null), definitionHash: SLACK_DEFINITION },
  },
  {
    name: 'manual, renamed since applied: blocked (the service cannot update providers)',
    resource: renamedSlack(),
    ctx: { ...SLACK_CTX, applied: applied({ client_secret: SLACK_HASH }, SLACK_DEFINITION) },
    expected: {
      change: slackChange('blocked', [], CHANGED),
      definitionHash: providerDefinitionHash(renamedSlack(), { client_secret: SLACK_HASH }),
    },
  },
  {
    name: 'manual, client_secret value rotated since applied: blocked',
    resource: slackProvider(),
    ctx: {
      secretHashes: { client_secret: hashOf('slack', 'client_secret', 'rotated-0a9b8c', 'OAuthProvider') },
      applied: applied({ client_secret: SLACK_HASH }, SLACK_DEFINITION),
    },
    expected: {
      change: slackChange('blocked', [], CHANGED),
      definitionHash: providerDefinitionHash(slackProvider(), {
        client_secret: hashOf('slack', 'client_secret', 'rotated-0a9b8c', 'OAuthProvider'),
      }),
    },
  },
  {
    name: 'manual, client_secret unresolved: blocked with the resolver message',
    resource: slackProvider(),
    ctx: { secretHashes: {}, secretErrors: ['client_secret: environment variable SLACK_CLIENT_SECRET is not set'] },
    expected: {
      change: slackChange('blocked', [], 'client_secret: environment variable SLACK_CLIENT_SECRET is not set'),
      definitionHash: objectHash({ ...slackProvider().spec, client_secret: null }),
    },
  },
  {
    name: 'manual, client_secret unresolved without a message: the reason cites where it is written',
    resource: {
      ...slackProvider(),
      secretLocations: { client_secret: { file: 'providers/slack.yaml', line: 10, column: 3 } },
    },
    ctx: { secretHashes: {} },
    expected: {
      change: slackChange(
        'blocked',
        [],
        'client_secret (providers/slack.yaml:10:3) could not be resolved; check its valueFrom (environment variable or file)',
      ),
      definitionHash: objectHash({ ...slackProvider().spec, client_secret: null }),
    },
  },
  {
    name: 'manual, suspended: create shown with the note, no request',
    resource: slackProvider({ suspend: true }),
    ctx: SLACK_CTX,
    expected: {
      change: {
        ...slackChange('create', SLACK_CREATE_FIELDS, 'suspended by converge/suspend: shown, not applied'),
        suspended: true,
      },
      definitionHash: SLACK_DEFINITION,
    },
  },
  {
    name: 'mcp, discovery preview ok: create showing what discovery found',
    resource: linearProvider(),
    ctx: { secretHashes: {}, discovery: PREVIEW_OK },
    expected: {
      change: {
        kind: 'OAuthProvider',
        name: 'linear',
        action: 'create',
        new_revision: false,
        fields: [
          ...LINEAR_BASE_FIELDS,
          {
            path: 'discovered.auth_url',
            before: null,
            after: 'https://auth.linear.example/oauth/authorize',
            sensitive: false,
          },
          {
            path: 'discovered.token_url',
            before: null,
            after: 'https://auth.linear.example/oauth/token',
            sensitive: false,
          },
          { path: 'discovered.uses_pkce', before: null, after: true, sensitive: false },
          { path: 'discovered.registration', before: null, after: true, sensitive: false },
        ],
        reason: null,
      },
      request: {
        op: 'discover',
        body: { provider_id: 'linear', name: 'Linear', mcp_server_url: 'https://mcp.linear.example/mcp' },
      },
      definitionHash: LINEAR_DEFINITION,
    },
  },
  {
    name: 'mcp, discovery failed: blocked naming the failing step',
    resource: linearProvider(),
    ctx: { secretHashes: {}, discovery: PREVIEW_FAILED },
    expected: {
      change: {
        kind: 'OAuthProvider',
        name: 'linear',
        action: 'blocked',
        new_revision: false,
        fields: LINEAR_BASE_FIELDS,
        reason:
          'MCP discovery of https://mcp.linear.example/mcp failed at step "authorization server metadata": https://auth.linear.example/.well-known/oauth-authorization-server answered 404; check spec.mcp_server_url and that the server offers OAuth metadata',
      },
      definitionHash: LINEAR_DEFINITION,
    },
  },
  {
    name: 'mcp, discovery not run: plain create of mcp_server_url',
    resource: linearProvider(),
    ctx: { secretHashes: {} },
    expected: {
      change: {
        kind: 'OAuthProvider',
        name: 'linear',
        action: 'create',
        new_revision: false,
        fields: LINEAR_BASE_FIELDS,
        reason: null,
      },
      request: {
        op: 'discover',
        body: { provider_id: 'linear', name: 'Linear', mcp_server_url: 'https://mcp.linear.example/mcp' },
      },
      definitionHash: LINEAR_DEFINITION,
    },
  },
  {
    name: 'mcp, already applied with the same definition: noop, discovery not consulted',
    resource: linearProvider(),
    ctx: { secretHashes: {}, applied: applied({}, LINEAR_DEFINITION), discovery: PREVIEW_FAILED },
    expected: {
      change: { kind: 'OAuthProvider', name: 'linear', action: 'noop', new_revision: false, fields: [], reason: null },
      definitionHash: LINEAR_DEFINITION,
    },
  },
];

describe('diffProvider', () => {
  it.each(cases)('$name', (c) => {
    expect(diffProvider(c.resource, c.ctx)).toStrictEqual(c.expected);
  });
});

describe('providerDefinitionHash', () => {
  it('is the objectHash of the spec with client_secret replaced by its hash', () => {
    const expected = objectHash({
      mode: 'manual',
      name: 'Slack',
      client_id: '123.456',
      client_secret: SLACK_HASH,
      auth_url: 'https://slack.com/oauth/v2/authorize',
      token_url: 'https://slack.com/api/oauth.v2.access',
      provider_type: 'slack',
    });
    expect(SLACK_DEFINITION).toBe(expected);
  });

  it('changes with the secret value, not with the secret reference form', () => {
    const fromFile: ProviderResource = {
      ...slackProvider(),
      spec: { ...slackProvider().spec, client_secret: { file: '/run/secrets/slack' } } as ProviderResource['spec'],
    };
    expect(providerDefinitionHash(fromFile, { client_secret: SLACK_HASH })).toBe(SLACK_DEFINITION);
    expect(
      providerDefinitionHash(slackProvider(), {
        client_secret: hashOf('slack', 'client_secret', 'other', 'OAuthProvider'),
      }),
    ).not.toBe(SLACK_DEFINITION);
  });

  it('mcp: the hash of the spec itself', () => {
    expect(LINEAR_DEFINITION).toBe(
      objectHash({ mode: 'mcp', name: 'Linear', mcp_server_url: 'https://mcp.linear.example/mcp' }),
    );
  });
});

describe('diffProvider against a live provider (a service that reads providers)', () => {
  function liveSlack(overrides: Partial<LiveProvider> = {}): LiveProvider {
    return {
      id: '5e1f0000-0000-4000-8000-000000000001',
      organization_id: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
      provider_id: 'slack',
      name: 'Slack',
      client_id: '123.456',
      auth_url: 'https://slack.com/oauth/v2/authorize',
      token_url: 'https://slack.com/api/oauth.v2.access',
      uses_pkce: false,
      code_challenge_method: 'S256',
      created_at: '2025-02-03T16:41:00Z',
      updated_at: '2025-02-03T16:41:00Z',
      provider_type: 'slack',
      ...overrides,
    };
  }
  const MANAGED: ProviderContext = { ...SLACK_CTX, applied: applied({ client_secret: SLACK_HASH }, SLACK_DEFINITION) };

  it('equal fields and the recorded secret hash: noop', () => {
    expect(diffProvider(slackProvider(), { ...MANAGED, provider: { live: liveSlack() } }).change).toStrictEqual(
      slackChange('noop', [], null),
    );
  });

  it('a renamed provider is an update with the one field, sent by PATCH', () => {
    const diff = diffProvider(renamedSlack(), { ...MANAGED, provider: { live: liveSlack() } });
    expect(diff.change).toStrictEqual(
      slackChange('update', [{ path: 'name', before: 'Slack', after: 'Slack (acme)', sensitive: false }], null),
    );
    expect(diff.request).toStrictEqual({ op: 'patch', body: { name: 'Slack (acme)' }, sendClientSecret: false });
  });

  it('a rotated secret is sent alone', () => {
    const rotated = hashOf('slack', 'client_secret', 'rotated-0a9b8c', 'OAuthProvider');
    const diff = diffProvider(slackProvider(), {
      ...MANAGED,
      secretHashes: { client_secret: rotated },
      provider: { live: liveSlack() },
    });
    expect(diff.change.fields).toStrictEqual([
      { path: 'client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true },
    ]);
    expect(diff.request).toStrictEqual({ op: 'patch', body: {}, sendClientSecret: true });
  });

  it('no applied record: an adoption that sends the unknown secret once', () => {
    const diff = diffProvider(slackProvider(), { ...SLACK_CTX, provider: { live: liveSlack() } });
    expect(diff.change.action).toBe('update');
    expect(diff.change.reason).toBe(
      'exists in the service, created outside converge: converge will take it over and update 1 field; client_secret: the service never returns it and converge has no record of writing it, so it is sent once with this write',
    );
    expect(diff.request).toStrictEqual({ op: 'patch', body: {}, sendClientSecret: true });
  });

  it('a provider converge created but the service no longer has: created again, with the note', () => {
    const diff = diffProvider(slackProvider(), { ...MANAGED, provider: { live: undefined } });
    expect(diff.change.action).toBe('create');
    expect(diff.change.reason).toBe(
      'converge created this provider before, but the service no longer has it: it is created again',
    );
  });

  it('a create-only field that differs blocks, whatever else differs', () => {
    const diff = diffProvider(renamedSlack(), {
      ...MANAGED,
      provider: { live: liveSlack({ provider_type: 'microsoft' }) },
    });
    expect(diff.change.action).toBe('blocked');
    expect(diff.change.fields.map((f) => f.path)).toEqual(['name', 'provider_type']);
    expect(diff.request).toBeUndefined();
  });

  it('mcp: endpoints compared with the discovery preview; a failed discovery compares the rest and says so', () => {
    const live = liveSlack({
      provider_id: 'linear',
      name: 'Linear',
      mcp_server_url: 'https://mcp.linear.example/mcp',
      auth_url: 'https://old.example/authorize',
      token_url: PREVIEW_OK.token_url,
      uses_pkce: true,
      provider_type: null,
    });
    const moved = diffProvider(linearProvider(), {
      secretHashes: {},
      applied: applied({}, LINEAR_DEFINITION),
      discovery: PREVIEW_OK,
      provider: { live },
    });
    expect(moved.request).toStrictEqual({
      op: 'patch',
      body: { auth_url: PREVIEW_OK.auth_url },
      sendClientSecret: false,
    });
    const failed = diffProvider(linearProvider(), {
      secretHashes: {},
      applied: applied({}, LINEAR_DEFINITION),
      discovery: PREVIEW_FAILED,
      provider: { live },
    });
    expect(failed.change.action).toBe('noop');
    expect(failed.change.reason).toContain('the endpoints are not compared');
  });
});
