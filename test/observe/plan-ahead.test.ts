// The plan that streams (src/observe/plan-ahead.ts): each resource diffed as its file compiles gives, byte for byte, the
// plan and the decisions of diffing the whole sorted input at the end; real files, the emulator on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppliedRecord } from '../../src/core/model.js';
import { reconcileCorridor, type Corridor } from '../../src/observe/corridor.js';
import { gatherPlanInput, type GatherOptions } from '../../src/observe/gather.js';
import { listLiveDeployments } from '../../src/observe/live.js';
import { loadManifestDir } from '../../src/observe/manifests.js';
import { plan } from '../../src/plan/plan.js';
import { renderJson } from '../../src/plan/render/json.js';
import { manifestDir, providerYaml } from '../helpers/apply.js';
import { deploymentYaml, externalDockerSpec } from '../helpers/manifests.js';
import { dockerSeed, dockerYaml, servedEmulator } from '../helpers/served-emulator.js';

/** Enough files that their results arrive over several batches, before and after the listing's last page. */
const STEADY = 300;
const steadyNames = Array.from({ length: STEADY }, (_, i) => `steady-${String(i).padStart(3, '0')}`);
const NOW = Date.parse('2026-11-29T10:00:00Z');

describe('a plan that streams: the same plan as the whole', () => {
  const served = servedEmulator(dockerSeed([...steadyNames, 'web', 'keyed', 'twice', 'stray']));
  let tree: { dir: string; remove(): Promise<void> };
  const applied = new Map<string, AppliedRecord>([
    ['Deployment/keyed', { secrets: { API_KEY: 'a hash of an older value' }, appliedAt: '2026-11-28T10:00:00Z' }],
    ['Deployment/steady-007', { secrets: {}, appliedAt: '2026-11-28T10:00:00Z' }],
  ]);

  beforeAll(async () => {
    const files: Record<string, string> = {};
    for (const name of steadyNames) files[`team/${name}.yaml`] = dockerYaml(name, 1);
    Object.assign(files, {
      // An update (scale), a secret the applied record says changed, a create, a name declared twice, a secret whose
      // variable is not set, a provider (a kind the listing does not hold), a file that does not parse.
      'web.yaml': dockerYaml('web', 3),
      'keyed.yaml': deploymentYaml(
        'keyed',
        externalDockerSpec('docker.io/acme/keyed:1', 1, [['API_KEY', 'AHEAD_KEY']]),
      ),
      'fresh.yaml': dockerYaml('fresh', 2),
      'twice-a.yaml': dockerYaml('twice', 1),
      'twice-b.yaml': dockerYaml('twice', 2),
      'unset.yaml': deploymentYaml(
        'unset',
        externalDockerSpec('docker.io/acme/unset:1', 1, [['API_KEY', 'AHEAD_UNSET']]),
      ),
      'github.yaml': providerYaml('github', 'AHEAD_CLIENT_SECRET'),
      'broken.yaml': 'kind: Deployment\nmetadata: [\n',
    });
    tree = await manifestDir(files);
  });
  afterAll(() => tree.remove());

  const options = (): GatherOptions => ({
    dir: tree.dir,
    env: { AHEAD_KEY: 'a-secret-value-long-enough', AHEAD_CLIENT_SECRET: 'another-secret-value-long-enough' },
    client: served.client,
    allowLiteralSecrets: false,
    allowLocalDiscovery: false,
    applied: { getAll: async () => applied },
  });
  const decision = { mode: 'plan' as const, now: () => NOW };
  const outcomesOf = (corridor: Corridor): string => JSON.stringify([...corridor.outcomes], null, 1);

  it('the streamed corridor plans and decides what the corridor over the loaded whole does, byte for byte', async () => {
    const streamed = await reconcileCorridor({ scope: { tree: options() }, decision, healthNotes: true });
    const loaded = await loadManifestDir(tree.dir, { allowLiteralSecrets: false });
    const whole = await reconcileCorridor({
      scope: { files: options(), loaded, live: listLiveDeployments(served.client), applied: Promise.resolve(applied) },
      decision,
      healthNotes: true,
    });
    expect(whole.gathered.prepared).toBeUndefined();
    expect(renderJson(streamed.plan)).toBe(renderJson(whole.plan));
    expect(outcomesOf(streamed)).toBe(outcomesOf(whole));
    expect(JSON.stringify([...streamed.fingerprints])).toBe(JSON.stringify([...whole.fingerprints]));
    // The plan holds every case above, so the comparison covers them.
    const actions = new Map(streamed.plan.changes.map((c) => [c.name, c.action]));
    expect([
      actions.get('web'),
      actions.get('keyed'),
      actions.get('fresh'),
      actions.get('twice'),
      actions.get('unset'),
      actions.get('stray'),
    ]).toEqual(['adopt', 'update', 'create', 'blocked', 'blocked', 'orphan']);
    expect(streamed.plan.summary.noop).toBe(STEADY);
  });

  it('changes are diffed ahead, and plan() takes each that fits (only the name declared twice is left)', async () => {
    const gathered = await gatherPlanInput(options());
    const prepared = gathered.prepared!;
    expect(prepared.size).toBeGreaterThan(0);
    const streamed = plan(gathered.input, prepared);
    // What plan() did not take: the two declarations of `twice` (blocked), when they were diffed before gathering ended.
    expect(prepared.size).toBeLessThanOrEqual(2);
    expect(renderJson(streamed)).toBe(renderJson(plan(gathered.input)));
  });
});
