// applyRepositoryResolution: a resolution fills source_config and repo_ref without touching the manifest's resource.
import { describe, expect, it } from 'vitest';
import type { DeploymentResource, DeploymentSpec } from './model.js';
import { applyRepositoryResolution, repositoryNameOf } from './repositories.js';

const ACME = 'aaaaaaaa-0000-4000-8000-000000000001';

function dep(name: string, spec: Partial<DeploymentSpec>): DeploymentResource {
  return {
    kind: 'Deployment',
    name,
    location: { file: 'apps.yaml', line: 1, column: 1 },
    suspend: false,
    spec: { source: 'codehost', ...spec },
  };
}

describe('applyRepositoryResolution', () => {
  const resolved = new Map([
    [
      'support',
      { integration_id: ACME, repo_url: 'https://codehost.example/acme/support-agent', default_branch: 'trunk' },
    ],
  ]);

  it('fills integration_id, repo_url and repo_ref = default branch, without touching the input', () => {
    const input = dep('support', {
      repository: 'acme/support-agent',
      source_config: { build_on_push: true },
      source_revision_config: { graph_config_path: 'g.json' },
    });
    const before = structuredClone(input);
    const out = applyRepositoryResolution(input, resolved);
    expect(out.spec.source_config).toEqual({
      build_on_push: true,
      integration_id: ACME,
      repo_url: 'https://codehost.example/acme/support-agent',
    });
    expect(out.spec.source_revision_config).toEqual({ graph_config_path: 'g.json', repo_ref: 'trunk' });
    expect(input).toEqual(before);
  });

  it('keeps a repo_ref the manifest gives', () => {
    const out = applyRepositoryResolution(
      dep('support', { repository: 'acme/support-agent', source_revision_config: { repo_ref: 'release' } }),
      resolved,
    );
    expect(out.spec.source_revision_config?.repo_ref).toBe('release');
  });

  it('returns a resource without a resolution unchanged', () => {
    const plain = dep('plain', {});
    expect(applyRepositoryResolution(plain, resolved)).toBe(plain);
    const failed = dep('other', { repository: 'acme/ghost' });
    expect(applyRepositoryResolution(failed, resolved)).toBe(failed);
  });
});

describe('repositoryNameOf (export: repo_url back to repository)', () => {
  const integration = (id: string, name: string) => ({ id, installation_id: 1, name });
  const repo = (hostId: string, owner: string, name: string) => ({
    host_integration_id: hostId,
    id: 1,
    name,
    owner,
    url: `https://codehost.example.com/${owner}/${name}`,
    default_branch: 'main',
  });
  const catalog = [
    {
      integration: integration('i-1', 'acme'),
      repositories: [repo('i-1', 'acme', 'agent'), repo('i-1', 'acme', 'shared')],
    },
    { integration: integration('i-2', 'acme-mirror'), repositories: [repo('i-2', 'acme', 'shared')] },
  ];

  it('names owner/name, and the account only when several integrations reach the same repository; undefined when none lists it', () => {
    expect(repositoryNameOf(catalog, 'i-1', 'https://codehost.example.com/acme/agent')).toEqual({
      repository: 'acme/agent',
    });
    expect(repositoryNameOf(catalog, 'i-2', 'https://codehost.example.com/acme/shared')).toEqual({
      repository: 'acme/shared',
      integration: 'acme-mirror',
    });
    expect(repositoryNameOf(catalog, 'i-2', 'https://codehost.example.com/acme/agent')).toBeUndefined();
  });
});
