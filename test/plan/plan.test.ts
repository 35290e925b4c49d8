// Table tests of plan(): pairing by name, orphans, blocked manifests, duplicates, plumbing of the input maps, ordering.
import { describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../src/core/diagnostics.js';
import type { AppliedRecord, BlockedResource, DesiredResource, LiveDeployment, Plan } from '../../src/core/model.js';
import { kindOf } from '../../src/core/kinds/index.js';
import { plan, type PlanInput } from '../../src/plan/plan.js';
import {
  OPENAI_VALUE,
  SLACK_SECRET_VALUE,
  deploymentKey,
  desired,
  hashOf,
  linearProvider,
  live,
  slackProvider,
  supportAgentLive,
  supportAgentSpec,
} from './fixtures.js';

const ORPHAN = 'live deployment not in any manifest; converge never deletes';

function input(partial: Partial<PlanInput>): PlanInput {
  return {
    resources: [],
    blocked: [],
    diagnostics: [],
    live: { deployments: [] },
    applied: new Map(),
    secretHashes: new Map(),
    ...partial,
  };
}

function noSecrets(name: string, spec = supportAgentSpec()): DesiredResource {
  const { secrets: _drop, ...rest } = spec;
  return desired(name, rest);
}

const supportHashes = new Map<string, Record<string, string>>([
  [deploymentKey('support-agent'), { OPENAI_API_KEY: hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE) }],
]);

const brokenBilling: BlockedResource = {
  kind: 'Deployment',
  name: 'billing-agent',
  location: { file: 'apps/billing.yaml', line: 9, column: 7 },
  reason: 'apps/billing.yaml:9:7: spec.source_config.resource_spec.max_scale must be a number; fix the manifest',
};

const diagnostics: Diagnostic[] = [
  {
    severity: 'warning',
    file: 'apps/zeta.yaml',
    line: 2,
    column: 1,
    message: 'unknown annotation converge/sync-wave is ignored',
    code: 'W_ANNOTATION',
  },
  {
    severity: 'error',
    file: 'apps/billing.yaml',
    line: 9,
    column: 7,
    message: 'spec.source_config.resource_spec.max_scale must be a number',
    code: 'E_SCHEMA',
  },
];

function liveNamed(name: string, id: string): LiveDeployment {
  return live(name, { id, source_config: { repo_url: `https://codehost.example.com/acme/${name}` } });
}

interface Case {
  name: string;
  input: PlanInput;
  expected: Plan;
}

