// The Deployment diff against what the real service fixes at creation: the tier, the listener namespace, internal artifacts.
import { describe, expect, it } from 'vitest';
import { diffDeployment, requestBody } from '../../src/core/kinds/deployment/index.js';
import { parseManifestBytes } from '../../src/core/manifest/parse.js';
import type { DeploymentResource, DeploymentSpec, LiveDeployment } from '../../src/core/model.js';

const INTEGRATION = '3f9d2c4e-1b7a-4e8f-9c61-2a5b7d0e4f13';
const REPO_URL = 'https://codehost.example.com/acme/agent';
const CONTEXT = { secretHashes: {} };

function resource(spec: DeploymentSpec): DeploymentResource {
  return {
    kind: 'Deployment',
    name: 'agent',
    location: { file: 'agent.yaml', line: 4, column: 9 },
    suspend: false,
    spec,
  };
}

function codehost(deploymentType?: 'dev' | 'prod'): DeploymentSpec {
  return {
    source: 'codehost',
    source_config: {
      integration_id: INTEGRATION,
      repo_url: 'https://codehost.example.com/acme/agent',
      ...(deploymentType ? { deployment_type: deploymentType } : {}),
    },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
  };
}

function live(overrides: Partial<LiveDeployment> = {}): LiveDeployment {
  return {
    id: 'e7c1b3a5-2d4f-4e6a-8b0c-1d3f5a7c9e2b',
    name: 'agent',
    source: 'codehost',
    source_config: {
      integration_id: INTEGRATION,
      repo_url: 'https://codehost.example.com/acme/agent',
      deployment_type: 'prod',
    },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
    secrets: [],
    created_at: '2025-01-01T00:00:00Z',
    updated_at: '2025-01-01T00:00:00Z',
    status: 'READY',
    latest_revision_id: null,
    active_revision_id: null,
    ...overrides,
  };
}

describe('the tier (source_config.deployment_type)', () => {
  it("a codehost create names it: the manifest's, or the service's default prod, as a field of the create", () => {
    for (const [declared, sent] of [
      [undefined, 'prod'],
      ['dev', 'dev'],
    ] as const) {
      const diff = diffDeployment(resource(codehost(declared)), undefined, CONTEXT);
      expect(diff.change.fields).toContainEqual({
        path: 'source_config.deployment_type',
        before: null,
        after: sent,
        sensitive: false,
      });
      expect(requestBody(diff, {})).toMatchObject({ source_config: { deployment_type: sent }, secrets: [] });
    }
  });

  it('a change against live is blocked with the reason, never sent', () => {
    const diff = diffDeployment(resource(codehost('dev')), live(), CONTEXT);
    expect(diff.change.action).toBe('blocked');
    expect(diff.change.reason).toBe(
      'source_config.deployment_type cannot be changed after creation (live: "prod", manifest: "dev"); set it back to the live value, or give the deployment a new metadata.name',
    );
    expect(diff.request).toBeUndefined();
  });

  it('the same tier, or a service that does not report one, is no change (a PATCH never carries the tier)', () => {
    expect(diffDeployment(resource(codehost('prod')), live(), CONTEXT).change.action).toBe('noop');
    const unreported = live({
      source_config: { integration_id: INTEGRATION, repo_url: 'https://codehost.example.com/acme/agent' },
    });
    expect(diffDeployment(resource(codehost('dev')), unreported, CONTEXT).change.action).toBe('noop');
  });
});

