// Realistic desired and live resources for the plan and renderer tests (no secret value ever enters plan()).
import { secretHash } from '../../src/core/hash.js';
import type {
  AppliedRecord,
  DeploymentResource,
  DeploymentSpec,
  LiveDeployment,
  ProviderResource,
} from '../../src/core/model.js';
import { resourceKey } from '../../src/core/model.js';

export const TENANT = '6c1f3a52-93e1-4c0e-9a55-0d8f2f1a7b21';
export const INTEGRATION = '3f9d2c4e-1b7a-4e8f-9c61-2a5b7d0e4f13';
export const OTHER_INTEGRATION = '8a2e6b1d-5c3f-4d7a-b9e0-6f1c2d3e4a5b';
export const LISTENER = 'c4d5e6f7-0a1b-4c2d-8e3f-9a0b1c2d3e4f';

/** Known secret values: the tests assert that neither they nor their hashes reach any rendering. */
export const OPENAI_VALUE = 'sk-proj-4fQ9xT2mB7vL0pR8sK3wN6yH1jD5cE';
export const OPENAI_OLD_VALUE = 'sk-proj-old-8Hk2Lq9Zp3Xv6Rt1Yw4Mn7Bc';
export const SLACK_SECRET_VALUE = 'f3c9a1e7b2d84f60a5c1e9b7d3f2a8c4';

export function deploymentKey(name: string): string {
  return resourceKey('Deployment', name);
}

export function hashOf(
  name: string,
  secret: string,
  value: string,
  kind: 'Deployment' | 'OAuthProvider' = 'Deployment',
): string {
  return secretHash(resourceKey(kind, name), secret, value);
}

export function desired(
  name: string,
  spec: DeploymentSpec,
  options: { suspend?: boolean; file?: string } = {},
): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: options.file ?? `apps/${name}.yaml`, line: 1, column: 1 },
    suspend: options.suspend ?? false,
    spec,
  };
}

/** The codehost manifest most tests start from. */
export function supportAgentSpec(): DeploymentSpec {
  return {
    source: 'codehost',
    source_config: {
      integration_id: INTEGRATION,
      repo_url: 'https://codehost.example.com/acme/support-agent',
      build_on_push: true,
      resource_spec: { min_scale: 1, max_scale: 2, cpu: 0.5, memory_mb: 1024 },
    },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'agent/graph.json' },
    secrets: [{ name: 'OPENAI_API_KEY', from: { env: 'OPENAI_API_KEY' } }],
  };
}

let serial = 0;

function uuid(n: number): string {
  const hex = n.toString(16).padStart(12, '0');
  return `0b5e7c1a-4d2f-4a8b-9c3e-${hex}`;
}

/** A live deployment as the list endpoint returns it (after the wire schema's transforms). */
export function live(name: string, patch: Partial<LiveDeployment> = {}): LiveDeployment {
  serial += 1;
  return {
    id: uuid(serial),
    tenant_id: TENANT,
    name,
    source: 'codehost',
    source_config: {},
    source_revision_config: {},
    secrets: [],
    created_at: '2025-01-14T09:12:44.120Z',
    updated_at: '2025-02-03T16:40:02.881Z',
    status: 'READY',
    latest_revision_id: 'a1f0c9d2-7b3e-4c5a-8d6f-0e1b2c3d4e5f',
    active_revision_id: 'a1f0c9d2-7b3e-4c5a-8d6f-0e1b2c3d4e5f',
    image_version: null,
    ...patch,
  };
}

/** The live twin of supportAgentSpec(), with service-side extras the manifest does not declare. */
export function supportAgentLive(
  patch: Partial<LiveDeployment> = {},
  id = 'd2a4f6b8-1c3e-4a5b-9d7f-0a2c4e6f8b1d',
): LiveDeployment {
  return live('support-agent', {
    id,
    source_config: {
      integration_id: INTEGRATION,
      repo_url: 'https://codehost.example.com/acme/support-agent',
      build_on_push: true,
      custom_url: 'https://support.acme.example',
      listener_id: null,
      resource_spec: {
        min_scale: 1,
        max_scale: 2,
        cpu: 0.5,
        memory_mb: 1024,
        memory_limit_mb: 2048,
        labels: { team: 'support' },
      },
    },
    source_revision_config: {
      repo_ref: 'main',
      graph_config_path: 'agent/graph.json',
      image_uri: null,
      source_tarball_path: null,
      repo_commit_sha: '9f2c1e7a4b3d',
    },
    secrets: [{ name: 'OPENAI_API_KEY', value: OPENAI_VALUE }],
    ...patch,
  });
}

export function applied(secrets: Record<string, string>, definitionHash?: string): AppliedRecord {
  const record: AppliedRecord = { secrets, appliedAt: '2025-02-03T16:41:00.000Z' };
  if (definitionHash !== undefined) record.definitionHash = definitionHash;
  return record;
}

export function slackProvider(options: { suspend?: boolean } = {}): ProviderResource {
  return {
    kind: 'OAuthProvider',
    name: 'slack',
    location: { file: 'providers/slack.yaml', line: 1, column: 1 },
    suspend: options.suspend ?? false,
    spec: {
      mode: 'manual',
      name: 'Slack',
      client_id: '123.456',
      client_secret: { env: 'SLACK_CLIENT_SECRET' },
      auth_url: 'https://slack.com/oauth/v2/authorize',
      token_url: 'https://slack.com/api/oauth.v2.access',
      provider_type: 'slack',
    },
  };
}

export function linearProvider(): ProviderResource {
  return {
    kind: 'OAuthProvider',
    name: 'linear',
    location: { file: 'providers/linear.yaml', line: 1, column: 1 },
    suspend: false,
    spec: { mode: 'mcp', name: 'Linear', mcp_server_url: 'https://mcp.linear.example/mcp' },
  };
}
