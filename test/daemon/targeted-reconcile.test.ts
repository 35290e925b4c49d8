// A watch event's targeted reconcile decides what a full reconcile decides for the same change: the same outcome for every resource and the same jobs, over real files and the emulator on loopback (an edit, a rename across files, a file that fails to load, a removed file under prune).
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ReconcileOutcome } from '../../src/daemon/cycle/cycle.js';
import { reconcileDirectory } from '../../src/daemon/cycle/cycle.js';
import type { CycleContext } from '../../src/daemon/cycle/cycle-context.js';
import { LastGoodManifests } from '../../src/daemon/cycle/last-good.js';
import { WatchScope } from '../../src/daemon/reconcile/watch-scope.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { ManifestCache } from '../../src/observe/manifests.js';
import { ServiceClient } from '../../src/service/client.js';
import { manifestDir, seedWith } from '../helpers/apply.js';
import { FakeEnqueuer, fakePorts } from '../helpers/daemon-ports.js';
import { deploymentYaml, externalDockerSpec } from '../helpers/manifests.js';

const SEED = seedWith(
  ['steady', 'web', 'api', 'gone'].map((name) => ({
    name,
    source: 'external_docker' as const,
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
  })),
);

const yaml = (name: string, scale: number, image = `docker.io/acme/${name}:1`): string =>
  deploymentYaml(name, externalDockerSpec(image, scale));

/** Before the change: one resource a file, but api and steady share one file (a rename across files moves api out). */
const BEFORE = {
  'steady.yaml': `${yaml('steady', 1)}---\n${yaml('api', 1)}`,
  'web.yaml': yaml('web', 1),
  'gone.yaml': yaml('gone', 1),
};

/** One daemon's world: its own fakes of the stores and queue, its own manifest cache and last good manifests. */
function world(client: ServiceClient, dir: string, prune: boolean) {
  const stores = fakePorts();
  const enqueuer = new FakeEnqueuer();
  // converge created every seeded deployment: a removed file's resource is converge's to prune.
  const ctx: CycleContext = {
    dir,
    env: {},
    client,
    enqueuer,
    ...stores.ports,
    lastGood: new LastGoodManifests(),
    manifestCache: new ManifestCache(),
    settings: { allowLocalDiscovery: false, driftPolicy: 'report', prune, maxDeletes: 5 },
  };
  return { stores, enqueuer, ctx };
}

/** What was decided of each resource, and the jobs handed to the queue: what the two paths must agree on. */
function decided(outcome: ReconcileOutcome, enqueuer: FakeEnqueuer) {
  const outcomes = [...outcome.outcomes.values()]
    .map((o) => ({
      key: o.key,
      action: o.action,
      sync: o.sync.status,
      reason: o.sync.reason,
      write: o.write?.op ?? null,
      drift: o.drift,
    }))
    .sort((a, b) => a.key.localeCompare(b.key));
  const jobs = enqueuer.added
    .map((d) => ({ key: d.key, operation: d.operation, desired: d.desired, deploymentId: d.deploymentId }))
    .sort((a, b) => a.key.localeCompare(b.key));
  const changes = outcome.plan.changes.map((c) => `${c.kind}/${c.name}:${c.action}`).sort();
  return { outcomes, jobs, changes, summary: outcome.plan.summary };
}

