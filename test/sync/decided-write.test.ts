// The write step is given the decided write: it sends what of it live state still lacks, and when live state changed
// since the decision in any other way it sends nothing and says so as a value (docs/decision.md, "The write step").
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobWrite } from '../../src/core/kinds/index.js';
import { parseManifestBytes } from '../../src/core/manifest/parse.js';
import { startEmulator } from '../../src/emulator/server.js';
import { AppliedStateStore } from '../../src/store/applied-state.js';
import { ServiceClient } from '../../src/service/client.js';
import { syncResource } from '../../src/sync/sync.js';
import { deploymentYaml, seedWith, writes } from '../helpers/apply.js';
import { decidedWrite } from '../helpers/job-fixtures.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const SPEC = [
  'source: external_docker',
  'source_config:',
  '  resource_spec: { max_scale: 4, min_scale: 1 }',
  'source_revision_config:',
  '  image_uri: docker.io/acme/api:2',
].join('\n');

const MAX_SCALE = 'source_config.resource_spec.max_scale';
const IMAGE = 'source_revision_config.image_uri';

describe('the write step sends the decided write and decides nothing', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** The emulator with `api` at max_scale 1 and image :1 (the manifest asks for 4 and :2), a client for the job and one for "someone else". */
  async function setup() {
    const emulator = await startEmulator({
      seed: seedWith([
        {
          name: 'api',
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 1, min_scale: 1 } },
          source_revision_config: { image_uri: 'docker.io/acme/api:1' },
        },
      ]),
      buildMs: 0,
      echo: 'real',
    });
    const service = new ServiceClient({ baseUrl: emulator.url });
    const someoneElse = new ServiceClient({ baseUrl: emulator.url });
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const prefix = testPrefix('decided');
    cleanups.push(
      () => emulator.close(),
      () => service.close(),
      () => someoneElse.close(),
      async () => void redis.disconnect(),
      () => dropPrefix(prefix),
    );
    const store = new AppliedStateStore(redis, prefix);
    const resource = parseManifestBytes('api.yaml', new TextEncoder().encode(deploymentYaml('api', SPEC)), {
      allowLiteralSecrets: false,
    }).resources[0]!;
    const live = () => emulator.store.allDeployments().find((d) => d.name === 'api')!;
    const run = (write: JobWrite, liveId: string | undefined = live().id) =>
      syncResource(resource, write, { service, appliedState: store, secretEnv: {} }, liveId);
    return { emulator, someoneElse, resource, live, run, store, service };
  }

  it("records each write with what its answer said, the job's result but its message and fields (a PATCH; a create and its artifact's PATCH)", async () => {
    const { emulator, resource, run, store, service } = await setup();
    const said = (result: Awaited<ReturnType<typeof run>>) => {
      const { message: _message, fields: _fields, ...answer } = result;
      return answer;
    };
    const patched = await run({ op: 'update', fields: [MAX_SCALE, IMAGE] });
    expect(patched).toMatchObject({ outcome: 'adopted', new_revision: true });
    expect((await store.get('Deployment/api'))?.answer).toEqual(said(patched));

    const web = { ...resource, name: 'web' };
    const created = await syncResource(web, decidedWrite(web), { service, appliedState: store, secretEnv: {} });
    const made = emulator.store.allDeployments().find((d) => d.name === 'web')!;
    expect(created).toMatchObject({ outcome: 'created', new_revision: true, deploymentId: made.id });
    expect(created.latestRevisionId).toBe(made.latest_revision_id);
    expect((await store.get('Deployment/web'))?.answer).toEqual(said(created));
  });

  it('the decision against the seeded deployment is an update of max_scale and the image', async () => {
    const { resource, someoneElse, live } = await setup();
    expect(decidedWrite(resource, await someoneElse.readDeployment(live().id))).toEqual({
      op: 'update',
      fields: [MAX_SCALE, IMAGE],
    });
  });

  it('sends nothing when another field changed after the decision, and names it', async () => {
    const { emulator, someoneElse, live, run } = await setup();
    // Decided: max_scale only (the image matched then); since, someone rolled the image back.
    await someoneElse.patchDeployment(live().id, { source_revision_config: { image_uri: 'docker.io/acme/api:0' } });
    emulator.resetLog();
    const result = await run({ op: 'update', fields: [MAX_SCALE] });
    expect(result).toMatchObject({
      outcome: 'unchanged',
      notRun: 'live_changed',
      message: `not written: live state changed since the decision: ${IMAGE} differs now, which the decided write does not cover; the next reconcile decides again`,
    });
    expect(writes(emulator.requestLog)).toEqual([]);
    expect(live().source_config).toMatchObject({ resource_spec: { max_scale: 1 } });
  });

  it('sends only what of the decided write live state still lacks', async () => {
    const { emulator, someoneElse, live, run } = await setup();
    // Decided: max_scale and the image; since, someone set the image already.
    await someoneElse.patchDeployment(live().id, { source_revision_config: { image_uri: 'docker.io/acme/api:2' } });
    emulator.resetLog();
    const result = await run({ op: 'update', fields: [MAX_SCALE, IMAGE] });
    expect(result).toMatchObject({
      outcome: 'adopted',
      fields: [expect.objectContaining({ path: MAX_SCALE, before: 1, after: 4 })],
    });
    expect(result.notRun).toBeUndefined();
    expect(writes(emulator.requestLog).map((e) => e.body)).toEqual([
      { source_config: { resource_spec: { max_scale: 4, min_scale: 1 } } },
    ]);
  });

  it('sends nothing when live state already holds the decided write', async () => {
    const { emulator, someoneElse, live, run } = await setup();
    await someoneElse.patchDeployment(live().id, {
      source_config: { resource_spec: { max_scale: 4, min_scale: 1 } },
      source_revision_config: { image_uri: 'docker.io/acme/api:2' },
    });
    emulator.resetLog();
    expect(await run({ op: 'update', fields: [MAX_SCALE, IMAGE] })).toEqual(
      expect.objectContaining({ outcome: 'unchanged', new_revision: false }),
    );
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('a decided rebuild of a deployment that drifted since sends nothing (the drift is the next decision)', async () => {
    const { emulator, someoneElse, live, run } = await setup();
    await someoneElse.patchDeployment(live().id, {
      source_config: { resource_spec: { max_scale: 4, min_scale: 1 } },
      source_revision_config: { image_uri: 'docker.io/acme/api:2' },
    });
    await someoneElse.patchDeployment(live().id, { source_config: { resource_spec: { max_scale: 9, min_scale: 1 } } });
    emulator.resetLog();
    expect(await run({ op: 'rebuild', fields: [] })).toMatchObject({
      notRun: 'live_changed',
      message: expect.stringContaining(`${MAX_SCALE} differs now`),
    });
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('a decided create sends nothing when a deployment of the name exists now (it is not taken over without a decision)', async () => {
    const { emulator, live, run } = await setup();
    const result = await run({ op: 'create', fields: ['name', 'source', MAX_SCALE, IMAGE] }, undefined);
    expect(result).toMatchObject({
      notRun: 'live_changed',
      message: expect.stringContaining(
        `a deployment named "api" exists now (id ${live().id}); the decision was to create it`,
      ),
    });
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('a decided update sends nothing when the deployment it was decided on is gone, or another took its name', async () => {
    const { emulator, someoneElse, live, run } = await setup();
    const decidedOn = live().id;
    await someoneElse.deleteDeployment(decidedOn, { deleteTracingProject: true });
    emulator.resetLog();
    expect(await run({ op: 'update', fields: [MAX_SCALE, IMAGE] }, decidedOn)).toMatchObject({
      notRun: 'live_changed',
      message: expect.stringContaining('the deployment is gone'),
    });
    await someoneElse.createDeployment({
      name: 'api',
      source: 'external_docker',
      source_config: { resource_spec: { max_scale: 1, min_scale: 1 } },
      source_revision_config: { image_uri: 'docker.io/acme/api:1' },
      secrets: [],
    });
    emulator.resetLog();
    const result = await run({ op: 'update', fields: [MAX_SCALE, IMAGE] }, decidedOn);
    expect(result).toMatchObject({
      notRun: 'live_changed',
      message: expect.stringContaining(
        `another deployment holds the name now (id ${live().id}; the decision was about ${decidedOn})`,
      ),
    });
    expect(writes(emulator.requestLog)).toEqual([]);
  });
});