const cases: Case[] = [
  {
    name: 'nothing declared, nothing live',
    input: input({}),
    expected: {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 0, suspended: 0 },
      changes: [],
      diagnostics: [],
    },
  },
  {
    name: 'mixed: noop, orphan, blocked manifest with a live twin (not orphaned), provider create, diagnostics sorted without code',
    input: input({
      resources: [slackProvider(), desired('support-agent', supportAgentSpec())],
      blocked: [brokenBilling],
      diagnostics,
      live: {
        deployments: [
          liveNamed('legacy-rag', 'f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b'),
          liveNamed('billing-agent', 'a9b8c7d6-e5f4-4321-8765-43210fedcba9'),
          supportAgentLive(),
        ],
      },
      secretHashes: new Map<string, Record<string, string>>([
        ...supportHashes,
        [
          'OAuthProvider/slack',
          { client_secret: hashOf('slack', 'client_secret', SLACK_SECRET_VALUE, 'OAuthProvider') },
        ],
      ]),
    }),
    expected: {
      format_version: '1',
      summary: { create: 1, update: 0, adopt: 0, delete: 0, noop: 1, orphan: 1, blocked: 1, suspended: 0 },
      changes: [
        {
          kind: 'Deployment',
          name: 'billing-agent',
          action: 'blocked',
          new_revision: false,
          fields: [],
          reason: brokenBilling.reason,
        },
        { kind: 'Deployment', name: 'legacy-rag', action: 'orphan', new_revision: false, fields: [], reason: ORPHAN },
        { kind: 'Deployment', name: 'support-agent', action: 'noop', new_revision: false, fields: [], reason: null },
        {
          kind: 'OAuthProvider',
          name: 'slack',
          action: 'create',
          new_revision: false,
          fields: [
            { path: 'provider_id', before: null, after: 'slack', sensitive: false },
            { path: 'name', before: null, after: 'Slack', sensitive: false },
            { path: 'client_id', before: null, after: '123.456', sensitive: false },
            { path: 'auth_url', before: null, after: 'https://slack.com/oauth/v2/authorize', sensitive: false },
            { path: 'token_url', before: null, after: 'https://slack.com/api/oauth.v2.access', sensitive: false },
            { path: 'client_secret', before: null, after: '(sensitive)', sensitive: true },
            { path: 'provider_type', before: null, after: 'slack', sensitive: false },
          ],
          reason: null,
        },
      ],
      diagnostics: [
        {
          severity: 'error',
          file: 'apps/billing.yaml',
          line: 9,
          column: 7,
          message: 'spec.source_config.resource_spec.max_scale must be a number',
        },
        {
          severity: 'warning',
          file: 'apps/zeta.yaml',
          line: 2,
          column: 1,
          message: 'unknown annotation converge/sync-wave is ignored',
        },
      ],
    },
  },
  {
    name: 'the same deployment declared twice: blocked naming both places; its live twin is not orphaned',
    input: input({
      resources: [
        noSecrets('ingest', supportAgentSpec()),
        { ...noSecrets('ingest'), location: { file: 'team-b/ingest.yaml', line: 14, column: 1 } },
      ],
      live: { deployments: [liveNamed('ingest', 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e')] },
    }),
    expected: {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 1, suspended: 0 },
      changes: [
        {
          kind: 'Deployment',
          name: 'ingest',
          action: 'blocked',
          new_revision: false,
          fields: [],
          reason: 'Deployment/ingest is declared 2 times (apps/ingest.yaml:1:1, team-b/ingest.yaml:14:1); keep one',
        },
      ],
      diagnostics: [],
    },
  },
  {
    name: 'a colliding name reported by the loader on both files, and also passed as valid: one blocked change, reasons merged',
    input: input({
      resources: [noSecrets('ingest')],
      blocked: [
        {
          kind: 'Deployment',
          name: 'ingest',
          location: { file: 'a.yaml', line: 3, column: 9 },
          reason: 'ingest is also declared in b.yaml:5:9',
        },
        {
          kind: 'Deployment',
          name: 'ingest',
          location: { file: 'b.yaml', line: 5, column: 9 },
          reason: 'ingest is also declared in a.yaml:3:9',
        },
        {
          kind: 'Deployment',
          name: 'ingest',
          location: { file: 'b.yaml', line: 5, column: 9 },
          reason: 'ingest is also declared in a.yaml:3:9',
        },
      ],
    }),
    expected: {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 1, suspended: 0 },
      changes: [
        {
          kind: 'Deployment',
          name: 'ingest',
          action: 'blocked',
          new_revision: false,
          fields: [],
          reason: 'ingest is also declared in b.yaml:5:9; ingest is also declared in a.yaml:3:9',
        },
      ],
      diagnostics: [],
    },
  },
  {
    name: 'the same live deployment listed twice (pages shifted) counts once; names compare by code unit, not locale',
    input: input({
      live: {
        deployments: [
          liveNamed('rag-b', 'c0c0c0c0-0000-4000-8000-000000000002'),
          liveNamed('Rag-a', 'c0c0c0c0-0000-4000-8000-000000000001'),
          liveNamed('rag-b', 'c0c0c0c0-0000-4000-8000-000000000002'),
        ],
      },
    }),
    expected: {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 0, orphan: 2, blocked: 0, suspended: 0 },
      changes: [
        { kind: 'Deployment', name: 'Rag-a', action: 'orphan', new_revision: false, fields: [], reason: ORPHAN },
        { kind: 'Deployment', name: 'rag-b', action: 'orphan', new_revision: false, fields: [], reason: ORPHAN },
      ],
      diagnostics: [],
    },
  },
  {
    name: 'two live deployments share a declared name: blocked, converge cannot tell which to manage',
    input: input({
      resources: [noSecrets('rag')],
      live: {
        deployments: [
          liveNamed('rag', 'c0c0c0c0-0000-4000-8000-00000000000a'),
          liveNamed('rag', 'c0c0c0c0-0000-4000-8000-00000000000b'),
        ],
      },
    }),
    expected: {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 0, orphan: 0, blocked: 1, suspended: 0 },
      changes: [
        {
          kind: 'Deployment',
          name: 'rag',
          action: 'blocked',
          new_revision: false,
          fields: [],
          reason:
            'the service lists 2 deployments named rag (ids c0c0c0c0-0000-4000-8000-00000000000a, c0c0c0c0-0000-4000-8000-00000000000b); converge cannot tell which one to manage',
        },
      ],
      diagnostics: [],
    },
  },
  {
    name: 'input maps reach the right resources: applied, secretErrors, repositoryErrors, discovery',
    input: input({
      resources: [
        desired('support-agent', supportAgentSpec()),
        noSecrets('docs-agent'),
        slackProvider(),
        linearProvider(),
      ],
      live: { deployments: [supportAgentLive({ secrets: [{ name: 'OPENAI_API_KEY', value: '********' }] })] },
      applied: new Map<string, AppliedRecord>([
        [
          deploymentKey('support-agent'),
          {
            secrets: { OPENAI_API_KEY: hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE) },
            appliedAt: '2025-02-03T16:41:00.000Z',
          },
        ],
      ]),
      secretHashes: supportHashes,
      secretErrors: new Map([
        ['OAuthProvider/slack', ['client_secret: file /run/secrets/slack cannot be read (ENOENT)']],
      ]),
      repositoryErrors: new Map([
        ['docs-agent', 'repository acme/docs-agent is in 2 integrations (acme, acme-labs); set spec.integration'],
      ]),
      discovery: new Map([
        ['linear', { ok: false, step: 'protected resource metadata', message: 'connection refused' } as const],
      ]),
    }),
    expected: {
      format_version: '1',
      summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: 1, orphan: 0, blocked: 3, suspended: 0 },
      changes: [
        {
          kind: 'Deployment',
          name: 'docs-agent',
          action: 'blocked',
          new_revision: false,
          fields: [
            { path: 'name', before: null, after: 'docs-agent', sensitive: false },
            { path: 'source', before: null, after: 'codehost', sensitive: false },
            {
              path: 'source_config.integration_id',
              before: null,
              after: '3f9d2c4e-1b7a-4e8f-9c61-2a5b7d0e4f13',
              sensitive: false,
            },
            {
              path: 'source_config.repo_url',
              before: null,
              after: 'https://codehost.example.com/acme/support-agent',
              sensitive: false,
            },
            { path: 'source_config.build_on_push', before: null, after: true, sensitive: false },
            { path: 'source_config.resource_spec.cpu', before: null, after: 0.5, sensitive: false },
            { path: 'source_config.resource_spec.min_scale', before: null, after: 1, sensitive: false },
            { path: 'source_config.resource_spec.max_scale', before: null, after: 2, sensitive: false },
            { path: 'source_config.resource_spec.memory_mb', before: null, after: 1024, sensitive: false },
            { path: 'source_config.deployment_type', before: null, after: 'prod', sensitive: false },
            { path: 'source_revision_config.repo_ref', before: null, after: 'main', sensitive: false },
            {
              path: 'source_revision_config.graph_config_path',
              before: null,
              after: 'agent/graph.json',
              sensitive: false,
            },
          ],
          reason: 'repository acme/docs-agent is in 2 integrations (acme, acme-labs); set spec.integration',
        },
        { kind: 'Deployment', name: 'support-agent', action: 'noop', new_revision: false, fields: [], reason: null },
        {
          kind: 'OAuthProvider',
          name: 'linear',
          action: 'blocked',
          new_revision: false,
          fields: [
            { path: 'provider_id', before: null, after: 'linear', sensitive: false },
            { path: 'name', before: null, after: 'Linear', sensitive: false },
            { path: 'mcp_server_url', before: null, after: 'https://mcp.linear.example/mcp', sensitive: false },
          ],
          reason:
            'MCP discovery of https://mcp.linear.example/mcp failed at step "protected resource metadata": connection refused; check spec.mcp_server_url and that the server offers OAuth metadata',
        },
        {
          kind: 'OAuthProvider',
          name: 'slack',
          action: 'blocked',
          new_revision: false,
          fields: [],
          reason: 'client_secret: file /run/secrets/slack cannot be read (ENOENT)',
        },
      ],
      diagnostics: [],
    },
  },
];

