// Table tests of diffDeployment: every field kind, resource_spec merge, revision rules, secrets, blockers, create.
import { describe, expect, it } from 'vitest';
import type { DeploymentSpec, LiveDeployment, SourceLocation } from '../../src/core/model.js';
import { diffDeployment, type DeploymentContext, type DeploymentDiff } from '../../src/core/kinds/deployment/index.js';
import {
  INTEGRATION,
  LISTENER,
  OPENAI_OLD_VALUE,
  OPENAI_VALUE,
  OTHER_INTEGRATION,
  applied,
  desired,
  hashOf,
  live,
  supportAgentLive,
  supportAgentSpec,
} from './fixtures.js';

const H = hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE);
const H_OLD = hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_OLD_VALUE);
const H_ANTHROPIC = hashOf('support-agent', 'ANTHROPIC_API_KEY', 'sk-ant-api03-Zr7');
const ID = 'd2a4f6b8-1c3e-4a5b-9d7f-0a2c4e6f8b1d';
const TRIAGE_ID = 'e7c1b3a5-2d4f-4e6a-8b0c-1d3f5a7c9e2b';
const SECRETS: DeploymentContext = { secretHashes: { OPENAI_API_KEY: H } };
const WRITTEN_ONCE =
  'secret values are hidden by the service and no applied state is known: OPENAI_API_KEY will be written once';
const SUSPENDED = 'suspended by converge/suspend: shown, not applied';

function spec(change: (spec: DeploymentSpec) => void): DeploymentSpec {
  const value = supportAgentSpec();
  change(value);
  return value;
}

function rs(value: DeploymentSpec): Record<string, unknown> {
  return value.source_config!.resource_spec as Record<string, unknown>;
}

const LIVE_RS = {
  min_scale: 1,
  max_scale: 2,
  cpu: 0.5,
  memory_mb: 1024,
  memory_limit_mb: 2048,
  labels: { team: 'support' },
};

function masked(value?: string): Partial<LiveDeployment> {
  return { secrets: [value === undefined ? { name: 'OPENAI_API_KEY' } : { name: 'OPENAI_API_KEY', value }] };
}

function triageSpec(): DeploymentSpec {
  return {
    source: 'external_docker',
    source_config: {
      listener_id: LISTENER,
      listener_config: { k8s_namespace: 'agents' },
      resource_spec: { max_scale: 3 },
    },
    source_revision_config: { image_uri: 'registry.acme.example/agents/triage:1.4.2' },
    secret_references: [
      { name: 'DB_URL', secret_name: 'triage-db', secret_key: 'url' },
      { name: 'REDIS_URL', secret_name: 'triage-redis', secret_key: 'url' },
    ],
  };
}

function triageLive(patch: Partial<LiveDeployment> = {}): LiveDeployment {
  return live('triage', {
    id: TRIAGE_ID,
    source: 'external_docker',
    source_config: {
      listener_id: LISTENER,
      listener_config: { k8s_namespace: 'agents' },
      resource_spec: { min_scale: 1, max_scale: 3 },
    },
    source_revision_config: { image_uri: 'registry.acme.example/agents/triage:1.4.2', repo_commit_sha: null },
    secret_references: [
      { name: 'REDIS_URL', secret_name: 'triage-redis', secret_key: 'url' },
      { name: 'DB_URL', secret_name: 'triage-db', secret_key: 'url' },
    ],
    image_version: '1.4.2',
    ...patch,
  });
}

function update(fields: DeploymentDiff['change']['fields'], newRevision: boolean, reason: string | null = null) {
  return {
    kind: 'Deployment' as const,
    name: 'support-agent',
    action: 'update' as const,
    new_revision: newRevision,
    fields,
    reason,
  };
}

const noop = {
  kind: 'Deployment',
  name: 'support-agent',
  action: 'noop',
  new_revision: false,
  fields: [],
  reason: null,
};

const secretField = { path: 'secrets.OPENAI_API_KEY', before: '(sensitive)', after: '(sensitive)', sensitive: true };
/** A secret written only because it cannot be compared (hidden by the service, no applied record). */
const uncomparedField = { ...secretField, uncompared: true as const };

