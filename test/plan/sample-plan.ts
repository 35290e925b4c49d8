// A representative plan built through plan() from realistic inputs, shared by the renderer tests.
import type { DeploymentResource, DesiredResource, Plan } from '../../src/core/model.js';
import { plan } from '../../src/plan/plan.js';
import {
  INTEGRATION,
  OPENAI_OLD_VALUE,
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

function codehost(
  name: string,
  overrides: { maxScale?: number; buildOnPush?: boolean; repo?: string } = {},
): DeploymentResource {
  return desired(name, {
    source: 'codehost',
    source_config: {
      integration_id: INTEGRATION,
      repo_url: overrides.repo ?? `https://codehost.example.com/acme/${name}`,
      build_on_push: overrides.buildOnPush ?? true,
      resource_spec: { max_scale: overrides.maxScale ?? 2 },
    },
    source_revision_config: { repo_ref: 'main' },
  });
}

function codehostLive(name: string, n: number, maxScale = 2) {
  return live(name, {
    id: `5a5a5a5a-0000-4000-8000-${String(n).padStart(12, '0')}`,
    source_config: {
      integration_id: INTEGRATION,
      repo_url: `https://codehost.example.com/acme/${name}`,
      build_on_push: true,
      resource_spec: { min_scale: 1, max_scale: maxScale },
    },
    source_revision_config: { repo_ref: 'main', repo_commit_sha: '0c9d8e7f6a5b' },
  });
}

/** support-agent: secret rotated and max_scale raised; new-agent: create; and one of every other kind of change. */
export function samplePlan(): Plan {
  const supportSpec = supportAgentSpec();
  (supportSpec.source_config!.resource_spec as Record<string, unknown>).max_scale = 4;
  const resources: DesiredResource[] = [
    desired('support-agent', supportSpec),
    {
      ...codehost('new-agent'),
      spec: {
        ...codehost('new-agent').spec,
        source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
        secrets: [{ name: 'OPENAI_API_KEY', from: { env: 'OPENAI_API_KEY' } }],
      },
    },
    codehost('docs-agent', { buildOnPush: false }),
    codehost('search-agent', { repo: 'https://codehost.example.com/acme/search-agent-v2' }),
    desired('batch-agent', codehost('batch-agent', { maxScale: 8 }).spec, { suspend: true }),
    codehost('steady-agent'),
    slackProvider(),
    linearProvider(),
  ];
  return plan({
    resources,
    blocked: [
      {
        kind: 'Deployment',
        name: 'billing-agent',
        location: { file: 'apps/billing.yaml', line: 9, column: 7 },
        reason: 'invalid manifest apps/billing.yaml:9:7: max_scale must be a number | fix the value',
      },
    ],
    diagnostics: [
      {
        severity: 'error',
        file: 'apps/billing.yaml',
        line: 9,
        column: 7,
        message: 'spec.source_config.resource_spec.max_scale must be a number, got "four"',
        code: 'E_SCHEMA',
      },
    ],
    live: {
      deployments: [
        supportAgentLive({ secrets: [{ name: 'OPENAI_API_KEY', value: OPENAI_OLD_VALUE }] }),
        codehostLive('docs-agent', 1),
        codehostLive('search-agent', 2),
        codehostLive('batch-agent', 3),
        codehostLive('steady-agent', 4),
        codehostLive('billing-agent', 5),
        codehostLive('legacy-rag', 6),
      ],
    },
    applied: new Map(),
    secretHashes: new Map<string, Record<string, string>>([
      [deploymentKey('support-agent'), { OPENAI_API_KEY: hashOf('support-agent', 'OPENAI_API_KEY', OPENAI_VALUE) }],
      [deploymentKey('new-agent'), { OPENAI_API_KEY: hashOf('new-agent', 'OPENAI_API_KEY', OPENAI_VALUE) }],
      ['OAuthProvider/slack', { client_secret: hashOf('slack', 'client_secret', SLACK_SECRET_VALUE, 'OAuthProvider') }],
    ]),
    discovery: new Map([
      [
        'linear',
        {
          ok: true,
          auth_url: 'https://auth.linear.example/oauth/authorize',
          token_url: 'https://auth.linear.example/oauth/token',
          uses_pkce: true,
          registration: true,
          issuer: 'https://auth.linear.example',
        },
      ],
    ]),
  });
}
