// The emulator as docs/against-the-real-service.md describes the service, through real HTTP: create rules, immutable fields, and each knob in both settings.
import { afterEach, describe, expect, test } from 'vitest';
import type { EmulatorOptions, EmulatorSeed, RunningEmulator } from '../../src/emulator/server.js';
import {
  ACME,
  SUPPORT_URL,
  TENANT,
  baseSeed,
  codehostBody,
  dockerBody,
  start,
  templateBody,
  type Client,
} from './helpers.js';

let running: RunningEmulator | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function open(options: EmulatorOptions = {}): Promise<Client> {
  const { emulator, api } = await start(options);
  running = emulator;
  return api;
}

async function create(api: Client, body: Record<string, unknown>): Promise<any> {
  const answer = await api.call('POST', '/v2/deployments', body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

function without(body: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...body };
  delete copy[key];
  return copy;
}

describe('create: the five required fields', () => {
  const REQUIRED = ['name', 'source', 'source_config', 'source_revision_config', 'secrets'];

  test.each(REQUIRED)('without %s: 422 Field required at its loc', async (key) => {
    const api = await open();
    const answer = await api.call('POST', '/v2/deployments', without(templateBody('a'), key));
    expect(answer.status).toBe(422);
    expect(answer.body.detail).toContainEqual({ loc: ['body', key], msg: 'Field required', type: 'missing' });
    expect(running!.store.allDeployments()).toHaveLength(0);
  });

  test('null is not empty: source_config null answers 422; {} and [] are accepted', async () => {
    const api = await open();
    const nulled = await api.call('POST', '/v2/deployments', templateBody('a', { source_config: null }));
    expect(nulled.status).toBe(422);
    expect(nulled.body.detail[0].loc).toEqual(['body', 'source_config']);
    await create(api, templateBody('b'));
  });

  test('lenientCreate accepts the old incomplete bodies; off by default', async () => {
    const old = [
      { name: 'tpl', source: 'internal_template' },
      {
        name: 'hub',
        source: 'codehost',
        source_config: { integration_id: ACME, repo_url: SUPPORT_URL },
        source_revision_config: { repo_ref: 'main' },
      },
      {
        name: 'img',
        source: 'external_docker',
        source_revision_config: { image_uri: 'r/x:1', graph_config_path: 'g.json' },
      },
    ];
    const strict = await open();
    for (const body of old) expect((await strict.call('POST', '/v2/deployments', body)).status, body.name).toBe(422);
    await running!.close();
    const lenient = await open({ lenientCreate: true });
    for (const body of old) await create(lenient, body);
    // Still strict about everything else.
    expect((await lenient.call('POST', '/v2/deployments', { name: 'x' })).status).toBe(422);
  });
});

describe('create: source rules of docs/against-the-real-service.md §2', () => {
  test('graph_config_path is required for codehost and for internal_source once a tarball is sent, refused for the other sources', async () => {
    const api = await open();
    const hub = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('hub', { source_revision_config: { repo_ref: 'main' } }),
    );
    expect(hub.status).toBe(422);
    expect(hub.body.detail).toContainEqual(
      expect.objectContaining({ loc: ['body', 'source_revision_config', 'graph_config_path'], type: 'missing' }),
    );
    // The official tool creates internal_source with source_revision_config {} and sends the path with the tarball.
    const upload = await create(api, templateBody('up', { source: 'internal_source' }));
    const url = await api.call('POST', `/v2/deployments/${upload.id}/upload-url`);
    const tarballOnly = await api.call('PATCH', `/v2/deployments/${upload.id}`, {
      source_revision_config: { source_tarball_path: url.body.object_path },
    });
    expect(tarballOnly.status).toBe(422);
    expect(tarballOnly.body.detail[0].loc).toEqual(['body', 'source_revision_config', 'graph_config_path']);
    for (const [source, revision] of [
      ['external_docker', { image_uri: 'r/x:1' }],
      ['internal_docker', { image_uri: 'r/x:1' }],
      ['internal_template', {}],
    ] as const) {
      const answer = await api.call(
        'POST',
        '/v2/deployments',
        templateBody(`s-${source.replace('_', '-')}`, {
          source,
          source_revision_config: { ...revision, graph_config_path: 'g.json' },
        }),
      );
      expect(answer.status, source).toBe(422);
      expect(answer.body.detail[0]).toMatchObject({
        loc: ['body', 'source_revision_config', 'graph_config_path'],
        msg: `source_revision_config.graph_config_path is not allowed for source ${source}`,
      });
    }
    // PATCH refuses it too.
    const docker = await create(api, dockerBody('img'));
    const patched = await api.call('PATCH', `/v2/deployments/${docker.id}`, {
      source_revision_config: { graph_config_path: 'g.json' },
    });
    expect(patched.status).toBe(422);
  });

  test('internal_docker and internal_source are created without their artifact, which a PATCH then sets', async () => {
    const api = await open({ buildMs: 0 });
    const pushed = await create(api, templateBody('pushed', { source: 'internal_docker' }));
    const uploaded = await create(
      api,
      templateBody('uploaded', { source: 'internal_source', source_revision_config: {} }),
    );
    for (const d of [pushed, uploaded]) {
      expect(d.latest_revision_id).toBeNull();
      expect(d.active_revision_id).toBeNull();
      expect(running!.requestLog.find((e) => e.deploymentId === d.id)!.newRevision).toBe(false);
    }
    const image = await api.call('PATCH', `/v2/deployments/${pushed.id}`, {
      source_revision_config: { image_uri: 'registry.internal.example/pushed:1' },
    });
    expect(image.status).toBe(200);
    expect(image.body.source_revision_config.image_uri).toBe('registry.internal.example/pushed:1');
    expect(image.body.latest_revision_id).not.toBeNull();
    expect(image.body.active_revision_id).toBe(image.body.latest_revision_id);
    expect(image.body.status).toBe('READY');
    // Only an object path the service handed out is taken (against-the-real-service.md).
    const foreign = await api.call('PATCH', `/v2/deployments/${uploaded.id}`, {
      source_revision_config: { source_tarball_path: 'uploads/uploaded.tgz', graph_config_path: 'langgraph.json' },
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.detail).toMatch(/^source_tarball_path "uploads\/uploaded.tgz" was not issued for deployment /);
    const url = await api.call('POST', `/v2/deployments/${uploaded.id}/upload-url`);
    const put = await fetch(url.body.upload_url, {
      method: 'PUT',
      body: 'tarball bytes',
      headers: { 'content-type': 'application/gzip' },
    });
    expect(put.status).toBe(200);
    const tarball = await api.call('PATCH', `/v2/deployments/${uploaded.id}`, {
      source_revision_config: { source_tarball_path: url.body.object_path, graph_config_path: 'langgraph.json' },
    });
    expect(tarball.status).toBe(200);
    expect(tarball.body.source_revision_config).toMatchObject({
      source_tarball_path: url.body.object_path,
      graph_config_path: 'langgraph.json',
    });
  });

  test('deployment_type: stored in source_config, prod when absent, immutable, taken by every source; the list filter sees it', async () => {
    const api = await open();
    const plain = await create(api, codehostBody('plain'));
    expect(plain.source_config.deployment_type).toBe('prod');
    const free = await create(
      api,
      codehostBody('free', {
        source_config: { integration_id: ACME, repo_url: SUPPORT_URL, deployment_type: 'dev_free' },
      }),
    );
    expect(free.source_config.deployment_type).toBe('dev_free');
    for (const tier of ['dev', 'dev_zero', 'dev_free_zero']) {
      const d = await create(
        api,
        codehostBody(`t-${tier.replaceAll('_', '-')}`, {
          source_config: { integration_id: ACME, repo_url: SUPPORT_URL, deployment_type: tier },
        }),
      );
      expect(d.source_config.deployment_type).toBe(tier);
    }
    const same = await api.call('PATCH', `/v2/deployments/${free.id}`, {
      source_config: { deployment_type: 'dev_free', build_on_push: true },
    });
    expect(same.status).toBe(200);
    const changed = await api.call('PATCH', `/v2/deployments/${free.id}`, {
      source_config: { deployment_type: 'prod' },
    });
    expect(changed.status).toBe(400);
    expect(changed.body.detail).toBe(
      'source_config.deployment_type cannot be changed after creation (it is "dev_free"); create a new deployment instead',
    );
    const docker = await create(api, dockerBody('img', { source_config: { deployment_type: 'dev_free' } }));
    expect(docker.source_config.deployment_type).toBe('dev_free');
    const redocked = await api.call('PATCH', `/v2/deployments/${docker.id}`, {
      source_config: { deployment_type: 'prod' },
    });
    expect(redocked.status).toBe(400);
    const listed = await api.call('GET', '/v2/deployments?deployment_type=dev_free');
    expect(listed.body.resources.map((d: { name: string }) => d.name)).toEqual(['free', 'img']);
    const zero = await api.call('GET', '/v2/deployments?deployment_type=dev_free_zero');
    expect(zero.body.resources.map((d: { name: string }) => d.name)).toEqual(['t-dev-free-zero']);
  });

  test('listener_config.k8s_namespace cannot change; integration_id, repo_url and listener_id stay immutable', async () => {
    const api = await open();
    const listener = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
    const d = await create(
      api,
      dockerBody('img', { source_config: { listener_id: listener, listener_config: { k8s_namespace: 'vision' } } }),
    );
    const same = await api.call('PATCH', `/v2/deployments/${d.id}`, {
      source_config: { listener_id: listener.toUpperCase(), listener_config: { k8s_namespace: 'vision' } },
    });
    expect(same.status).toBe(200);
    const moved = await api.call('PATCH', `/v2/deployments/${d.id}`, {
      source_config: { listener_config: { k8s_namespace: 'risk' } },
    });
    expect(moved.status).toBe(400);
    expect(moved.body.detail).toMatch(
      /source_config.listener_config.k8s_namespace cannot be changed after creation \(it is "vision"\)/,
    );
    const relisten = await api.call('PATCH', `/v2/deployments/${d.id}`, {
      source_config: { listener_id: 'dddddddd-dddd-4ddd-8ddd-dddddddddddd' },
    });
    expect(relisten.status).toBe(400);
    const hub = await create(api, codehostBody('hub'));
    const repo = await api.call('PATCH', `/v2/deployments/${hub.id}`, {
      source_config: { repo_url: 'https://codehost.example.com/acme/billing-bot' },
    });
    expect(repo.status).toBe(400);
  });
});

describe('--secrets-patch', () => {
  for (const [mode, expected] of [
    ['merge', ['A=1', 'B=two', 'C=3']],
    ['replace', ['B=two']],
  ] as const) {
    test(`${mode}: a non-empty list ${mode === 'merge' ? 'merges by name' : 'replaces the set'}; [] keeps the stored values`, async () => {
      const api = await open({ secrets: 'plain', ...(mode === 'merge' ? {} : { secretsPatch: mode }) });
      const d = await create(
        api,
        dockerBody('env', {
          secrets: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
            { name: 'C', value: '3' },
          ],
        }),
      );
      const patched = await api.call('PATCH', `/v2/deployments/${d.id}`, { secrets: [{ name: 'B', value: 'two' }] });
      expect(patched.body.secrets.map((s: { name: string; value: string }) => `${s.name}=${s.value}`)).toEqual(
        expected,
      );
      const kept = await api.call('PATCH', `/v2/deployments/${d.id}`, {
        secrets: [],
        source_config: { custom_url: 'https://x' },
      });
      expect(kept.body.secrets.map((s: { name: string; value: string }) => `${s.name}=${s.value}`)).toEqual(expected);
    });
  }

  test('an unknown mode is refused at start', async () => {
    await expect(start({ secretsPatch: 'upsert' as never })).rejects.toThrow(
      /secretsPatch: "upsert" is not one of merge, replace/,
    );
  });
});