interface Case {
  name: string;
  spec: DeploymentSpec;
  live: LiveDeployment | undefined;
  ctx?: DeploymentContext;
  suspend?: boolean;
  location?: Record<string, SourceLocation>;
  expected: DeploymentDiff;
}

const cases: Case[] = [
  {
    name: 'noop: same plain secret echoed; undeclared live fields (custom_url, memory_limit_mb, labels) are not drift',
    spec: supportAgentSpec(),
    live: supportAgentLive(),
    expected: { change: noop, secretNames: [] } as DeploymentDiff,
  },
  {
    name: 'a declared null is not drift (a null never clears a stored value)',
    spec: spec((s) => (s.source_config!.custom_url = null)),
    live: supportAgentLive(),
    expected: { change: noop, secretNames: [] } as DeploymentDiff,
  },
  {
    name: 'resource_spec: one changed field is its own path; the whole merged spec is sent',
    spec: spec((s) => (rs(s).max_scale = 4)),
    live: supportAgentLive(),
    expected: {
      change: update([{ path: 'source_config.resource_spec.max_scale', before: 2, after: 4, sensitive: false }], true),
      request: { op: 'patch', id: ID, body: { source_config: { resource_spec: { ...LIVE_RS, max_scale: 4 } } } },
      secretNames: [],
    },
  },
  {
    name: 'resource_spec: numeric and object fields changed, each its own path, in schema order',
    spec: spec((s) => Object.assign(rs(s), { max_scale: 4, cpu: 1, labels: { team: 'support', tier: 'gold' } })),
    live: supportAgentLive(),
    expected: {
      change: update(
        [
          { path: 'source_config.resource_spec.cpu', before: 0.5, after: 1, sensitive: false },
          { path: 'source_config.resource_spec.max_scale', before: 2, after: 4, sensitive: false },
          {
            path: 'source_config.resource_spec.labels',
            before: { team: 'support' },
            after: { team: 'support', tier: 'gold' },
            sensitive: false,
          },
        ],
        true,
      ),
      request: {
        op: 'patch',
        id: ID,
        body: {
          source_config: {
            resource_spec: { ...LIVE_RS, cpu: 1, max_scale: 4, labels: { team: 'support', tier: 'gold' } },
          },
        },
      },
      secretNames: [],
    },
  },
  {
    name: 'resource_spec: live has none, so the declared fields are the whole',
    spec: supportAgentSpec(),
    live: supportAgentLive({
      source_config: {
        integration_id: INTEGRATION,
        repo_url: 'https://codehost.example.com/acme/support-agent',
        build_on_push: true,
        resource_spec: null,
      },
    }),
    expected: {
      change: update(
        [
          { path: 'source_config.resource_spec.cpu', before: null, after: 0.5, sensitive: false },
          { path: 'source_config.resource_spec.min_scale', before: null, after: 1, sensitive: false },
          { path: 'source_config.resource_spec.max_scale', before: null, after: 2, sensitive: false },
          { path: 'source_config.resource_spec.memory_mb', before: null, after: 1024, sensitive: false },
        ],
        true,
      ),
      request: {
        op: 'patch',
        id: ID,
        body: { source_config: { resource_spec: { cpu: 0.5, min_scale: 1, max_scale: 2, memory_mb: 1024 } } },
      },
      secretNames: [],
    },
  },
  {
    name: 'only build_on_push changed: no revision field is sent, no new revision',
    spec: spec((s) => (s.source_config!.build_on_push = false)),
    live: supportAgentLive(),
    expected: {
      change: update([{ path: 'source_config.build_on_push', before: true, after: false, sensitive: false }], false),
      request: { op: 'patch', id: ID, body: { source_config: { build_on_push: false } } },
      secretNames: [],
    },
  },
  {
    name: 'a declared custom_url differing from live: no new revision',
    spec: spec((s) => (s.source_config!.custom_url = 'https://help.acme.example')),
    live: supportAgentLive(),
    expected: {
      change: update(
        [
          {
            path: 'source_config.custom_url',
            before: 'https://support.acme.example',
            after: 'https://help.acme.example',
            sensitive: false,
          },
        ],
        false,
      ),
      request: { op: 'patch', id: ID, body: { source_config: { custom_url: 'https://help.acme.example' } } },
      secretNames: [],
    },
  },
  {
    name: 'repo_ref changed: only it is sent (unchanged graph_config_path would start a needless revision)',
    spec: spec((s) => (s.source_revision_config!.repo_ref = 'release-2025.02')),
    live: supportAgentLive(),
    expected: {
      change: update(
        [{ path: 'source_revision_config.repo_ref', before: 'main', after: 'release-2025.02', sensitive: false }],
        true,
      ),
      request: { op: 'patch', id: ID, body: { source_revision_config: { repo_ref: 'release-2025.02' } } },
      secretNames: [],
    },
  },
  {
    name: 'only a secret changed (plain echo hashed): body empty, the secret listed, new revision',
    spec: supportAgentSpec(),
    live: supportAgentLive(masked(OPENAI_OLD_VALUE)),
    expected: {
      change: update([secretField], true),
      request: { op: 'patch', id: ID, body: {} },
      secretNames: ['OPENAI_API_KEY'],
    },
  },
  {
    name: 'plain echo equal to desired wins over a stale applied record',
    spec: supportAgentSpec(),
    live: supportAgentLive(),
    ctx: { ...SECRETS, applied: applied({ OPENAI_API_KEY: H_OLD }) },
    expected: { change: noop, secretNames: [] } as DeploymentDiff,
  },
  {
    name: 'masked echo, applied hash equal: noop',
    spec: supportAgentSpec(),
    live: supportAgentLive(masked('********')),
    ctx: { ...SECRETS, applied: applied({ OPENAI_API_KEY: H }) },
    expected: { change: noop, secretNames: [] } as DeploymentDiff,
  },
  {
    name: 'masked echo, applied hash differs: the secret is sent',
    spec: supportAgentSpec(),
    live: supportAgentLive(masked('********')),
    ctx: { ...SECRETS, applied: applied({ OPENAI_API_KEY: H_OLD }) },
    expected: {
      change: update([secretField], true),
      request: { op: 'patch', id: ID, body: {} },
      secretNames: ['OPENAI_API_KEY'],
    },
  },
  {
    name: 'masked echo, no applied record: written once, and the reason says so',
    spec: supportAgentSpec(),
    live: supportAgentLive(masked('********')),
    expected: {
      change: update([uncomparedField], true, WRITTEN_ONCE),
      request: { op: 'patch', id: ID, body: {} },
      secretNames: ['OPENAI_API_KEY'],
    },
  },
  {
    name: 'value omitted by the service, no applied record: written once',
    spec: supportAgentSpec(),
    live: supportAgentLive(masked()),
    expected: {
      change: update([uncomparedField], true, WRITTEN_ONCE),
      request: { op: 'patch', id: ID, body: {} },
      secretNames: ['OPENAI_API_KEY'],
    },
  },
  {
    name: 'value omitted, applied hash equal: noop',
    spec: supportAgentSpec(),
    live: supportAgentLive(masked()),
    ctx: { ...SECRETS, applied: applied({ OPENAI_API_KEY: H }) },
    expected: { change: noop, secretNames: [] } as DeploymentDiff,
  },
  {
    name: 'secret missing from live: before null; a live-only secret is not drift, noted as not managed and maybe dropped',
    spec: supportAgentSpec(),
    live: supportAgentLive({ secrets: [{ name: 'LANGSMITH_API_KEY', value: '********' }] }),
    expected: {
      change: update(
        [{ path: 'secrets.OPENAI_API_KEY', before: null, after: '(sensitive)', sensitive: true }],
        true,
        'secret LANGSMITH_API_KEY is set on the service but declared in no manifest: not managed by converge; this write sends the complete set of declared secrets, and the service may drop it: declare it in the manifest to keep it',
      ),
      request: { op: 'patch', id: ID, body: {} },
      secretNames: ['OPENAI_API_KEY'],
    },
  },
  {
    name: 'two hidden secrets, one known from the applied record: only the unknown one is a change, both are sent',
    spec: spec((s) => s.secrets!.push({ name: 'ANTHROPIC_API_KEY', from: { file: '/run/secrets/anthropic' } })),
    live: supportAgentLive({
      secrets: [
        { name: 'OPENAI_API_KEY', value: '********' },
        { name: 'ANTHROPIC_API_KEY', value: '********' },
      ],
    }),
    ctx: {
      secretHashes: { OPENAI_API_KEY: H, ANTHROPIC_API_KEY: H_ANTHROPIC },
      applied: applied({ OPENAI_API_KEY: H }),
    },
    expected: {
      change: update(
        [
          {
            path: 'secrets.ANTHROPIC_API_KEY',
            before: '(sensitive)',
            after: '(sensitive)',
            sensitive: true,
            uncompared: true,
          },
        ],
        true,
        'secret values are hidden by the service and no applied state is known: ANTHROPIC_API_KEY will be written once; 1 unchanged secret is re-sent with it (a write carries every declared secret)',
      ),
      request: { op: 'patch', id: ID, body: {} },
      secretNames: ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY'],
    },
  },
  {
    name: 'build_on_push and a secret changed: new revision because of the secret',
    spec: spec((s) => (s.source_config!.build_on_push = false)),
    live: supportAgentLive(masked(OPENAI_OLD_VALUE)),
    expected: {
      change: update(
        [{ path: 'source_config.build_on_push', before: true, after: false, sensitive: false }, secretField],
        true,
      ),
      request: { op: 'patch', id: ID, body: { source_config: { build_on_push: false } } },
      secretNames: ['OPENAI_API_KEY'],
    },
  },
  {
    name: 'repo_url changed: blocked (immutable)',
    spec: spec((s) => (s.source_config!.repo_url = 'https://codehost.example.com/acme/support-bot')),
    live: supportAgentLive(),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [
          {
            path: 'source_config.repo_url',
            before: 'https://codehost.example.com/acme/support-agent',
            after: 'https://codehost.example.com/acme/support-bot',
            sensitive: false,
          },
        ],
        reason:
          'source_config.repo_url cannot be changed after creation (live: "https://codehost.example.com/acme/support-agent", manifest: "https://codehost.example.com/acme/support-bot"); set it back to the live value, or give the deployment a new metadata.name',
      },
      secretNames: [],
    },
  },
  {
    name: 'integration_id changed with another change: blocked, both shown',
    spec: spec((s) => {
      s.source_config!.integration_id = OTHER_INTEGRATION;
      rs(s).max_scale = 4;
    }),
    live: supportAgentLive(),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [
          { path: 'source_config.integration_id', before: INTEGRATION, after: OTHER_INTEGRATION, sensitive: false },
          { path: 'source_config.resource_spec.max_scale', before: 2, after: 4, sensitive: false },
        ],
        reason: `source_config.integration_id cannot be changed after creation (live: "${INTEGRATION}", manifest: "${OTHER_INTEGRATION}"); set it back to the live value, or give the deployment a new metadata.name`,
      },
      secretNames: [],
    },
  },
  {
    name: 'source changed: blocked',
    spec: supportAgentSpec(),
    live: supportAgentLive({ source: 'internal_source' }),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [{ path: 'source', before: 'internal_source', after: 'codehost', sensitive: false }],
        reason:
          'source cannot be changed after creation (live: "internal_source", manifest: "codehost"); set spec.source back to "internal_source", or give the deployment a new metadata.name',
      },
      secretNames: [],
    },
  },
  {
    name: 'unknown live source: blocked',
    spec: supportAgentSpec(),
    live: supportAgentLive({ source: 'internal_wasm' }),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [{ path: 'source', before: 'internal_wasm', after: 'codehost', sensitive: false }],
        reason:
          'the service reports source "internal_wasm", which this converge does not know; upgrade converge, or remove the deployment from the manifests',
      },
      secretNames: [],
    },
  },
  {
    name: 'unresolvable secret (no hash, no message): blocked with a generic reason',
    spec: supportAgentSpec(),
    live: supportAgentLive(),
    ctx: { secretHashes: {} },
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [],
        reason: 'secret OPENAI_API_KEY could not be resolved; check its valueFrom (environment variable or file)',
      },
      secretNames: [],
    },
  },
  {
    name: 'unresolvable secret, location known from the loader: the reason cites file:line:column',
    spec: supportAgentSpec(),
    live: supportAgentLive(),
    ctx: { secretHashes: {} },
    location: { OPENAI_API_KEY: { file: 'apps/support-agent.yaml', line: 21, column: 9 } },
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [],
        reason:
          'secret OPENAI_API_KEY (apps/support-agent.yaml:21:9) could not be resolved; check its valueFrom (environment variable or file)',
      },
      secretNames: [],
    },
  },
  {
    name: 'unresolvable secret with the resolver message: blocked with that message',
    spec: spec((s) => (rs(s).max_scale = 4)),
    live: supportAgentLive(),
    ctx: { secretHashes: {}, secretErrors: ['secret OPENAI_API_KEY: environment variable OPENAI_API_KEY is not set'] },
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [{ path: 'source_config.resource_spec.max_scale', before: 2, after: 4, sensitive: false }],
        reason: 'secret OPENAI_API_KEY: environment variable OPENAI_API_KEY is not set',
      },
      secretNames: [],
    },
  },
  {
    name: 'unresolved repository: blocked with its reason',
    spec: supportAgentSpec(),
    live: supportAgentLive(),
    ctx: {
      ...SECRETS,
      repositoryError: 'repository acme/support-agent is in no integration the service lists; check spec.repository',
    },
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'blocked',
        new_revision: false,
        fields: [],
        reason: 'repository acme/support-agent is in no integration the service lists; check spec.repository',
      },
      secretNames: [],
    },
  },
  {
    name: 'suspended: the diff is shown with the note, nothing is requested',
    spec: spec((s) => (rs(s).max_scale = 4)),
    live: supportAgentLive(masked('********')),
    suspend: true,
    expected: {
      change: {
        ...update(
          [{ path: 'source_config.resource_spec.max_scale', before: 2, after: 4, sensitive: false }, uncomparedField],
          true,
          `${WRITTEN_ONCE}; ${SUSPENDED}`,
        ),
        suspended: true,
      },
      secretNames: [],
    },
  },
  {
    name: 'create: every value sent is listed (before null), secrets by name only, new revision',
    spec: supportAgentSpec(),
    live: undefined,
    expected: {
      change: {
        kind: 'Deployment',
        name: 'support-agent',
        action: 'create',
        new_revision: true,
        fields: [
          { path: 'name', before: null, after: 'support-agent', sensitive: false },
          { path: 'source', before: null, after: 'codehost', sensitive: false },
          { path: 'source_config.integration_id', before: null, after: INTEGRATION, sensitive: false },
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
          { path: 'secrets.OPENAI_API_KEY', before: null, after: '(sensitive)', sensitive: true },
        ],
        reason: null,
      },
      request: {
        op: 'create',
        body: {
          name: 'support-agent',
          source: 'codehost',
          source_config: {
            integration_id: INTEGRATION,
            repo_url: 'https://codehost.example.com/acme/support-agent',
            build_on_push: true,
            resource_spec: { cpu: 0.5, min_scale: 1, max_scale: 2, memory_mb: 1024 },
            deployment_type: 'prod',
          },
          source_revision_config: { repo_ref: 'main', graph_config_path: 'agent/graph.json' },
          secrets: [],
        },
      },
      secretNames: ['OPENAI_API_KEY'],
    },
  },
];

