// Deployments through real HTTP on loopback: create, validation, conflicts, PATCH rules, revisions, secrets, concurrency.
import { afterEach, describe, expect, test } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/server.js';
import {
  ACME,
  BILLING_URL,
  OTHER_TENANT,
  RESEARCH_URL,
  LABS,
  codehostBody,
  dockerBody,
  start,
  templateBody,
  until,
  type Client,
} from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let running: RunningEmulator | undefined;

afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function open(options: Parameters<typeof start>[0] = {}): Promise<Client> {
  const { emulator, api } = await start(options);
  running = emulator;
  return api;
}

async function getById(api: Client, id: string, headers: Record<string, string> = {}): Promise<any> {
  const list = await api.call('GET', `/v2/deployments?deployment_ids=${id}`, undefined, headers);
  expect(list.status).toBe(200);
  return list.body.resources[0];
}

describe('POST /v2/deployments', () => {
  test('answers 201 with the spec Deployment; the build finishes after buildMs (AWAITING_DATABASE, then READY)', async () => {
    const api = await open({ buildMs: 80 });
    const created = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('support-agent', { secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-1' }] }),
    );
    expect(created.status).toBe(201);
    const d = created.body;
    expect(d.id).toMatch(UUID);
    expect(d.tenant_id).toBe('11111111-1111-4111-8111-111111111111');
    expect(d.name).toBe('support-agent');
    expect(d.source).toBe('codehost');
    expect(new Date(d.created_at).toISOString()).toBe(d.created_at);
    expect(d.updated_at).toBe(d.created_at);
    expect(d.status).toBe('AWAITING_DATABASE');
    expect(d.latest_revision_id).toMatch(UUID);
    expect(d.active_revision_id).toBeNull();
    expect(d.secrets).toEqual([{ name: 'OPENAI_API_KEY', value: '********' }]);
    expect(d.secret_references).toBeNull();
    expect(d.image_version).toBeNull();
    expect(Object.keys(d.source_config).sort()).toEqual([
      'build_command',
      'build_on_push',
      'custom_url',
      'deployment_type',
      'install_command',
      'integration_id',
      'listener_config',
      'listener_id',
      'repo_url',
      'resource_spec',
    ]);
    expect(d.source_revision_config.repo_commit_sha).toMatch(/^[0-9a-f]{40}$/);
    const ready = await until('the build to finish', async () => {
      const now = await getById(api, d.id);
      return now.status === 'READY' ? now : undefined;
    });
    expect(ready.active_revision_id).toBe(d.latest_revision_id);
  });

  test('repo_commit_sha is derived from the ref (same ref, same sha) and only for codehost', async () => {
    const api = await open();
    const a = await api.call('POST', '/v2/deployments', codehostBody('a'));
    const b = await api.call('POST', '/v2/deployments', codehostBody('b'));
    const c = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('c', { source_revision_config: { repo_ref: 'release', graph_config_path: 'g.json' } }),
    );
    const docker = await api.call('POST', '/v2/deployments', dockerBody('d'));
    expect(a.body.source_revision_config.repo_commit_sha).toBe(b.body.source_revision_config.repo_commit_sha);
    expect(c.body.source_revision_config.repo_commit_sha).not.toBe(a.body.source_revision_config.repo_commit_sha);
    expect(docker.body.source_revision_config.repo_commit_sha).toBeNull();
  });

  test('409 when a deployment or a tracing project holds the name; each deployment creates its tracing project', async () => {
    const api = await open();
    expect((await api.call('POST', '/v2/deployments', codehostBody('support-agent'))).status).toBe(201);
    const again = await api.call('POST', '/v2/deployments', dockerBody('support-agent'));
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/deployment named "support-agent" already exists/);
    const tracing = await api.call('POST', '/v2/deployments', dockerBody('taken-by-tracing'));
    expect(tracing.status).toBe(409);
    expect(tracing.body.detail).toMatch(/tracing project named "taken-by-tracing"/);
    expect(
      running!.store
        .tracingProjects()
        .map((p) => p.name)
        .sort(),
    ).toEqual(['support-agent', 'taken-by-tracing']);
    // Names are per tenant.
    const other = await api.call('POST', '/v2/deployments', dockerBody('support-agent'), {
      'x-tenant-id': OTHER_TENANT,
    });
    expect(other.status).toBe(201);
    expect(other.body.tenant_id).toBe(OTHER_TENANT);
  });

  test('concurrent creates of one name: exactly one 201, the others 409', async () => {
    const api = await open();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => api.call('POST', '/v2/deployments', dockerBody('racer'))),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(19);
  });

  test("unknown request fields are ignored, never 422 (the service's framework default); the known ones keep their types", async () => {
    const api = await open();
    const created = await api.call(
      'POST',
      '/v2/deployments',
      templateBody('loose', {
        colour: 'red',
        source_config: { resource_spec: { max_scale: 2, turbo: true } },
        source_revision_config: { repo_commit_sha: 'abc' },
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).not.toHaveProperty('colour');
    expect(created.body.source_config.resource_spec).toMatchObject({ max_scale: 2 });
    expect(created.body.source_config.resource_spec).not.toHaveProperty('turbo');
    const patched = await api.call('PATCH', `/v2/deployments/${created.body.id}`, {
      labels: { team: 'x' },
      source_config: { resource_spec: { max_scale: 3 }, future_field: 1 },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.source_config.resource_spec.max_scale).toBe(3);
    const typed = await api.call('PATCH', `/v2/deployments/${created.body.id}`, {
      colour: 'red',
      source_config: { resource_spec: { max_scale: 'lots' } },
    });
    expect(typed.status).toBe(422);
    expect(typed.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'source_config', 'resource_spec', 'max_scale'] }),
    ]);
  });

  test('422 in the FastAPI shape for invalid bodies', async () => {
    const api = await open();
    const cases: Array<[unknown, Array<string | number>, string]> = [
      [{ source: 'codehost' }, ['body', 'name'], 'missing'],
      [{ name: 'a' }, ['body', 'source'], 'missing'],
      [{ name: 'a', source: 'svn' }, ['body', 'source'], 'enum'],
      [templateBody('a', { secrets: [{ name: 'X' }] }), ['body', 'secrets', 0, 'value'], 'missing'],
      [templateBody('a', { name: 7 }), ['body', 'name'], 'string_type'],
      [
        templateBody('a', { source_config: { resource_spec: { max_scale: -1 } } }),
        ['body', 'source_config', 'resource_spec', 'max_scale'],
        'greater_than_equal',
      ],
      [
        templateBody('a', { source_config: { integration_id: 'nope' } }),
        ['body', 'source_config', 'integration_id'],
        'uuid_parsing',
      ],
      [
        templateBody('a', { source_config: { deployment_type: 'enterprise' } }),
        ['body', 'source_config', 'deployment_type'],
        'enum',
      ],
      [[1, 2], ['body'], 'model_attributes_type'],
      [templateBody('Bad_Name'), ['body', 'name'], 'string_pattern_mismatch'],
      [templateBody('a'.repeat(64)), ['body', 'name'], 'string_too_long'],
    ];
    for (const [body, loc, type] of cases) {
      const answer = await api.call('POST', '/v2/deployments', body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.detail, JSON.stringify(body)).toContainEqual(expect.objectContaining({ loc, type }));
      for (const item of answer.body.detail) expect(typeof item.msg).toBe('string');
    }
    const empty = await api.raw('POST', '/v2/deployments', undefined);
    expect(empty.status).toBe(422);
    expect(empty.body.detail).toEqual([{ loc: ['body'], msg: 'Field required', type: 'missing' }]);
  });

  test('per-source rules over HTTP: 422 for missing or refused fields, 400 for unknown integrations and repositories', async () => {
    const api = await open();
    const wrongRepo = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('a', { source_config: { integration_id: ACME, repo_url: RESEARCH_URL } }),
    );
    expect(wrongRepo.status).toBe(400);
    expect(wrongRepo.body.detail).toMatch(/not reachable through integration/);
    const rightRepo = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('b', { source_config: { integration_id: LABS, repo_url: RESEARCH_URL } }),
    );
    expect(rightRepo.status).toBe(201);
    const unknown = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('c', {
        source_config: { integration_id: 'cccccccc-cccc-4ccc-8ccc-cccccccccccc', repo_url: RESEARCH_URL },
      }),
    );
    expect(unknown.status).toBe(400);
    const refs = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('d', { secret_references: [{ name: 'a', secret_name: 'b', secret_key: 'c' }] }),
    );
    expect(refs.status).toBe(422);
    expect(refs.body.detail[0].loc).toEqual(['body', 'secret_references']);
    const dockerRepo = await api.call(
      'POST',
      '/v2/deployments',
      dockerBody('e', { source_config: { integration_id: ACME } }),
    );
    expect(dockerRepo.status).toBe(422);
    expect(dockerRepo.body.detail[0].msg).toBe(
      'source_config.integration_id is not allowed for source external_docker',
    );
  });
});