describe('--echo', () => {
  const sent = {
    listener_config: { k8s_namespace: 'ns' },
    install_command: 'pip install .',
    build_command: 'make',
    custom_url: 'https://agent.acme.example',
  };

  test('exact (default): every field comes back as sent; only the spec fields', async () => {
    const api = await open();
    const hub = await create(
      api,
      codehostBody('hub', { source_config: { integration_id: ACME, repo_url: SUPPORT_URL, ...sent } }),
    );
    expect(hub.source_config).toMatchObject(sent);
    expect(hub).not.toHaveProperty('display_name');
    expect(hub).not.toHaveProperty('is_preview');
  });

  test('real: listener_config, install_command and build_command null; the service sets custom_url for codehost; display_name and is_preview', async () => {
    const api = await open({ echo: 'real' });
    const hub = await create(
      api,
      codehostBody('hub', { source_config: { integration_id: ACME, repo_url: SUPPORT_URL, ...sent } }),
    );
    expect(hub.source_config).toMatchObject({
      listener_config: null,
      install_command: null,
      build_command: null,
      custom_url: `https://hub-${hub.id.slice(0, 8)}.example.app`,
    });
    expect(hub).toMatchObject({ display_name: 'hub', is_preview: false });
    const listed = (await api.call('GET', `/v2/deployments?deployment_ids=${hub.id}`)).body.resources[0];
    expect(listed).toEqual(hub);
    // Stored as sent: a PATCH of the same values is no change.
    const again = await api.call('PATCH', `/v2/deployments/${hub.id}`, { source_config: sent });
    expect(again.body.updated_at).toBe(hub.updated_at);
    // Other sources keep the custom_url they were given.
    const tpl = await create(api, templateBody('tpl', { source_config: { custom_url: 'https://tpl.acme.example' } }));
    expect(tpl.source_config.custom_url).toBe('https://tpl.acme.example');
  });

  test('an unknown mode is refused at start', async () => {
    await expect(start({ echo: 'loud' as never })).rejects.toThrow(/echo: "loud" is not one of exact, real/);
  });
});