describe('the tier on every source (docs/official-tool.md: the official tool sends it on every create)', () => {
  const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
  const head = ['apiVersion: converge/v1', 'kind: Deployment', 'metadata:', '  name: agent', 'spec:'];

  it('a manifest of any source may declare it; it is sent on create, and a change against live is blocked', () => {
    for (const [source, revision] of [
      ['internal_docker', {}],
      ['internal_source', {}],
      ['external_docker', { image_uri: 'docker.io/acme/agent:1' }],
      ['internal_template', {}],
    ] as const) {
      const text = [
        ...head,
        `  source: ${source}`,
        '  source_config: { deployment_type: dev }',
        `  source_revision_config: ${JSON.stringify(revision)}`,
        '',
      ].join('\n');
      const parsed = parseManifestBytes('agent.yaml', encode(text), { allowLiteralSecrets: false });
      expect(parsed.diagnostics, source).toEqual([]);
      const spec: DeploymentSpec = {
        source,
        source_config: { deployment_type: 'dev' },
        source_revision_config: revision,
      };
      const created = diffDeployment(resource(spec), undefined, CONTEXT);
      expect(requestBody(created, {}), source).toMatchObject({ source, source_config: { deployment_type: 'dev' } });
      const running = live({ source, source_config: { deployment_type: 'prod' }, source_revision_config: revision });
      const changed = diffDeployment(resource(spec), running, CONTEXT);
      expect(changed.change.action, source).toBe('blocked');
      expect(changed.change.reason, source).toMatch(
        /^source_config.deployment_type cannot be changed after creation \(live: "prod", manifest: "dev"\)/,
      );
      expect(
        diffDeployment(resource({ ...spec, source_config: { deployment_type: 'prod' } }), running, CONTEXT).change
          .action,
        source,
      ).toBe('noop');
    }
  });

  it('a manifest may leave graph_config_path out (a live deployment may lack it): only the write that needs it is blocked, naming it', () => {
    const bare = [...head, '  source: internal_source', '  source_config: { deployment_type: dev }', ''].join('\n');
    expect(parseManifestBytes('agent.yaml', encode(bare), { allowLiteralSecrets: false }).diagnostics).toEqual([]);
    for (const source of ['codehost', 'internal_source'] as const) {
      const revision = source === 'codehost' ? '    repo_ref: main' : '    source_tarball_path: uploads/x/1.tar.gz';
      const text = [
        ...head,
        `  source: ${source}`,
        ...(source === 'codehost' ? ['  repository: acme/agent', '  source_config: { deployment_type: dev }'] : []),
        '  source_revision_config:',
        revision,
        '',
      ].join('\n');
      const parsed = parseManifestBytes('agent.yaml', encode(text), { allowLiteralSecrets: false });
      expect(parsed.diagnostics, source).toEqual([]);
      expect(parsed.resources, source).toHaveLength(1);
    }
    const hint =
      'add source_revision_config.graph_config_path (the path of the graph configuration file, e.g. langgraph.json)';
    // codehost: the live deployment plans as it is; a create is blocked.
    const codehost: DeploymentSpec = {
      source: 'codehost',
      source_config: { integration_id: INTEGRATION, repo_url: REPO_URL },
      source_revision_config: { repo_ref: 'main' },
    };
    const codehostLive = live({
      source: 'codehost',
      source_config: { integration_id: INTEGRATION, repo_url: REPO_URL },
      source_revision_config: { repo_ref: 'main' },
    });
    expect(diffDeployment(resource(codehost), codehostLive, CONTEXT).change.action).toBe('noop');
    expect(
      diffDeployment(resource({ ...codehost, source_revision_config: { repo_ref: 'next' } }), codehostLive, CONTEXT)
        .change.action,
    ).toBe('update');
    const create = diffDeployment(resource(codehost), undefined, CONTEXT);
    expect([create.change.action, create.change.reason, create.request]).toEqual([
      'blocked',
      `creating it needs source_revision_config.graph_config_path, which the manifest leaves out (the service requires it to create a deployment of source codehost); ${hint}`,
      undefined,
    ]);
    // internal_source: blocked wherever the tarball is written without one (its create, a new tarball), unless live holds one.
    const source: DeploymentSpec = {
      source: 'internal_source',
      source_revision_config: { source_tarball_path: 'uploads/x/1.tar.gz' },
    };
    const sourceLive = live({
      source: 'internal_source',
      source_config: {},
      source_revision_config: { source_tarball_path: 'uploads/x/1.tar.gz' },
    });
    expect(diffDeployment(resource(source), sourceLive, CONTEXT).change.action).toBe('noop');
    const created = diffDeployment(resource(source), undefined, CONTEXT).change;
    expect([created.action, created.reason]).toEqual([
      'blocked',
      `creating it (its source_tarball_path is patched right after the create) needs source_revision_config.graph_config_path, which the manifest leaves out and the live deployment lacks (the service requires it with a source_tarball_path, and may refuse any write to a deployment holding one without it); ${hint}`,
    ]);
    // Any write to it (a new tarball, a new replica limit) needs it: the service may check what the deployment holds.
    const newTarball = resource({
      source: 'internal_source',
      source_revision_config: { source_tarball_path: 'uploads/x/2.tar.gz' },
    });
    expect(diffDeployment(newTarball, sourceLive, CONTEXT).change.reason).toMatch(
      /^writing it needs source_revision_config.graph_config_path/,
    );
    const newScale = resource({ ...source, source_config: { resource_spec: { max_scale: 2 } } });
    expect(diffDeployment(newScale, sourceLive, CONTEXT).change.action).toBe('blocked');
    const declaredToo = resource({
      ...source,
      source_config: { resource_spec: { max_scale: 2 } },
      source_revision_config: { ...source.source_revision_config, graph_config_path: 'langgraph.json' },
    });
    expect(diffDeployment(declaredToo, sourceLive, CONTEXT).change.action).toBe('update');
    // Without a tarball anywhere, nothing needs it.
    const bareLive = live({ source: 'internal_source', source_config: {}, source_revision_config: {} });
    expect(
      diffDeployment(
        resource({ source: 'internal_source', source_config: { resource_spec: { max_scale: 2 } } }),
        bareLive,
        CONTEXT,
      ).change.action,
    ).toBe('update');
    const liveWithConfig = {
      ...sourceLive,
      source_revision_config: { ...sourceLive.source_revision_config, graph_config_path: 'langgraph.json' },
    };
    expect(diffDeployment(newTarball, liveWithConfig, CONTEXT).change.action).toBe('update');
    expect(diffDeployment(resource({ source: 'internal_source' }), undefined, CONTEXT).change.action).toBe('create');
  });
});

