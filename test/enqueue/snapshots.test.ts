// Jobs that trust the plan's live snapshot: one PATCH and no re-read when fresh; the full way whenever it may be wrong.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { ServiceClient } from '../../src/service/client.js';
import type { DeploymentResource, LiveDeployment } from '../../src/core/model.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { AppliedStateStore } from '../../src/enqueue/applied-state.js';
import { reconcileDeployment } from '../../src/sync/sync.js';
import { LiveSnapshots, SNAPSHOT_MAX_AGE_MS } from '../../src/enqueue/snapshots.js';
import { runJob, SILENT_LOGGER } from '../../src/enqueue/worker.js';
import { buildJobData } from '../../src/enqueue/jobs.js';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { deploymentYaml, externalDockerSpec, manifestDir, seedWith } from './apply-helpers.js';
import { dropPrefix, rawRedis, uniquePrefix } from './redis-helpers.js';

const IMAGE = 'docker.io/acme/web:1';

describe('a job trusting the live snapshot of its plan', () => {
  let emulator: RunningEmulator;
  let client: ServiceClient;
  let redis: Redis;
  const prefix = uniquePrefix('snap');
  const store = (): AppliedStateStore => new AppliedStateStore(redis, prefix);

  beforeAll(async () => {
    redis = rawRedis();
  });
  afterAll(async () => {
    await dropPrefix(prefix);
    redis.disconnect();
  });
  afterEach(async () => {
    await client?.close();
    await emulator?.close();
  });

  async function setup(maxScale: number): Promise<{ resource: DeploymentResource; snapshot: LiveDeployment }> {
    emulator = await startEmulator({
      seed: seedWith([{ name: 'web', source: 'external_docker', source_config: { resource_spec: { max_scale: 1 } }, source_revision_config: { image_uri: IMAGE } }]),
      buildMs: 0,
    });
    client = new ServiceClient({ baseUrl: emulator.url, retry: { attempts: 1 } });
    const tree = await manifestDir({ 'web.yaml': deploymentYaml('web', externalDockerSpec(IMAGE, maxScale)) });
    try {
      const loaded = await loadManifestDir(tree.dir, { allowLiteralSecrets: false });
      const [snapshot] = await client.listDeployments();
      emulator.resetLog();
      return { resource: loaded.resources[0] as DeploymentResource, snapshot: snapshot! };
    } finally {
      await tree.remove();
    }
  }

  const requests = (): string[] => emulator.requestLog.map((e) => `${e.method} ${e.route}`);
  const ctx = () => ({ client, store: store(), env: {} });
  const liveMaxScale = (): unknown => (emulator.store.allDeployments()[0]!.source_config.resource_spec as { max_scale?: unknown } | undefined)?.max_scale;

  it('fresh: one PATCH, no read; the answer confirms the manifest holds', async () => {
    const { resource, snapshot } = await setup(3);
    const result = await reconcileDeployment('Deployment/web', resource, ctx(), snapshot.id, snapshot);
    expect(result).toMatchObject({ outcome: 'updated', new_revision: true, deploymentId: snapshot.id });
    expect(requests()).toEqual(['PATCH /v2/deployments/{deployment_id}']);
    expect(liveMaxScale()).toBe(3);
  });

  it('changed after the snapshot: the PATCH answer still differs, so the job reads and writes what is left', async () => {
    const { resource, snapshot } = await setup(3);
    // Someone moves the image after the plan listed it: the snapshot still shows IMAGE, the manifest wants IMAGE.
    await client.patchDeployment(snapshot.id, { source_revision_config: { image_uri: 'docker.io/acme/web:hotfix' } });
    emulator.resetLog();
    const result = await reconcileDeployment('Deployment/web', resource, ctx(), snapshot.id, snapshot);
    expect(result).toMatchObject({ outcome: 'updated', new_revision: true });
    expect(requests()).toEqual(['PATCH /v2/deployments/{deployment_id}', 'GET /v2/deployments', 'PATCH /v2/deployments/{deployment_id}']);
    const patches = emulator.requestLog.filter((e) => e.method === 'PATCH').map((e) => e.body);
    expect(patches[1]).toEqual({ source_revision_config: { image_uri: IMAGE } });
    const live = emulator.store.allDeployments()[0]!;
    expect(live.source_revision_config.image_uri).toBe(IMAGE);
    expect(liveMaxScale()).toBe(3);
  });

  it('gone since the snapshot (404): the job takes the full way and creates it', async () => {
    const { resource, snapshot } = await setup(3);
    const ghost = { ...snapshot, id: '99999999-9999-4999-8999-999999999999' };
    // The deployment the snapshot names does not exist under that id; by name, "web" does: the full way patches it.
    const result = await reconcileDeployment('Deployment/web', resource, ctx(), ghost.id, ghost);
    expect(result.outcome).toBe('updated');
    expect(requests()[0]).toBe('PATCH /v2/deployments/{deployment_id}');
    expect(emulator.requestLog[0]!.status).toBe(404);
    expect(requests().slice(1)).toContain('GET /v2/deployments');
    expect(liveMaxScale()).toBe(3);
  });

  it('a write of an earlier attempt still pending: the snapshot is not trusted (live state settles it)', async () => {
    const { resource, snapshot } = await setup(3);
    await store().setPending('Deployment/web', { op: 'patch', secrets: {}, sentAt: new Date().toISOString(), revisionBefore: snapshot.latest_revision_id, startsRevision: true });
    await reconcileDeployment('Deployment/web', resource, ctx(), snapshot.id, snapshot);
    expect(requests()[0]).toBe('GET /v2/deployments');
    expect(liveMaxScale()).toBe(3);
  });

  it('a snapshot that calls for no PATCH is not trusted either: the job reads', async () => {
    const { resource, snapshot } = await setup(3);
    const already = { ...snapshot, source_config: { ...snapshot.source_config, resource_spec: { max_scale: 3 } } };
    const result = await reconcileDeployment('Deployment/web', resource, ctx(), snapshot.id, already);
    expect(requests()).toEqual(['GET /v2/deployments', 'PATCH /v2/deployments/{deployment_id}']);
    expect(result.outcome).toBe('updated');
  });

  it('with the applied record read ahead: one PATCH, the write marked pending and then recorded', async () => {
    const { resource, snapshot } = await setup(3);
    const ahead = store();
    await ahead.prefetch(['Deployment/web']);
    const marks: string[] = [];
    const markPending = ahead.markPending.bind(ahead);
    ahead.markPending = async (...args) => {
      marks.push(args[0]);
      return markPending(...args);
    };
    const result = await reconcileDeployment('Deployment/web', resource, { client, store: ahead, env: {} }, snapshot.id, snapshot);
    expect(result).toMatchObject({ outcome: 'updated', new_revision: true });
    expect(requests()).toEqual(['PATCH /v2/deployments/{deployment_id}']);
    expect(marks).toEqual(['Deployment/web']);
    expect(ahead.takeHint('Deployment/web')).toBeUndefined();
    expect(await ahead.read('Deployment/web')).toMatchObject({ applied: { secrets: {} }, pending: undefined });
  });

  it('an applied record changed after the read-ahead: nothing is sent from the snapshot; the job takes the full way', async () => {
    const { resource, snapshot } = await setup(3);
    const ahead = store();
    await ahead.prefetch(['Deployment/web']);
    await ahead.recordWrite('Deployment/web', { secrets: {} }, new Date(), null);
    const result = await reconcileDeployment('Deployment/web', resource, { client, store: ahead, env: {} }, snapshot.id, snapshot);
    expect(result.outcome).toBe('updated');
    expect(requests()).toEqual(['GET /v2/deployments', 'PATCH /v2/deployments/{deployment_id}']);
    expect(liveMaxScale()).toBe(3);
  });

  it('a write pending since the read-ahead: nothing is sent from the snapshot; live state settles it', async () => {
    const { resource, snapshot } = await setup(3);
    const ahead = store();
    await ahead.prefetch(['Deployment/web']);
    await ahead.setPending('Deployment/web', { op: 'patch', secrets: {}, sentAt: new Date().toISOString(), revisionBefore: snapshot.latest_revision_id, startsRevision: true });
    await reconcileDeployment('Deployment/web', resource, { client, store: ahead, env: {} }, snapshot.id, snapshot);
    expect(requests()).toEqual(['GET /v2/deployments', 'PATCH /v2/deployments/{deployment_id}']);
    expect(liveMaxScale()).toBe(3);
  });

  it('runJob: only a first attempt takes a snapshot, and only while it is fresh', async () => {
    const { resource, snapshot } = await setup(3);
    const data = buildJobData(resource, 'patch-deployment', { origin: 'test', deploymentId: snapshot.id });
    const processor = (snapshots: LiveSnapshots) => ({ ...ctx(), log: SILENT_LOGGER, rateLimit: async () => undefined, snapshots });

    const retry = new LiveSnapshots();
    retry.add({ deployment: snapshot, readAt: Date.now() });
    await runJob(data, processor(retry), 2);
    expect(requests()[0]).toBe('GET /v2/deployments');

    emulator.resetLog();
    await client.patchDeployment(snapshot.id, { source_config: { resource_spec: { max_scale: 1 } } });
    emulator.resetLog();
    const stale = new LiveSnapshots();
    stale.add({ deployment: snapshot, readAt: Date.now() - SNAPSHOT_MAX_AGE_MS - 1 });
    await runJob(data, processor(stale), 1);
    expect(requests()[0]).toBe('GET /v2/deployments');

    await client.patchDeployment(snapshot.id, { source_config: { resource_spec: { max_scale: 1 } } });
    const [relisted] = await client.listDeployments();
    emulator.resetLog();
    const fresh = new LiveSnapshots();
    fresh.add({ deployment: relisted!, readAt: Date.now() });
    await runJob(data, processor(fresh), 1);
    expect(requests()).toEqual(['PATCH /v2/deployments/{deployment_id}']);
    expect(fresh.size).toBe(0);
  });
});

describe('LiveSnapshots', () => {
  const deployment = { id: 'id-1', name: 'web' } as LiveDeployment;

  it('hands a snapshot out once, for the right name, while fresh', () => {
    let now = 1_000;
    const snapshots = new LiveSnapshots({ maxAgeMs: 100, now: () => now });
    snapshots.add({ deployment, readAt: 950 });
    expect(snapshots.take('id-1', 'web')).toBe(deployment);
    expect(snapshots.take('id-1', 'web')).toBeUndefined();

    snapshots.add({ deployment, readAt: 950 });
    expect(snapshots.take('id-1', 'other')).toBeUndefined();
    expect(snapshots.size).toBe(0);

    snapshots.add({ deployment, readAt: 950 });
    now = 1_051;
    expect(snapshots.take('id-1', 'web')).toBeUndefined();
  });
});