const triageNoop = {
  kind: 'Deployment',
  name: 'triage',
  action: 'noop',
  new_revision: false,
  fields: [],
  reason: null,
};

const triageCases: Case[] = [
  {
    name: 'secret_references in another order: noop (compared as a set)',
    spec: triageSpec(),
    live: triageLive(),
    expected: { change: triageNoop, secretNames: [] } as DeploymentDiff,
  },
  {
    name: 'secret_references changed: sent whole, new revision',
    spec: (() => {
      const s = triageSpec();
      s.secret_references![1] = { name: 'REDIS_URL', secret_name: 'triage-redis-v2', secret_key: 'url' };
      return s;
    })(),
    live: triageLive(),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'triage',
        action: 'update',
        new_revision: true,
        fields: [
          {
            path: 'secret_references',
            before: [
              { name: 'REDIS_URL', secret_name: 'triage-redis', secret_key: 'url' },
              { name: 'DB_URL', secret_name: 'triage-db', secret_key: 'url' },
            ],
            after: [
              { name: 'DB_URL', secret_name: 'triage-db', secret_key: 'url' },
              { name: 'REDIS_URL', secret_name: 'triage-redis-v2', secret_key: 'url' },
            ],
            sensitive: false,
          },
        ],
        reason: null,
      },
      request: {
        op: 'patch',
        id: TRIAGE_ID,
        body: {
          secret_references: [
            { name: 'DB_URL', secret_name: 'triage-db', secret_key: 'url' },
            { name: 'REDIS_URL', secret_name: 'triage-redis-v2', secret_key: 'url' },
          ],
        },
      },
      secretNames: [],
    },
  },
  {
    name: 'listener_config.k8s_namespace changed: blocked, the service fixes it at creation',
    spec: (() => {
      const s = triageSpec();
      s.source_config!.listener_config = { k8s_namespace: 'agents-prod' };
      return s;
    })(),
    live: triageLive(),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'triage',
        action: 'blocked',
        new_revision: false,
        fields: [
          {
            path: 'source_config.listener_config',
            before: { k8s_namespace: 'agents' },
            after: { k8s_namespace: 'agents-prod' },
            sensitive: false,
          },
        ],
        reason:
          'source_config.listener_config.k8s_namespace cannot be changed after creation (live: "agents", manifest: "agents-prod"); set it back to the live value, or give the deployment a new metadata.name',
      },
      secretNames: [],
    },
  },
  {
    name: 'listener_id unset live: an immutable field may be set once, sent without a revision',
    spec: triageSpec(),
    live: triageLive({
      source_config: {
        listener_id: null,
        listener_config: { k8s_namespace: 'agents' },
        resource_spec: { min_scale: 1, max_scale: 3 },
      },
    }),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'triage',
        action: 'update',
        new_revision: false,
        fields: [{ path: 'source_config.listener_id', before: null, after: LISTENER, sensitive: false }],
        reason: null,
      },
      request: { op: 'patch', id: TRIAGE_ID, body: { source_config: { listener_id: LISTENER } } },
      secretNames: [],
    },
  },
  {
    name: 'image_uri changed: revision, and the unchanged resource_spec is not sent',
    spec: (() => {
      const s = triageSpec();
      s.source_revision_config!.image_uri = 'registry.acme.example/agents/triage:1.5.0';
      return s;
    })(),
    live: triageLive(),
    expected: {
      change: {
        kind: 'Deployment',
        name: 'triage',
        action: 'update',
        new_revision: true,
        fields: [
          {
            path: 'source_revision_config.image_uri',
            before: 'registry.acme.example/agents/triage:1.4.2',
            after: 'registry.acme.example/agents/triage:1.5.0',
            sensitive: false,
          },
        ],
        reason: null,
      },
      request: {
        op: 'patch',
        id: TRIAGE_ID,
        body: { source_revision_config: { image_uri: 'registry.acme.example/agents/triage:1.5.0' } },
      },
      secretNames: [],
    },
  },
];

describe('diffDeployment', () => {
  it.each(cases)('support-agent: $name', (c) => {
    const resource = desired('support-agent', c.spec, { suspend: c.suspend ?? false });
    if (c.location) resource.secretLocations = c.location;
    expect(diffDeployment(resource, c.live, c.ctx ?? SECRETS)).toStrictEqual(c.expected);
  });

  it.each(triageCases)('triage: $name', (c) => {
    const resource = desired('triage', c.spec);
    expect(diffDeployment(resource, c.live, c.ctx ?? { secretHashes: {} })).toStrictEqual(c.expected);
  });
});