describe('plan', () => {
  it.each(cases)('$name', (c) => {
    expect(plan(c.input)).toStrictEqual(c.expected);
  });

  it('a provider and a deployment may share a name; providers are never orphans', () => {
    const result = plan(
      input({
        resources: [slackProvider()],
        live: { deployments: [liveNamed('slack', 'd0d0d0d0-0000-4000-8000-000000000001')] },
      }),
    );
    expect(result.changes.map((c) => `${c.kind}/${c.name}:${c.action}`)).toEqual([
      'Deployment/slack:orphan',
      'OAuthProvider/slack:blocked',
    ]);
  });
});

describe('pairing stays linear', () => {
  it('plans 10,000 deployments touching each input element a bounded number of times', () => {
    const n = 10_000;
    const resources: DesiredResource[] = [];
    const liveList: LiveDeployment[] = [];
    for (let i = 0; i < n; i++) {
      const name = `agent-${String(i).padStart(5, '0')}`;
      const spec = {
        source: 'codehost' as const,
        source_config: { build_on_push: true, resource_spec: { max_scale: 2 } },
        source_revision_config: { graph_config_path: 'langgraph.json' },
      };
      if (i % 10 !== 0) resources.push(desired(name, spec));
      const liveSpec = { build_on_push: true, resource_spec: { max_scale: i % 4 === 0 ? 3 : 2 } };
      if (i % 10 !== 1)
        liveList.push(
          live(name, {
            id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
            source_config: liveSpec,
            source_revision_config: { graph_config_path: 'langgraph.json' },
          }),
        );
    }
    let reads = 0;
    function counted<T>(list: T[]): T[] {
      return new Proxy(list, {
        get(target, property, receiver) {
          if (typeof property === 'string' && /^\d+$/.test(property)) reads += 1;
          return Reflect.get(target, property, receiver);
        },
      });
    }
    const result = plan(input({ resources: counted(resources), live: { deployments: counted(liveList) } }));
    // 8,000 pairs: i % 4 == 0 among them (4 in every 20) -> 2,000 updates. A nested scan (find per resource) would read about n^2 / 2 = 50,000,000 elements.
    expect(reads).toBeLessThanOrEqual(2 * (resources.length + liveList.length));
    expect(result.summary).toStrictEqual({
      create: 1000,
      update: 2000,
      adopt: 0,
      delete: 0,
      noop: 6000,
      orphan: 1000,
      blocked: 0,
      suspended: 0,
    });
    expect(result.changes).toHaveLength(n);
  });
});