describe('a targeted reconcile decides what a full one decides for the same change', () => {
  let emulator: RunningEmulator;
  let client: ServiceClient;
  let tree: { dir: string; remove(): Promise<void> } | undefined;
  const log = pino({ level: 'silent' });

  beforeAll(async () => {
    emulator = await startEmulator({ seed: SEED, buildMs: 50 });
    client = new ServiceClient({ baseUrl: emulator.url });
  });
  afterAll(async () => {
    await client.close();
    await emulator.close();
  });
  afterEach(async () => {
    await tree?.remove();
    tree = undefined;
  });

  /**
   * Two daemons read the same directory: both reconcile it in full, the change is made, then one takes the watch
   * event's path (WatchScope.run with the changed paths) and the other a full reconcile. Returns both decisions.
   */
  async function bothPaths(change: (dir: string) => Promise<string[]>, prune = false) {
    tree = await manifestDir(BEFORE);
    const targeted = world(client, tree.dir, prune);
    const full = world(client, tree.dir, prune);
    for (const w of [targeted, full]) {
      for (const name of ['steady', 'web', 'api', 'gone']) {
        const live = (await client.listDeployments({ name_contains: name })).find((d) => d.name === name)!;
        w.stores.applied.set(`Deployment/${name}`, {
          secrets: {},
          appliedAt: new Date(0).toISOString(),
          ownership: { origin: 'created', id: live.id },
        });
      }
    }
    const scope = new WatchScope(log);
    await scope.run(targeted.ctx, 'all');
    await reconcileDirectory(full.ctx);
    targeted.enqueuer.added.length = 0;
    full.enqueuer.added.length = 0;
    const paths = await change(tree.dir);
    const t = await scope.run(targeted.ctx, new Set(paths));
    const f = await reconcileDirectory(full.ctx);
    return { targeted: t.outcome, full: f, t: decided(t.outcome, targeted.enqueuer), f: decided(f, full.enqueuer) };
  }

  it('an edit of one file: decided one by one (one resource), the same outcome and PATCH as the full path', async () => {
    const run = await bothPaths(async (dir) => {
      await writeFile(join(dir, 'web.yaml'), yaml('web', 3));
      return ['web.yaml'];
    });
    expect(run.targeted.targeted?.keys.size).toBe(1);
    expect(run.full.targeted).toBeUndefined();
    expect(run.t.jobs).toEqual([expect.objectContaining({ key: 'Deployment/web', operation: 'patch-deployment' })]);
    expect(run.t).toEqual(run.f);
  });

  it('a rename across files (api moves from steady.yaml to api.yaml): decided one by one, the same as the full path', async () => {
    const run = await bothPaths(async (dir) => {
      await writeFile(join(dir, 'api.yaml'), yaml('api', 2));
      await writeFile(join(dir, 'steady.yaml'), yaml('steady', 1));
      return ['api.yaml', 'steady.yaml'];
    });
    expect(run.targeted.targeted?.keys.size).toBe(2);
    expect(run.targeted.resources.get('Deployment/api')?.location.file).toBe('api.yaml');
    expect(run.t.jobs.map((j) => [j.key, j.operation])).toEqual([['Deployment/api', 'patch-deployment']]);
    expect(run.t).toEqual(run.f);
  });

  it('a file that fails to load: the full path holds its resource at its last good version, the same decision', async () => {
    const run = await bothPaths(async (dir) => {
      await writeFile(join(dir, 'web.yaml'), `${yaml('web', 3)}\n  bad: [unclosed\n`);
      return ['web.yaml'];
    });
    expect(run.targeted.targeted).toBeUndefined();
    expect(run.t.outcomes.find((o) => o.key === 'Deployment/web')?.action).toBe('blocked');
    expect(run.t.jobs).toEqual([]);
    expect(run.t).toEqual(run.f);
  });

  it('a removed file under prune: never deleted by a targeted reconcile; the full path deletes it, the same decision', async () => {
    const run = await bothPaths(async (dir) => {
      await rm(join(dir, 'gone.yaml'));
      return ['gone.yaml'];
    }, true);
    expect(run.targeted.targeted).toBeUndefined();
    expect(run.t.changes).toContain('Deployment/gone:delete');
    expect(run.t).toEqual(run.f);
  });

  it('a file emptied of its resource (the name is no longer declared where it was): the full path, the same decision', async () => {
    const run = await bothPaths(async (dir) => {
      await writeFile(join(dir, 'steady.yaml'), yaml('steady', 1));
      return ['steady.yaml'];
    }, true);
    expect(run.targeted.targeted).toBeUndefined();
    expect(run.t).toEqual(run.f);
  });
});