describe('--omit-tenant-id', () => {
  for (const omit of [false, true]) {
    test(`${omit ? 'on: responses leave tenant_id out' : 'off (default): responses carry tenant_id'}`, async () => {
      const api = await open(omit ? { omitTenantId: true } : {});
      const d = await create(api, templateBody('tpl'));
      const listed = (await api.call('GET', '/v2/deployments')).body.resources[0];
      const read = (await api.call('GET', `/v2/deployments/${d.id}`)).body;
      for (const view of [d, listed, read]) {
        if (omit) expect(view).not.toHaveProperty('tenant_id');
        else expect(view.tenant_id).toBe(TENANT);
      }
    });
  }
});

describe('seeds the real service can produce', () => {
  function seed(): EmulatorSeed {
    return {
      ...baseSeed(),
      deployments: [
        {
          name: 'pr-42',
          source: 'codehost',
          is_preview: true,
          source_config: { integration_id: ACME, repo_url: SUPPORT_URL },
          source_revision_config: { repo_ref: 'pr-42' },
        },
        { name: 'leaving', source: 'internal_template', status: 'AWAITING_DELETE' },
        { name: 'odd-status', source: 'internal_template', status: 'HIBERNATING' },
        { name: 'odd-source', source: 'internal_wasm' },
      ],
    };
  }

  test('preview, AWAITING_DELETE and unknown status or source are listed as seeded', async () => {
    const api = await open({ seed: seed() });
    const page = (await api.call('GET', '/v2/deployments')).body.resources;
    const byName = new Map<string, any>(page.map((d: { name: string }) => [d.name, d]));
    expect(byName.get('pr-42')).toMatchObject({ is_preview: true, source_config: { deployment_type: 'dev' } });
    expect(byName.get('leaving').status).toBe('AWAITING_DELETE');
    expect(byName.get('leaving')).not.toHaveProperty('is_preview');
    expect(byName.get('odd-status').status).toBe('HIBERNATING');
    expect(byName.get('odd-source').source).toBe('internal_wasm');
    expect((await api.call('GET', '/v2/deployments?status=HIBERNATING')).body.resources).toHaveLength(1);
  });

  test('a seeded AWAITING_DELETE deployment refuses writes and stays; one of an unknown source cannot be patched', async () => {
    const api = await open({ seed: seed() });
    const all = running!.store.allDeployments();
    const leaving = all.find((d) => d.name === 'leaving')!;
    const patched = await api.call('PATCH', `/v2/deployments/${leaving.id}`, {
      source_config: { custom_url: 'https://x' },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.detail).toBe(`Deployment ID ${leaving.id} is being deleted.`);
    expect((await api.call('DELETE', `/v2/deployments/${leaving.id}`)).status).toBe(400);
    const odd = all.find((d) => d.name === 'odd-source')!;
    const oddPatch = await api.call('PATCH', `/v2/deployments/${odd.id}`, {
      source_config: { custom_url: 'https://x' },
    });
    expect(oddPatch.status).toBe(400);
    expect(oddPatch.body.detail).toMatch(/source "internal_wasm"/);
    expect(running!.store.allDeployments().map((d) => d.name)).toContain('leaving');
  });

  test('a seed of any source may give deployment_type in source_config; the list filter sees it', async () => {
    const api = await open({
      seed: {
        ...baseSeed(),
        deployments: [
          {
            name: 'hub',
            source: 'codehost',
            source_config: { integration_id: ACME, repo_url: SUPPORT_URL, deployment_type: 'dev_zero' },
            source_revision_config: { repo_ref: 'main' },
          },
          { name: 'tpl', source: 'internal_template', source_config: { deployment_type: 'dev_zero' } },
        ],
      },
    });
    const listed = await api.call('GET', '/v2/deployments?deployment_type=dev_zero');
    expect(
      listed.body.resources.map((d: { name: string; source_config: { deployment_type: string } }) => [
        d.name,
        d.source_config.deployment_type,
      ]),
    ).toEqual([
      ['hub', 'dev_zero'],
      ['tpl', 'dev_zero'],
    ]);
  });
});
