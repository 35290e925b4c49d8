// The PATCH merge and revision rules of docs/against-the-real-service.md §3 and §4 as a pure function: table tests.
import { describe, expect, test } from 'vitest';
import type { PatchDeploymentRequest } from '../../src/core/wire/schema.js';
import { mergePatch, newDeployment, startsRevision, type WriteContext } from '../../src/emulator/merge.js';
import { sha256Hex, type StoredDeployment } from '../../src/emulator/records.js';

const INTEGRATION = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const REPO = 'https://codehost.example.com/acme/support-agent';

function context(overrides: Partial<WriteContext> = {}): WriteContext {
  let n = 0;
  return {
    now: 1_000_000,
    buildMs: 500,
    newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
    repos: {
      hasIntegration: (id) => id === INTEGRATION,
      hasRepository: (id, url) => id === INTEGRATION && url === REPO,
    },
    uploads: { ownerOf: () => undefined, uploaded: () => false },
    anyTarballPath: false,
    secretsPatch: 'merge',
    lenient: false,
    outcome: () => 'DEPLOYED',
    ...overrides,
  };
}

function stored(overrides: Partial<StoredDeployment> = {}): StoredDeployment {
  return {
    id: 'dddddddd-dddd-4ddd-8ddd-dddddddddddd',
    tenant_id: 'tttttttt',
    name: 'support-agent',
    source: 'codehost',
    source_config: {
      integration_id: INTEGRATION,
      repo_url: REPO,
      build_on_push: true,
      resource_spec: { min_scale: 1, max_scale: 2 },
      deployment_type: 'dev',
    },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
    secrets: [
      { name: 'A', sha256: sha256Hex('a'), value: 'a' },
      { name: 'B', sha256: sha256Hex('b'), value: 'b' },
    ],
    secret_references: null,
    status: 'READY',
    created_at: 1,
    updated_at: 1,
    latest_revision_id: 'rev-1',
    active_revision_id: 'rev-1',
    build_ready_at: null,
    image_version: null,
    deployment_type: 'dev',
    remote_reconciled: false,
    tag_value_ids: [],
    revisions: [
      {
        id: 'rev-1',
        created_at: 1,
        revision_source: null,
        source_revision_config: { repo_ref: 'main' },
        build_started_at: 1,
        build_ms: 0,
        ends_at: 1,
        outcome: 'DEPLOYED',
        failure: null,
        tracked_packages: null,
        install_command: null,
        build_command: null,
      },
    ],
    is_preview: false,
    delete_at: null,
    delete_tracing_project: false,
    ...overrides,
  };
}

describe('startsRevision', () => {
  const cases: Array<[string, PatchDeploymentRequest, boolean]> = [
    ['empty body', {}, false],
    ['build_on_push only', { source_config: { build_on_push: false } }, false],
    ['custom_url and install_command', { source_config: { custom_url: 'https://x', install_command: 'make' } }, false],
    ['null revision fields', { source_revision_config: { repo_ref: null, image_uri: null } }, false],
    ['empty secrets', { secrets: [] }, false],
    ['null secrets', { secrets: null }, false],
    ['null resource_spec', { source_config: { resource_spec: null } }, false],
    ['repo_ref unchanged still counts', { source_revision_config: { repo_ref: 'main' } }, true],
    ['graph_config_path', { source_revision_config: { graph_config_path: 'g.json' } }, true],
    ['non-empty secrets', { secrets: [{ name: 'A', value: 'a' }] }, true],
    ['resource_spec', { source_config: { resource_spec: { min_scale: 1 } } }, true],
    ['empty resource_spec', { source_config: { resource_spec: {} } }, true],
    ['secret_references', { secret_references: [] }, true],
    ['revision_source', { revision_source: 'codehost' }, true],
  ];
  test.each(cases)('%s', (_label, patch, expected) => {
    expect(startsRevision(patch)).toBe(expected);
  });
});