describe('PATCH /v2/deployments/{deployment_id}', () => {
  test('404 for an unknown id or one of another tenant, 422 for a malformed id', async () => {
    const api = await open();
    const created = await api.call('POST', '/v2/deployments', dockerBody('x'));
    const missing = await api.call('PATCH', '/v2/deployments/cccccccc-cccc-4ccc-8ccc-cccccccccccc', {});
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toMatch(/not found/);
    const otherTenant = await api.call(
      'PATCH',
      `/v2/deployments/${created.body.id}`,
      {},
      { 'x-tenant-id': OTHER_TENANT },
    );
    expect(otherTenant.status).toBe(404);
    const malformed = await api.call('PATCH', '/v2/deployments/not-a-uuid', {});
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail).toEqual([
      { loc: ['path', 'deployment_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' },
    ]);
    const upper = await api.call('PATCH', `/v2/deployments/${created.body.id.toUpperCase()}`, {});
    expect(upper.status).toBe(200);
  });

  test('merge, revision and activation through HTTP; needless fields start revisions', async () => {
    const api = await open({ buildMs: 60 });
    const created = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('agent', {
        source_config: {
          integration_id: ACME,
          repo_url: BILLING_URL,
          build_on_push: true,
          resource_spec: { min_scale: 1, max_scale: 2 },
        },
        source_revision_config: { repo_ref: 'trunk', graph_config_path: 'langgraph.json' },
        secrets: [{ name: 'A', value: '1' }],
      }),
    );
    const id = created.body.id;
    const ready = await until('the deployment to be READY', async () =>
      (await getById(api, id)).status === 'READY' ? true : undefined,
    );
    expect(ready).toBe(true);

    const plain = await api.call('PATCH', `/v2/deployments/${id}`, {
      source_config: { build_on_push: false, custom_url: null },
    });
    expect(plain.status).toBe(200);
    expect(plain.body.source_config.build_on_push).toBe(false);
    expect(plain.body.source_config.resource_spec).toEqual({ min_scale: 1, max_scale: 2 });
    expect(plain.body.latest_revision_id).toBe(created.body.latest_revision_id);
    expect(running!.requestLog.at(-1)!.newRevision).toBe(false);

    const needless = await api.call('PATCH', `/v2/deployments/${id}`, {
      source_revision_config: { repo_ref: 'trunk' },
    });
    expect(needless.body.latest_revision_id).not.toBe(created.body.latest_revision_id);
    expect(needless.body.active_revision_id).toBe(created.body.latest_revision_id);
    expect(running!.requestLog.at(-1)!.newRevision).toBe(true);
    const activated = await until('the revision to become active', async () => {
      const now = await getById(api, id);
      return now.active_revision_id === needless.body.latest_revision_id ? now : undefined;
    });
    expect(activated.status).toBe('READY');

    const spec = await api.call('PATCH', `/v2/deployments/${id}`, {
      source_config: { resource_spec: { max_scale: 4 } },
    });
    expect(spec.body.source_config.resource_spec).toEqual({ max_scale: 4 });
    const keep = await api.call('PATCH', `/v2/deployments/${id}`, { secrets: [] });
    expect(keep.body.secrets).toEqual([{ name: 'A', value: '********' }]);
    expect(keep.body.latest_revision_id).toBe(spec.body.latest_revision_id);

    const immutable = await api.call('PATCH', `/v2/deployments/${id}`, {
      source_config: { repo_url: 'https://codehost.example.com/acme/support-agent' },
    });
    expect(immutable.status).toBe(400);
    expect(immutable.body.detail).toMatch(/source_config.repo_url cannot be changed/);
    const nothing = await api.call('PATCH', `/v2/deployments/${id}`, {});
    expect(nothing.body.updated_at).toBe(keep.body.updated_at);
  });

  test('50 concurrent PATCHes upserting different secrets: none lost, 50 revisions', async () => {
    const api = await open({ secrets: 'plain' });
    const created = await api.call('POST', '/v2/deployments', dockerBody('busy'));
    const id = created.body.id;
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.call('PATCH', `/v2/deployments/${id}`, { secrets: [{ name: `S${i}`, value: `v${i}` }] }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const final = await getById(api, id);
    expect(final.secrets).toHaveLength(50);
    expect(new Set(final.secrets.map((s: { name: string; value: string }) => `${s.name}=${s.value}`))).toEqual(
      new Set(Array.from({ length: 50 }, (_, i) => `S${i}=v${i}`)),
    );
    expect(running!.store.deployment(created.body.tenant_id, id)!.revisions).toHaveLength(51);
  });

  test('concurrent PATCHes of different top-level fields all land', async () => {
    const api = await open();
    const created = await api.call('POST', '/v2/deployments', codehostBody('fields'));
    const id = created.body.id;
    const patches = [
      { source_config: { build_on_push: true } },
      { source_config: { custom_url: 'https://agent.acme.example' } },
      { source_config: { install_command: 'pip install .' } },
      { source_config: { build_command: 'make' } },
      { source_revision_config: { graph_config_path: 'g.json' } },
      { source_config: { resource_spec: { max_scale: 3 } } },
    ];
    const answers = await Promise.all(patches.map((p) => api.call('PATCH', `/v2/deployments/${id}`, p)));
    expect(answers.map((a) => a.status)).toEqual(patches.map(() => 200));
    const final = await getById(api, id);
    expect(final.source_config).toMatchObject({
      build_on_push: true,
      custom_url: 'https://agent.acme.example',
      install_command: 'pip install .',
      build_command: 'make',
      resource_spec: { max_scale: 3 },
    });
    expect(final.source_revision_config.graph_config_path).toBe('g.json');
  });
});

describe('secrets modes', () => {
  for (const [mode, expected] of [
    ['plain', [{ name: 'K', value: 'hunter2' }]],
    ['masked', [{ name: 'K', value: '********' }]],
    ['omitted', [{ name: 'K' }]],
  ] as const) {
    test(`${mode}: create, patch and list echo ${JSON.stringify(expected)}`, async () => {
      const api = await open({ secrets: mode });
      const created = await api.call(
        'POST',
        '/v2/deployments',
        dockerBody('s', { secrets: [{ name: 'K', value: 'hunter2' }] }),
      );
      expect(created.body.secrets).toEqual(expected);
      const patched = await api.call('PATCH', `/v2/deployments/${created.body.id}`, {
        source_config: { custom_url: 'https://x' },
      });
      expect(patched.body.secrets).toEqual(expected);
      expect((await getById(api, created.body.id)).secrets).toEqual(expected);
    });
  }
});