describe('internal artifacts', () => {
  it('an internal_docker create leaves image_uri out of its body, shows it, and says it is patched in the same job', () => {
    const spec: DeploymentSpec = {
      source: 'internal_docker',
      source_revision_config: { image_uri: 'registry.acme.example/agent:1' },
    };
    const diff = diffDeployment(resource(spec), undefined, CONTEXT);
    expect(diff.change.fields).toContainEqual({
      path: 'source_revision_config.image_uri',
      before: null,
      after: 'registry.acme.example/agent:1',
      sensitive: false,
    });
    expect(requestBody(diff, {})).toEqual({
      name: 'agent',
      source: 'internal_docker',
      source_config: {},
      source_revision_config: {},
      secrets: [],
    });
    expect(diff.change.reason).toBe(
      'created without source_revision_config.image_uri, then patched with it in the same job (the service takes the artifact only by PATCH)',
    );
  });
});

describe('the default-tier warning', () => {
  const head = [
    'apiVersion: converge/v1',
    'kind: Deployment',
    'metadata:',
    '  name: agent',
    'spec:',
    '  source: codehost',
    '  repository: acme/agent',
  ];
  it('is at source_config when the manifest has one, else at spec; the resource stays valid', () => {
    const withConfig = [
      ...head,
      '  source_config:',
      '    build_on_push: true',
      '  source_revision_config:',
      '    graph_config_path: langgraph.json',
      '',
    ].join('\n');
    const without = [...head, '  source_revision_config:', '    graph_config_path: langgraph.json', ''].join('\n');
    for (const [text, line, column] of [
      [withConfig, 8, 3],
      [without, 5, 1],
    ] as const) {
      const result = parseManifestBytes('agent.yaml', new TextEncoder().encode(text), { allowLiteralSecrets: false });
      expect(result.resources).toHaveLength(1);
      expect(result.diagnostics.map((d) => [d.line, d.column, d.severity, d.code])).toEqual([
        [line, column, 'warning', 'W_DEFAULT_TIER'],
      ]);
      expect(result.diagnostics[0]!.message).toBe(
        'spec.source_config.deployment_type is not set: the service will create this codehost deployment as prod (its default), and the tier cannot be changed after creation; to choose another, set spec.source_config.deployment_type to one of dev_free, dev, prod',
      );
    }
    const chosen = [
      ...head,
      '  source_config: { deployment_type: dev }',
      '  source_revision_config: { graph_config_path: langgraph.json }',
      '',
    ].join('\n');
    expect(
      parseManifestBytes('agent.yaml', new TextEncoder().encode(chosen), { allowLiteralSecrets: false }).diagnostics,
    ).toEqual([]);
  });
});
