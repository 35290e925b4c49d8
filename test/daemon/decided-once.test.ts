// decide() runs once per resource per reconcile: the daemon's full and targeted reconciles, counted through the
// context's decide (the real one, wrapped), over real files and the emulator on loopback.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { decide, type DecisionInput } from '../../src/core/decide.js';
import { resourceKey, type PlanChange } from '../../src/core/model.js';
import { reconcileDirectory } from '../../src/daemon/cycle/cycle.js';
import type { CycleContext } from '../../src/daemon/cycle/cycle-context.js';
import { LastGoodManifests } from '../../src/daemon/cycle/last-good.js';
import { reconcileFiles } from '../../src/daemon/cycle/targeted.js';
import { ManifestCache } from '../../src/observe/manifests.js';
import { manifestDir } from '../helpers/apply.js';
import { FakeEnqueuer, fakePorts } from '../helpers/daemon-ports.js';
import { dockerSeed, dockerYaml, servedEmulator } from '../helpers/served-emulator.js';

const SEED = dockerSeed(['steady', 'web', 'api', 'stray']);
const yaml = dockerYaml;

/** steady in sync; web and api scaled up (updates); fresh not live (a create); stray in no manifest (an orphan). */
const FILES = {
  'steady.yaml': yaml('steady', 1),
  'web.yaml': yaml('web', 3),
  'api.yaml': yaml('api', 2),
  'fresh.yaml': yaml('fresh', 1),
};

/** The real decide, counted per resource. */
function countingDecide(): { calls: Map<string, number>; decide: (input: DecisionInput) => ReturnType<typeof decide> } {
  const calls = new Map<string, number>();
  return {
    calls,
    decide: (input) => {
      const key = resourceKey(input.change.kind, input.change.name);
      calls.set(key, (calls.get(key) ?? 0) + 1);
      return decide(input);
    },
  };
}

const keysOf = (changes: readonly PlanChange[]): string[] => changes.map((c) => resourceKey(c.kind, c.name)).sort();

describe('decide() runs once per resource per reconcile', () => {
  const served = servedEmulator(SEED);
  let tree: { dir: string; remove(): Promise<void> };
  let enqueuer: FakeEnqueuer;
  let counter: ReturnType<typeof countingDecide>;
  let ctx: CycleContext;

  beforeEach(async () => {
    tree = await manifestDir(FILES);
    enqueuer = new FakeEnqueuer();
    counter = countingDecide();
    ctx = {
      dir: tree.dir,
      env: {},
      client: served.client,
      enqueuer,
      ...fakePorts().ports,
      lastGood: new LastGoodManifests(),
      manifestCache: new ManifestCache(),
      settings: { allowLocalDiscovery: false, driftPolicy: 'heal' },
      decide: counter.decide,
    };
    return () => tree.remove();
  });

  it('a full reconcile: each planned resource once, the queue answering in flight, finished, added', async () => {
    // The queue's three answers, each of which the act used to decide again: a job of web's desired state is waiting,
    // one of fresh's finished during the reconcile, api's is added.
    enqueuer.answer.set('Deployment/web', 'in-flight');
    enqueuer.answer.set('Deployment/fresh', 'finished');
    const outcome = await reconcileDirectory(ctx);

    const planned = keysOf(outcome.plan.changes);
    expect(planned).toEqual(['api', 'fresh', 'steady', 'stray', 'web'].map((name) => `Deployment/${name}`));
    expect([...counter.calls.keys()].sort()).toEqual(planned);
    expect([...counter.calls.values()].every((n) => n === 1)).toBe(true);

    // The act updated the decided outcomes with what the queue answered.
    expect(enqueuer.added.map((d) => d.key)).toEqual(['Deployment/api']);
    const api = outcome.outcomes.get('Deployment/api')!;
    expect(api.sync.reason).toBe('Applying');
    expect(api.job?.jobId).toBe('Deployment/api@1');
    const web = outcome.outcomes.get('Deployment/web')!;
    expect([web.sync.reason, web.write, web.job?.jobId]).toEqual(['Applying', null, 'Deployment/web@earlier']);
    const fresh = outcome.outcomes.get('Deployment/fresh')!;
    expect([fresh.sync.reason, fresh.sync.status, fresh.write]).toEqual(['Applied', 'synced', null]);
    expect(outcome.outcomes.get('Deployment/steady')!.sync.reason).toBe('Synced');
    expect(outcome.outcomes.get('Deployment/stray')!.sync.reason).toBe('Orphan');
  });

  it("a targeted reconcile: the changed file's resource only, once", async () => {
    const previous = await reconcileDirectory(ctx);
    counter.calls.clear();
    enqueuer.answer.set('Deployment/steady', 'in-flight');
    await writeFile(join(tree.dir, 'steady.yaml'), yaml('steady', 4));
    const targeted = await reconcileFiles(ctx, previous, ['steady.yaml']);

    if (!('outcome' in targeted)) throw new Error(`took the full path: ${targeted.full}`);
    expect([...targeted.outcome.targeted!.keys]).toEqual(['Deployment/steady']);
    expect([...counter.calls]).toEqual([['Deployment/steady', 1]]);
    const steady = targeted.outcome.outcomes.get('Deployment/steady')!;
    expect([steady.sync.reason, steady.job?.jobId]).toEqual(['Applying', 'Deployment/steady@earlier']);
  });
});
