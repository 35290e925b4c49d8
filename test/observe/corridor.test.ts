// The corridor of a reconcile (src/observe/corridor.ts) over real files and the emulator on loopback: plan's and apply's walk decide each planned resource once (counted through the real decide, wrapped), a caller's hooks run in order, and a declined input is neither planned nor decided.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, type DecisionInput } from '../../src/core/decide.js';
import { resourceKey } from '../../src/core/model.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { reconcileCorridor, type CorridorDeclined } from '../../src/observe/corridor.js';
import type { GatherOptions } from '../../src/observe/gather.js';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { ServiceClient } from '../../src/service/client.js';
import { manifestDir, seedWith } from '../helpers/apply.js';
import { deploymentYaml, externalDockerSpec } from '../helpers/manifests.js';

const SEED = seedWith(
  ['steady', 'web', 'stray'].map((name) => ({
    name,
    source: 'external_docker' as const,
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
  })),
);

const yaml = (name: string, scale: number): string => deploymentYaml(name, externalDockerSpec(`docker.io/acme/${name}:1`, scale));

describe('the corridor: load, list, plan, decide once', () => {
  let emulator: RunningEmulator;
  let client: ServiceClient;
  let tree: { dir: string; remove(): Promise<void> };

  beforeAll(async () => {
    emulator = await startEmulator({ seed: SEED, buildMs: 50 });
    client = new ServiceClient({ baseUrl: emulator.url });
    tree = await manifestDir({ 'steady.yaml': yaml('steady', 1), 'web.yaml': yaml('web', 3), 'fresh.yaml': yaml('fresh', 1) });
  });
  afterAll(async () => {
    await tree.remove();
    await client.close();
    await emulator.close();
  });

  const options = (): GatherOptions => ({ dir: tree.dir, env: {}, client, allowLiteralSecrets: false, allowLocalDiscovery: false });

  function counted(): { calls: string[]; decide: (input: DecisionInput) => ReturnType<typeof decide> } {
    const calls: string[] = [];
    return { calls, decide: (input) => (calls.push(resourceKey(input.change.kind, input.change.name)), decide(input)) };
  }

  it.each(['plan', 'apply'] as const)('%s: every planned resource (orphans too) decided once, hooks in order', async (mode) => {
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
    expect(writes.sort()).toEqual([['Deployment/fresh', 'create'], ['Deployment/web', 'update']]);
  });

  it('a declined input (the daemon\'s targeted reconcile giving way) is neither planned, read for revisions nor decided', async () => {
    const counter = counted();
    const steps: string[] = [];
    const loaded = await loadManifestDir(tree.dir, { allowLiteralSecrets: false });
    const answer = await reconcileCorridor<CorridorDeclined>({
      scope: { files: options(), loaded, live: client.listDeployments(), applied: Promise.resolve(new Map()) },
      decision: { mode: 'daemon', now: () => Date.now(), decide: counter.decide },
      input: () => ({ declined: 'a changed resource is blocked' }),
      onStep: (step) => steps.push(step),
    });
    expect(answer).toEqual({ declined: 'a changed resource is blocked' });
    expect([counter.calls, steps]).toEqual([[], []]);
  });
});
