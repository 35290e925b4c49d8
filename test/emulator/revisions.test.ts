// Revisions and deletion through real HTTP with an injected clock: the build lifecycle, failures, the revision endpoints, DELETE.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { EmulatorOptions, RunningEmulator } from '../../src/emulator/server.js';
import { baseSeed, client, codehostBody, dockerBody, manualClock, start, type Client } from './helpers.js';

const BUILD_MS = 900;
let running: RunningEmulator | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function open(options: EmulatorOptions = {}): Promise<{ api: Client; clock: ReturnType<typeof manualClock> }> {
  const clock = manualClock();
  const { emulator, api } = await start({ buildMs: BUILD_MS, clock: clock.now, ...options });
  running = emulator;
  return { api, clock };
}

async function create(api: Client, body: Record<string, unknown>): Promise<any> {
  const answer = await api.call('POST', '/v2/deployments', body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

async function read(api: Client, id: string): Promise<any> {
  const answer = await api.call('GET', `/v2/deployments/${id}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

async function revision(api: Client, id: string, revisionId: string): Promise<any> {
  const answer = await api.call('GET', `/v2/deployments/${id}/revisions/${revisionId}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

describe('revision lifecycle', () => {
  test('QUEUED, BUILDING, DEPLOYING, then DEPLOYED and active, over buildMs; updated_at follows each step', async () => {
    const { api, clock } = await open();
    const d = await create(api, codehostBody('hub'));
    expect(d).toMatchObject({ status: 'AWAITING_DATABASE', active_revision_id: null });
    const seen: Array<[string, string, string | null]> = [];
    for (const step of [0, 299, 1, 299, 1, 299, 1]) {
      clock.advance(step);
      const r = await revision(api, d.id, d.latest_revision_id);
      const now = await read(api, d.id);
      seen.push([r.status, now.status, now.active_revision_id]);
    }
    expect(seen).toEqual([
      ['QUEUED', 'AWAITING_DATABASE', null],
      ['QUEUED', 'AWAITING_DATABASE', null],
      ['BUILDING', 'AWAITING_DATABASE', null],
      ['BUILDING', 'AWAITING_DATABASE', null],
      ['DEPLOYING', 'AWAITING_DATABASE', null],
      ['DEPLOYING', 'AWAITING_DATABASE', null],
      ['DEPLOYED', 'READY', d.latest_revision_id],
    ]);
    const done = await revision(api, d.id, d.latest_revision_id);
    expect(done).toEqual({
      id: d.latest_revision_id,
      created_at: d.created_at,
      updated_at: new Date(Date.parse(d.created_at) + BUILD_MS).toISOString(),
      status: 'DEPLOYED',
      source: 'codehost',
      source_revision_config: d.source_revision_config,
      tracked_packages: null,
      install_command: null,
      build_command: null,
    });
  });

  test('--build-fail: the revision ends BUILD_FAILED after building; the active revision stays on the last good one and the deployment READY', async () => {
    const { api, clock } = await open({ buildFail: /^flaky-/ });
    const good = await create(api, dockerBody('steady'));
    const flaky = await create(api, dockerBody('flaky-agent'));
    clock.advance(600);
    expect((await revision(api, flaky.id, flaky.latest_revision_id)).status).toBe('BUILD_FAILED');
    let now = await read(api, flaky.id);
    // A failed first revision: the infrastructure is there (READY), nothing is active.
    expect(now).toMatchObject({
      status: 'READY',
      active_revision_id: null,
      latest_revision_id: flaky.latest_revision_id,
    });
    clock.advance(300);
    expect((await read(api, good.id)).active_revision_id).toBe(good.latest_revision_id);

    // A later failure keeps the last good revision active for good.
    const steady = await api.call('PATCH', `/v2/deployments/${good.id}`, {
      source_revision_config: { image_uri: 'registry.example.com/acme/app:2' },
    });
    expect(steady.body.active_revision_id).toBe(good.latest_revision_id);
    clock.advance(BUILD_MS);
    expect((await read(api, good.id)).active_revision_id).toBe(steady.body.latest_revision_id);
    const again = await api.call('PATCH', `/v2/deployments/${flaky.id}`, {
      source_revision_config: { image_uri: 'registry.example.com/acme/app:2' },
    });
    clock.advance(BUILD_MS * 10);
    now = await read(api, flaky.id);
    expect(now.latest_revision_id).toBe(again.body.latest_revision_id);
    expect(now.active_revision_id).toBeNull();
    expect((await revision(api, flaky.id, now.latest_revision_id)).status).toBe('BUILD_FAILED');
  });

  test('--deploy-fail: QUEUED, BUILDING, DEPLOYING, then DEPLOY_FAILED; active stays on the previous revision', async () => {
    const { api, clock } = await open({
      seed: {
        ...baseSeed(),
        deployments: [{ name: 'canary', source: 'external_docker', source_revision_config: { image_uri: 'r/x:1' } }],
      },
      deployFail: 'canary',
    });
    const before = (await api.call('GET', '/v2/deployments')).body.resources[0];
    expect(before.active_revision_id).toBe(before.latest_revision_id);
    const patched = await api.call('PATCH', `/v2/deployments/${before.id}`, {
      source_revision_config: { image_uri: 'r/x:2' },
    });
    const statuses: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      statuses.push((await revision(api, before.id, patched.body.latest_revision_id)).status);
      clock.advance(300);
    }
    expect(statuses).toEqual(['QUEUED', 'BUILDING', 'DEPLOYING', 'DEPLOY_FAILED']);
    const after = await read(api, before.id);
    expect(after).toMatchObject({
      status: 'READY',
      active_revision_id: before.active_revision_id,
      latest_revision_id: patched.body.latest_revision_id,
    });
  });

  test('a newer revision supersedes one still building (SKIPPED); only the newest becomes active', async () => {
    const { api, clock } = await open();
    const d = await create(api, dockerBody('busy'));
    clock.advance(400);
    const second = await api.call('PATCH', `/v2/deployments/${d.id}`, {
      source_revision_config: { image_uri: 'r/x:2' },
    });
    expect((await revision(api, d.id, d.latest_revision_id)).status).toBe('SKIPPED');
    expect((await revision(api, d.id, second.body.latest_revision_id)).status).toBe('QUEUED');
    clock.advance(BUILD_MS);
    expect((await read(api, d.id)).active_revision_id).toBe(second.body.latest_revision_id);
  });

  test('buildMs 0: a revision is DEPLOYED (or failed) at once', async () => {
    const { api } = await open({ buildMs: 0, buildFail: 'bad' });
    const ok = await create(api, dockerBody('good'));
    expect(ok).toMatchObject({ status: 'READY', active_revision_id: ok.latest_revision_id });
    const bad = await create(api, dockerBody('bad'));
    expect(bad).toMatchObject({ status: 'READY', active_revision_id: null });
    expect((await revision(api, bad.id, bad.latest_revision_id)).status).toBe('BUILD_FAILED');
  });

  test('revision state survives a restart from the state file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'converge-revisions-'));
    try {
      const file = join(dir, 'state.yaml');
      const { api, clock } = await open({ stateFile: file, seed: baseSeed(), buildFail: 'flaky' });
      const d = await create(api, dockerBody('flaky'));
      clock.advance(300);
      await running!.close();
      running = undefined;
      const { emulator } = await start({ stateFile: file, buildMs: BUILD_MS, clock: clock.now });
      running = emulator;
      const again = client(emulator);
      expect((await revision(again, d.id, d.latest_revision_id)).status).toBe('BUILDING');
      clock.advance(300);
      expect((await revision(again, d.id, d.latest_revision_id)).status).toBe('BUILD_FAILED');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /v2/deployments/{id}/revisions', () => {
  test('newest first, paged with limit and offset answering the next offset, filtered by status', async () => {
    const { api, clock } = await open();
    const d = await create(api, dockerBody('many'));
    const ids = [d.latest_revision_id];
    for (let i = 2; i <= 5; i += 1) {
      clock.advance(BUILD_MS);
      const patched = await api.call('PATCH', `/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: `r/x:${i}` },
      });
      ids.push(patched.body.latest_revision_id);
    }
    const all = (await api.call('GET', `/v2/deployments/${d.id}/revisions`)).body;
    expect(all.resources.map((r: { id: string }) => r.id)).toEqual([...ids].reverse());
    expect(all.offset).toBe(5);
    expect(all.resources[0]).toMatchObject({
      status: 'QUEUED',
      source: 'external_docker',
      source_revision_config: { image_uri: 'r/x:5' },
    });
    const page = (await api.call('GET', `/v2/deployments/${d.id}/revisions?limit=2&offset=1`)).body;
    expect(page).toEqual({ resources: all.resources.slice(1, 3), offset: 3 });
    const deployed = (await api.call('GET', `/v2/deployments/${d.id}/revisions?status=DEPLOYED`)).body;
    expect(deployed.resources.map((r: { id: string }) => r.id)).toEqual(ids.slice(0, 4).reverse());
    const bad = await api.call('GET', `/v2/deployments/${d.id}/revisions?status=DONE`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['query', 'status'], type: 'enum' });
    expect((await api.call('GET', `/v2/deployments/${d.id}/revisions?limit=0`)).status).toBe(422);
  });

  test('404 for an unknown deployment or revision, 422 for a malformed id', async () => {
    const { api } = await open();
    const d = await create(api, dockerBody('one'));
    const unknown = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';
    const noDeployment = await api.call('GET', `/v2/deployments/${unknown}/revisions`);
    expect(noDeployment).toMatchObject({ status: 404, body: { detail: `Deployment ID ${unknown} not found.` } });
    const noRevision = await api.call('GET', `/v2/deployments/${d.id}/revisions/${unknown}`);
    expect(noRevision).toMatchObject({ status: 404, body: { detail: `Revision ID ${unknown} not found.` } });
    const malformed = await api.call('GET', `/v2/deployments/${d.id}/revisions/nope`);
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual(['path', 'revision_id']);
  });

  test('a seeded deployment still building has both its active and its latest revision', async () => {
    const active = 'a1a1a1a1-a1a1-4a1a-8a1a-a1a1a1a1a1a1';
    const latest = 'b2b2b2b2-b2b2-4b2b-8b2b-b2b2b2b2b2b2';
    const { api, clock } = await open({
      seed: {
        ...baseSeed(),
        deployments: [
          {
            name: 'seeded',
            source: 'external_docker',
            source_revision_config: { image_uri: 'r/x:2' },
            active_revision_id: active,
            latest_revision_id: latest,
          },
        ],
      },
    });
    const d = (await api.call('GET', '/v2/deployments')).body.resources[0];
    expect((await revision(api, d.id, active)).status).toBe('DEPLOYED');
    expect((await revision(api, d.id, latest)).status).toBe('QUEUED');
    clock.advance(BUILD_MS);
    expect((await read(api, d.id)).active_revision_id).toBe(latest);
  });
});

describe('DELETE /v2/deployments/{id}', () => {
  test('204; AWAITING_DELETE for buildMs (listed, refusing writes), then gone; the tracing project stays and keeps the name', async () => {
    const { api, clock } = await open();
    const d = await create(api, dockerBody('retired'));
    const answer = await api.call('DELETE', `/v2/deployments/${d.id}`);
    expect(answer.status).toBe(204);
    expect(answer.body).toBeUndefined();
    expect(answer.headers.get('content-type')).toBeNull();
    expect((await read(api, d.id)).status).toBe('AWAITING_DELETE');
    expect(
      (await api.call('GET', '/v2/deployments?status=AWAITING_DELETE')).body.resources.map((x: { id: string }) => x.id),
    ).toEqual([d.id]);
    const write = await api.call('PATCH', `/v2/deployments/${d.id}`, { source_config: { custom_url: 'https://x' } });
    expect(write).toMatchObject({ status: 400, body: { detail: `Deployment ID ${d.id} is being deleted.` } });
    expect((await api.call('DELETE', `/v2/deployments/${d.id}`)).status).toBe(400);
    expect((await api.call('POST', '/v2/deployments', dockerBody('retired'))).status).toBe(409);
    clock.advance(BUILD_MS);
    const gone = await api.call('GET', `/v2/deployments/${d.id}`);
    expect(gone).toMatchObject({ status: 404, body: { detail: `Deployment ID ${d.id} not found.` } });
    expect((await api.call('GET', '/v2/deployments')).body.resources).toEqual([]);
    expect((await api.call('DELETE', `/v2/deployments/${d.id}`)).status).toBe(404);
    expect((await api.call('PATCH', `/v2/deployments/${d.id}`, {})).status).toBe(404);
    expect(running!.store.tracingProjects().map((p) => [p.name, p.deployment_id])).toContainEqual(['retired', null]);
    const again = await api.call('POST', '/v2/deployments', dockerBody('retired'));
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/tracing project named "retired"/);
  });

  test('?delete_tracing_project=true removes the tracing project with it, freeing the name', async () => {
    const { api, clock } = await open();
    const d = await create(api, codehostBody('temp'));
    expect((await api.call('DELETE', `/v2/deployments/${d.id}?delete_tracing_project=true`)).status).toBe(204);
    clock.advance(BUILD_MS);
    expect(running!.store.tracingProjects().map((p) => p.name)).not.toContain('temp');
    expect((await api.call('POST', '/v2/deployments', codehostBody('temp'))).status).toBe(201);
  });

  test('buildMs 0: gone at once; a deployment of another tenant is 404', async () => {
    const { api } = await open({ buildMs: 0 });
    const d = await create(api, dockerBody('quick'));
    expect(
      (
        await api.call('DELETE', `/v2/deployments/${d.id}`, undefined, {
          'x-tenant-id': '22222222-2222-4222-8222-222222222222',
        })
      ).status,
    ).toBe(404);
    expect((await api.call('DELETE', `/v2/deployments/${d.id}`)).status).toBe(204);
    expect((await api.call('GET', `/v2/deployments/${d.id}`)).status).toBe(404);
  });
});
