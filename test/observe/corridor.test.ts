// The corridor of a reconcile (src/observe/corridor.ts) over real files and the emulator on loopback: plan's and
// apply's walk decide each planned resource once (the real decide, wrapped and counted), hooks run in order, and a
// declined input is neither planned nor decided.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, type DecisionInput } from '../../src/core/decide.js';
import { resourceKey } from '../../src/core/model.js';
import { reconcileCorridor, type CorridorDeclined } from '../../src/observe/corridor.js';
import type { GatherOptions } from '../../src/observe/gather.js';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { manifestDir } from '../helpers/apply.js';
import { dockerSeed, dockerYaml, servedEmulator } from '../helpers/served-emulator.js';

const yaml = dockerYaml;

describe('the corridor: load, list, plan, decide once', () => {
  const served = servedEmulator(dockerSeed(['steady', 'web', 'stray']));
  let tree: { dir: string; remove(): Promise<void> };

  beforeAll(async () => {
    const files = { 'steady.yaml': yaml('steady', 1), 'web.yaml': yaml('web', 3), 'fresh.yaml': yaml('fresh', 1) };
    tree = await manifestDir(files);
  });
  afterAll(() => tree.remove());

  const options = (): GatherOptions => {
    return { dir: tree.dir, env: {}, client: served.client, allowLiteralSecrets: false, allowLocalDiscovery: false };
  };

  function counted(): { calls: string[]; decide: (input: DecisionInput) => ReturnType<typeof decide> } {
    const calls: string[] = [];
    return { calls, decide: (input) => (calls.push(resourceKey(input.change.kind, input.change.name)), decide(input)) };
  }

  it.each(['plan', 'apply'] as const)('%s: each planned resource (orphans too) decided once', async (mode) => {
    const counter = counted();
    const order: string[] = [];
    const corridor = await reconcileCorridor({
      scope: { tree: options() },
      decision: { mode, now: () => Date.now(), decide: counter.decide },
      input: (gathered) => (order.push('input'), gathered.input),
      planned: async (result) => (order.push('planned'), result),
      memory: async () => (order.push('memory'), { memory: {} }),
      onStep: (step) => order.push(step),
      healthNotes: true,
    });
    expect(order).toEqual(['input', 'planned', 'memory', 'revisions', 'decision']);
    const planned = corridor.plan.changes.map((c) => resourceKey(c.kind, c.name)).sort();
    expect(planned).toEqual(['Deployment/fresh', 'Deployment/steady', 'Deployment/stray', 'Deployment/web']);
    expect([...counter.calls].sort()).toEqual(planned);
    // One outcome, and the input it was decided from, per planned resource; the writes are plan's and apply's alike.
    expect([...corridor.outcomes.keys()].sort()).toEqual(planned);
    expect([...corridor.inputs.keys()].sort()).toEqual(planned);
    const writes = [...corridor.outcomes.values()].filter((o) => o.write).map((o) => [o.key, o.write!.op]);
    expect(writes.sort()).toEqual([
      ['Deployment/fresh', 'create'],
      ['Deployment/web', 'update'],
    ]);
  });

  it('a declined input (a targeted reconcile giving way): not planned, no revision read, nothing decided', async () => {
    const counter = counted();
    const steps: string[] = [];
    const loaded = await loadManifestDir(tree.dir, { allowLiteralSecrets: false });
    const answer = await reconcileCorridor<CorridorDeclined>({
      scope: { files: options(), loaded, live: served.client.listDeployments(), applied: Promise.resolve(new Map()) },
      decision: { mode: 'daemon', now: () => Date.now(), decide: counter.decide },
      input: () => ({ declined: 'a changed resource is blocked' }),
      onStep: (step) => steps.push(step),
    });
    expect(answer).toEqual({ declined: 'a changed resource is blocked' });
    expect([counter.calls, steps]).toEqual([[], []]);
  });
});