describe('mergePatch', () => {
  test('top-level merge: given fields set, others kept, null never clears', () => {
    const result = mergePatch(
      stored(),
      {
        source_config: { build_on_push: false, custom_url: null, install_command: 'pip install .' },
        source_revision_config: { graph_config_path: null },
      },
      context(),
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const { next, newRevision, changed } = result.value;
    expect(next.source_config).toEqual({
      integration_id: INTEGRATION,
      repo_url: REPO,
      build_on_push: false,
      resource_spec: { min_scale: 1, max_scale: 2 },
      deployment_type: 'dev',
      install_command: 'pip install .',
    });
    expect(next.source_revision_config).toEqual({ repo_ref: 'main', graph_config_path: 'langgraph.json' });
    expect(newRevision).toBe(false);
    expect(changed).toBe(true);
    expect(next.latest_revision_id).toBe('rev-1');
    expect(next.updated_at).toBe(1_000_000);
  });

  test('resource_spec is replaced whole and starts a revision that activates only after the build', () => {
    const result = mergePatch(stored(), { source_config: { resource_spec: { max_scale: 5 } } }, context());
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    const { next, newRevision } = result.value;
    expect(next.source_config.resource_spec).toEqual({ max_scale: 5 });
    expect(newRevision).toBe(true);
    expect(next.latest_revision_id).toBe('00000000-0000-4000-8000-000000000001');
    expect(next.active_revision_id).toBe('rev-1');
    expect(next.build_ready_at).toBe(1_000_500);
    expect(next.revisions.map((r) => r.id)).toEqual(['rev-1', '00000000-0000-4000-8000-000000000001']);
  });

  test('with buildMs 0 the new revision is active at once', () => {
    const result = mergePatch(stored(), { source_revision_config: { repo_ref: 'release' } }, context({ buildMs: 0 }));
    if (!result.ok) throw new Error('failed');
    expect(result.value.next.active_revision_id).toBe(result.value.next.latest_revision_id);
    expect(result.value.next.build_ready_at).toBeNull();
  });

  test('secrets: absent or [] keep the stored ones; non-empty upsert by name', () => {
    for (const secrets of [undefined, null, []]) {
      const kept = mergePatch(stored(), { secrets, source_config: { custom_url: 'https://a' } }, context());
      if (!kept.ok) throw new Error('failed');
      expect(kept.value.next.secrets.map((s) => s.name)).toEqual(['A', 'B']);
      expect(kept.value.newRevision).toBe(false);
    }
    const upserted = mergePatch(
      stored(),
      {
        secrets: [
          { name: 'B', value: 'b2' },
          { name: 'C', value: 'c' },
        ],
      },
      context(),
    );
    if (!upserted.ok) throw new Error('failed');
    expect(upserted.value.next.secrets.map((s) => [s.name, s.value])).toEqual([
      ['A', 'a'],
      ['B', 'b2'],
      ['C', 'c'],
    ]);
    expect(upserted.value.next.secrets[1]!.sha256).toBe(sha256Hex('b2'));
    expect(upserted.value.newRevision).toBe(true);
  });

  test('secrets upsert keeps the stored order and appends new names in the order given', () => {
    const current = stored({ secrets: [{ name: 'X', sha256: sha256Hex('x'), value: 'x' }] });
    const result = mergePatch(
      current,
      {
        secrets: [
          { name: 'Y', value: '1' },
          { name: 'X', value: '2' },
        ],
      },
      context(),
    );
    if (!result.ok) throw new Error('failed');
    expect(result.value.next.secrets.map((s) => [s.name, s.value])).toEqual([
      ['X', '2'],
      ['Y', '1'],
    ]);
  });

  test('secretsPatch replace: a non-empty list replaces the stored set; [] still keeps it', () => {
    const replaced = mergePatch(
      stored(),
      { secrets: [{ name: 'C', value: 'c' }] },
      context({ secretsPatch: 'replace' }),
    );
    if (!replaced.ok) throw new Error('failed');
    expect(replaced.value.next.secrets.map((s) => [s.name, s.value])).toEqual([['C', 'c']]);
    const kept = mergePatch(
      stored(),
      { secrets: [], source_config: { custom_url: 'https://a' } },
      context({ secretsPatch: 'replace' }),
    );
    if (!kept.ok) throw new Error('failed');
    expect(kept.value.next.secrets.map((s) => s.name)).toEqual(['A', 'B']);
  });

  test('listener_config.k8s_namespace is immutable; an empty or null one keeps it', () => {
    const docker = stored({
      source: 'external_docker',
      source_config: { listener_config: { k8s_namespace: 'vision' } },
      source_revision_config: { image_uri: 'img:1' },
    });
    for (const listener of [{ k8s_namespace: 'vision' }, { k8s_namespace: null }, {}]) {
      const same = mergePatch(
        docker,
        { source_config: { listener_config: listener, custom_url: 'https://x' } },
        context(),
      );
      if (!same.ok) throw new Error(JSON.stringify(same.error));
      expect(same.value.next.source_config.listener_config).toEqual({ k8s_namespace: 'vision' });
    }
    const changed = mergePatch(docker, { source_config: { listener_config: { k8s_namespace: 'risk' } } }, context());
    expect(changed.ok).toBe(false);
    if (!changed.ok)
      expect(changed.error).toMatchObject({
        status: 400,
        detail: expect.stringMatching(/listener_config.k8s_namespace cannot be changed/),
      });
  });

  test('a deployment being deleted, or of an unknown source, refuses writes with 400', () => {
    for (const current of [stored({ status: 'AWAITING_DELETE' }), stored({ source: 'future_source' })]) {
      const result = mergePatch(current, { source_config: { build_on_push: false } }, context());
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error.status).toBe(400);
    }
  });

  test('an empty PATCH changes nothing (not even updated_at)', () => {
    const current = stored();
    const result = mergePatch(current, {}, context());
    if (!result.ok) throw new Error('failed');
    expect(result.value).toEqual({ next: current, newRevision: false, changed: false });
  });

  test('same values of immutable fields are accepted; changes answer 400', () => {
    const same = mergePatch(
      stored(),
      { source_config: { integration_id: INTEGRATION.toUpperCase(), repo_url: REPO } },
      context(),
    );
    expect(same.ok).toBe(true);
    const cases: PatchDeploymentRequest[] = [
      { source_config: { integration_id: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb' } },
      { source_config: { repo_url: 'https://codehost.example.com/acme/other' } },
      { source_config: { listener_id: 'cccccccc-cccc-4ccc-8ccc-cccccccccccc' } },
    ];
    for (const patch of cases) {
      const result = mergePatch(stored(), patch, context());
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.error.status).toBe(400);
      expect(result.error.detail).toMatch(/cannot be changed after creation/);
    }
  });

  test('fields the source refuses answer 422 with their loc', () => {
    const docker = stored({
      source: 'external_docker',
      source_config: {},
      source_revision_config: { image_uri: 'img:1' },
    });
    const cases: Array<[StoredDeployment, PatchDeploymentRequest, Array<string | number>]> = [
      [docker, { source_revision_config: { repo_ref: 'main' } }, ['body', 'source_revision_config', 'repo_ref']],
      [docker, { source_config: { repo_url: REPO } }, ['body', 'source_config', 'repo_url']],
      [docker, { revision_source: 'internal_docker' }, ['body', 'revision_source']],
      [
        stored(),
        { secret_references: [{ name: 'a', secret_name: 'b', secret_key: 'c' }] },
        ['body', 'secret_references'],
      ],
      [stored(), { source_revision_config: { image_uri: 'img:2' } }, ['body', 'source_revision_config', 'image_uri']],
      [
        stored(),
        {
          secrets: [
            { name: 'A', value: '1' },
            { name: 'A', value: '2' },
          ],
        },
        ['body', 'secrets', 1, 'name'],
      ],
      [
        stored(),
        { source_config: { resource_spec: { min_scale: 3, max_scale: 1 } } },
        ['body', 'source_config', 'resource_spec', 'min_scale'],
      ],
    ];
    for (const [current, patch, loc] of cases) {
      const result = mergePatch(current, patch, context());
      expect(result.ok, JSON.stringify(patch)).toBe(false);
      if (result.ok) continue;
      expect(result.error.status).toBe(422);
      expect((result.error.detail as Array<{ loc: unknown }>)[0]!.loc).toEqual(loc);
    }
  });

  test('revision_source overrides the source of one revision and must fit the deployment', () => {
    const docker = mergePatch(
      stored(),
      { revision_source: 'internal_docker', source_revision_config: { image_uri: 'registry/x:1' } },
      context(),
    );
    if (!docker.ok) throw new Error(JSON.stringify(docker.error));
    expect(docker.value.newRevision).toBe(true);
    expect(docker.value.next.revisions.at(-1)!.revision_source).toBe('internal_docker');
    const missing = mergePatch(stored(), { revision_source: 'internal_source' }, context());
    expect(missing.ok).toBe(false);
    if (!missing.ok)
      expect(JSON.stringify(missing.error.detail)).toMatch(
        /source_tarball_path is required for revision_source internal_source/,
      );
    const template = stored({ source: 'internal_template', source_config: {}, source_revision_config: {} });
    const noRepo = mergePatch(template, { revision_source: 'codehost' }, context());
    expect(noRepo.ok).toBe(false);
    if (!noRepo.ok)
      expect(JSON.stringify(noRepo.error.detail)).toMatch(/integration_id is required for revision_source codehost/);
  });

  test('external_docker takes secret_references, replaced whole', () => {
    const docker = stored({
      source: 'external_docker',
      source_config: {},
      source_revision_config: { image_uri: 'img:1' },
      secret_references: [{ name: 'a', secret_name: 's', secret_key: 'k' }],
    });
    const result = mergePatch(
      docker,
      { secret_references: [{ name: 'b', secret_name: 's2', secret_key: 'k2' }] },
      context(),
    );
    if (!result.ok) throw new Error('failed');
    expect(result.value.next.secret_references).toEqual([{ name: 'b', secret_name: 's2', secret_key: 'k2' }]);
    expect(result.value.newRevision).toBe(true);
  });
});

describe('newDeployment', () => {
  test('a codehost deployment starts AWAITING_DATABASE with a latest revision and no active one', () => {
    const result = newDeployment(
      't',
      {
        name: 'support-agent',
        source: 'codehost',
        source_config: { integration_id: INTEGRATION, repo_url: REPO },
        source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
        secrets: [],
      },
      context(),
    );
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    expect(result.value.status).toBe('AWAITING_DATABASE');
    expect(result.value.active_revision_id).toBeNull();
    expect(result.value.latest_revision_id).not.toBeNull();
    expect(result.value.build_ready_at).toBe(1_000_500);
  });

  const bad: Array<[string, Record<string, unknown>, number, RegExp]> = [
    ['uppercase name', { name: 'Support', source: 'internal_template' }, 422, /lowercase letters/],
    ['name starting with a digit', { name: '1bot', source: 'internal_template' }, 422, /starting with a letter/],
    [
      'codehost without repo',
      { name: 'a', source: 'codehost', source_revision_config: { repo_ref: 'main' } },
      422,
      /integration_id is required/,
    ],
    [
      'codehost without repo_ref',
      { name: 'a', source: 'codehost', source_config: { integration_id: INTEGRATION, repo_url: REPO } },
      422,
      /repo_ref is required/,
    ],
    [
      'codehost with unknown integration',
      {
        name: 'a',
        source: 'codehost',
        source_config: { integration_id: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb', repo_url: REPO },
        source_revision_config: { repo_ref: 'main', graph_config_path: 'g.json' },
      },
      400,
      /Integration .* not found/,
    ],
    [
      'codehost with a repo outside the integration',
      {
        name: 'a',
        source: 'codehost',
        source_config: { integration_id: INTEGRATION, repo_url: 'https://codehost.example.com/x/y' },
        source_revision_config: { repo_ref: 'main', graph_config_path: 'g.json' },
      },
      400,
      /not reachable through integration/,
    ],
    [
      'codehost without graph_config_path',
      {
        name: 'a',
        source: 'codehost',
        source_config: { integration_id: INTEGRATION, repo_url: REPO },
        source_revision_config: { repo_ref: 'main' },
      },
      422,
      /graph_config_path is required for source codehost/,
    ],
    [
      'internal_source with a tarball but no graph_config_path',
      { name: 'a', source: 'internal_source', source_revision_config: { source_tarball_path: 'x.tgz' } },
      422,
      /graph_config_path is required for source internal_source/,
    ],
    [
      'internal_source with a tarball path the service never handed out',
      {
        name: 'a',
        source: 'internal_source',
        source_revision_config: { source_tarball_path: 'x.tgz', graph_config_path: 'g.json' },
      },
      400,
      /was not issued for a deployment that does not exist yet/,
    ],
    [
      'external_docker with graph_config_path',
      {
        name: 'a',
        source: 'external_docker',
        source_revision_config: { image_uri: 'i:1', graph_config_path: 'g.json' },
      },
      422,
      /graph_config_path is not allowed for source external_docker/,
    ],
    ['external_docker without image', { name: 'a', source: 'external_docker' }, 422, /image_uri is required/],
    [
      'external_docker with repo fields',
      {
        name: 'a',
        source: 'external_docker',
        source_config: { repo_url: REPO },
        source_revision_config: { image_uri: 'i', repo_ref: 'main' },
      },
      422,
      /repo_url is not allowed/,
    ],
    [
      'internal_template with a repository',
      { name: 'a', source: 'internal_template', source_config: { integration_id: INTEGRATION } },
      422,
      /integration_id is not allowed/,
    ],
    [
      'secret_references on codehost',
      { name: 'a', source: 'internal_template', secret_references: [{ name: 'a', secret_name: 'b', secret_key: 'c' }] },
      422,
      /secret_references apply only to source external_docker/,
    ],
  ];
  test.each(bad)('%s', (_label, request, status, message) => {
    const result = newDeployment('t', request as never, context());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.status).toBe(status);
    expect(JSON.stringify(result.error.detail)).toMatch(message);
  });

  test('every source accepts its minimal valid request', () => {
    const good = [
      {
        name: 'a',
        source: 'external_docker',
        source_revision_config: { image_uri: 'i:1' },
        secret_references: [{ name: 'a', secret_name: 'b', secret_key: 'c' }],
      },
      { name: 'b', source: 'internal_docker', source_revision_config: { image_uri: 'i:1' } },
      { name: 'c', source: 'internal_source' },
      { name: 'd', source: 'internal_template' },
    ];
    for (const request of good) expect(newDeployment('t', request as never, context()).ok, request.source).toBe(true);
  });

  test('every source takes deployment_type (the official tool sends it on every create); absent, the service chooses prod', () => {
    for (const source of ['external_docker', 'internal_docker', 'internal_source', 'internal_template']) {
      const revision = source === 'external_docker' ? { image_uri: 'i:1' } : {};
      const tier = newDeployment(
        't',
        { name: 'a', source, source_config: { deployment_type: 'dev' }, source_revision_config: revision } as never,
        context(),
      );
      if (!tier.ok) throw new Error(`${source}: ${JSON.stringify(tier.error)}`);
      expect(tier.value.source_config.deployment_type, source).toBe('dev');
      expect(tier.value.deployment_type, source).toBe('dev');
      const changed = mergePatch(tier.value, { source_config: { deployment_type: 'prod' } }, context());
      expect(changed.ok ? 200 : changed.error.status, source).toBe(400);
      const plain = newDeployment('t', { name: 'b', source, source_revision_config: revision } as never, context());
      if (!plain.ok) throw new Error(source);
      expect(plain.value.deployment_type, source).toBe('prod');
    }
  });

  test('internal_source: graph_config_path is required once a tarball is sent, and only a tarball the service handed out is taken', () => {
    const created = newDeployment(
      't',
      {
        name: 'up',
        source: 'internal_source',
        source_config: { deployment_type: 'dev' },
        source_revision_config: {},
        secrets: [],
      } as never,
      context(),
    );
    if (!created.ok) throw new Error(JSON.stringify(created.error));
    const issued = `uploads/${created.value.id}/one.tar.gz`;
    const uploads = {
      ownerOf: (path: string) => (path === issued ? created.value.id : undefined),
      uploaded: () => true,
    };
    const withoutConfig = mergePatch(
      created.value,
      { revision_source: 'internal_source', source_revision_config: { source_tarball_path: issued } },
      context({ uploads }),
    );
    expect(withoutConfig.ok ? '' : JSON.stringify(withoutConfig.error.detail)).toMatch(/graph_config_path is required/);
    const foreign = mergePatch(
      created.value,
      { source_revision_config: { source_tarball_path: 'uploads/elsewhere.tgz', graph_config_path: 'g.json' } },
      context({ uploads }),
    );
    expect(foreign.ok ? 200 : foreign.error.status).toBe(400);
    expect(
      mergePatch(
        created.value,
        { source_revision_config: { source_tarball_path: 'uploads/elsewhere.tgz', graph_config_path: 'g.json' } },
        context({ anyTarballPath: true }),
      ).ok,
    ).toBe(true);
    const good = mergePatch(
      created.value,
      {
        revision_source: 'internal_source',
        source_revision_config: { source_tarball_path: issued, graph_config_path: 'g.json' },
        source_config: { install_command: 'uv sync' },
        tracked_packages: ['langgraph:>=0.3'],
      },
      context({ uploads }),
    );
    if (!good.ok) throw new Error(JSON.stringify(good.error));
    const revision = good.value.next.revisions.at(-1)!;
    expect(revision).toMatchObject({
      revision_source: 'internal_source',
      tracked_packages: ['langgraph:>=0.3'],
      install_command: 'uv sync',
      build_command: null,
      outcome: 'DEPLOYED',
      failure: null,
    });
    // The same path again (the one it holds) is taken; a handed-out path never uploaded builds and fails, saying why.
    expect(mergePatch(good.value.next, { source_revision_config: { source_tarball_path: issued } }, context()).ok).toBe(
      true,
    );
    const missing = mergePatch(
      created.value,
      { source_revision_config: { source_tarball_path: issued, graph_config_path: 'g.json' } },
      context({ uploads: { ...uploads, uploaded: () => false } }),
    );
    if (!missing.ok) throw new Error(JSON.stringify(missing.error));
    expect(missing.value.next.revisions.at(-1)).toMatchObject({ outcome: 'BUILD_FAILED', failure: 'tarball-missing' });
  });

  test('internal_docker and internal_source are created without their artifact: no revision until a PATCH sets it', () => {
    for (const request of [
      { name: 'pushed', source: 'internal_docker' },
      { name: 'uploaded', source: 'internal_source', source_revision_config: {} },
    ]) {
      const created = newDeployment('t', request as never, context());
      if (!created.ok) throw new Error(JSON.stringify(created.error));
      expect(created.value.latest_revision_id).toBeNull();
      expect(created.value.revisions).toEqual([]);
      const artifact =
        request.source === 'internal_docker'
          ? { image_uri: 'registry/x:1' }
          : { source_tarball_path: 'uploads/x.tgz', graph_config_path: 'g.json' };
      const patched = mergePatch(
        created.value,
        { source_revision_config: artifact },
        context({ anyTarballPath: true }),
      );
      if (!patched.ok) throw new Error(JSON.stringify(patched.error));
      expect(patched.value.newRevision).toBe(true);
      expect(patched.value.next.latest_revision_id).toBe(patched.value.next.revisions[0]!.id);
    }
  });

  test('codehost: deployment_type defaults to prod, is kept as given, and cannot change', () => {
    const base = {
      name: 'a',
      source: 'codehost',
      source_config: { integration_id: INTEGRATION, repo_url: REPO },
      source_revision_config: { repo_ref: 'main', graph_config_path: 'g.json' },
      secrets: [],
    };
    const plain = newDeployment('t', base as never, context());
    if (!plain.ok) throw new Error('failed');
    expect(plain.value.source_config.deployment_type).toBe('prod');
    expect(plain.value.deployment_type).toBe('prod');
    const tier = newDeployment(
      't',
      { ...base, source_config: { ...base.source_config, deployment_type: 'dev_free_zero' } } as never,
      context(),
    );
    if (!tier.ok) throw new Error('failed');
    expect(tier.value.source_config.deployment_type).toBe('dev_free_zero');
    expect(mergePatch(tier.value, { source_config: { deployment_type: 'dev_free_zero' } }, context()).ok).toBe(true);
    const changed = mergePatch(tier.value, { source_config: { deployment_type: 'prod' } }, context());
    expect(changed.ok).toBe(false);
    if (!changed.ok) {
      expect(changed.error.status).toBe(400);
      expect(changed.error.detail).toMatch(
        /source_config.deployment_type cannot be changed after creation \(it is "dev_free_zero"\)/,
      );
    }
  });

  test('lenient: graph_config_path neither required on create nor refused', () => {
    const lenient = context({ lenient: true });
    expect(
      newDeployment(
        't',
        {
          name: 'a',
          source: 'codehost',
          source_config: { integration_id: INTEGRATION, repo_url: REPO },
          source_revision_config: { repo_ref: 'main' },
        } as never,
        lenient,
      ).ok,
    ).toBe(true);
    expect(
      newDeployment(
        't',
        {
          name: 'b',
          source: 'external_docker',
          source_revision_config: { image_uri: 'i:1', graph_config_path: 'g.json' },
        } as never,
        lenient,
      ).ok,
    ).toBe(true);
  });
});