describe('one plan loop for every kind', () => {
  it('diffs each paired resource through its kind in the table, with the input maps of that resource', () => {
    const support = desired('support-agent', supportAgentSpec());
    const supportLive = supportAgentLive({
      source_config: { ...supportAgentLive().source_config, resource_spec: { max_scale: 9 } },
    });
    const slack = slackProvider();
    const linear = linearProvider();
    const slackKey = 'OAuthProvider/slack';
    const slackHashes = { client_secret: hashOf('slack', 'client_secret', SLACK_SECRET_VALUE, 'OAuthProvider') };
    const preview = { ok: false as const, step: 'metadata', message: 'no OAuth metadata' };
    const given = input({
      resources: [linear, support, slack],
      live: { deployments: [supportLive] },
      secretHashes: new Map([...supportHashes, [slackKey, slackHashes]]),
      discovery: new Map([['linear', preview]]),
    });
    const result = plan(given);
    // the plan's change of each resource is exactly its kind's diff with that resource's context
    expect(result.changes).toEqual([
      kindOf('Deployment').diff(support, supportLive, {
        secretHashes: supportHashes.get(deploymentKey('support-agent'))!,
      }),
      kindOf('OAuthProvider').diff(linear, undefined, { secretHashes: {}, discovery: preview }),
      kindOf('OAuthProvider').diff(slack, undefined, { secretHashes: slackHashes }),
    ]);
    expect(result.changes.map((c) => `${c.kind}/${c.name} ${c.action}`)).toEqual([
      'Deployment/support-agent update',
      'OAuthProvider/linear blocked',
      'OAuthProvider/slack create',
    ]);
  });

  it('pairs only the listed kind with live deployments: a provider named like a live deployment leaves it an orphan', () => {
    const result = plan(
      input({
        resources: [slackProvider()],
        live: { deployments: [liveNamed('slack', '0b5e7c1a-4d2f-4a8b-9c3e-00000000aaaa')] },
      }),
    );
    expect(result.changes.map((c) => `${c.kind}/${c.name} ${c.action}`)).toEqual([
      'Deployment/slack orphan',
      'OAuthProvider/slack blocked',
    ]);
  });
});
