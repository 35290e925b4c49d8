// Apply under injected faults: 503s, 429s with Retry-After, connections dropped before and after handling.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  deploymentYaml,
  externalDockerSpec,
  landedWrites,
  manifestDir,
  providerYaml,
  runApplyCli,
  seedWith,
  writes,
} from '../helpers/apply.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { prng } from '../helpers/prng.js';

const NEW = Array.from({ length: 12 }, (_, i) => `new-${i}`);
const CHANGED = Array.from({ length: 8 }, (_, i) => `changed-${i}`);
const PROVIDERS = ['alpha', 'beta', 'gamma'];
const FAULT_SEEDS = { jitter: 20261121, reset: 20261122, fail: 20261125, rateLimit: 20261128, lost: 20261137 } as const;

function files(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of NEW)
    out[`new/${name}.yaml`] = deploymentYaml(
      name,
      externalDockerSpec(`docker.io/acme/${name}:1`, 2, [['TOKEN', 'FAULT_TOKEN']]),
    );
  // half of the changed ones change a secret too (so a second PATCH would be a needless revision)
  CHANGED.forEach((name, i) => {
    out[`changed/${name}.yaml`] = deploymentYaml(
      name,
      externalDockerSpec(`docker.io/acme/${name}:1`, 5, i % 2 === 0 ? [['TOKEN', 'FAULT_TOKEN']] : []),
    );
  });
  for (const name of PROVIDERS) out[`providers/${name}.yaml`] = providerYaml(name, 'FAULT_PROVIDER_SECRET');
  return out;
}

const SEED = seedWith(
  CHANGED.map((name) => ({
    name,
    source: 'external_docker' as const,
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
  })),
);

describe('apply under faults', () => {
  let emulator: RunningEmulator;
  let tree: { dir: string; remove(): Promise<void> };
  const prefix = testPrefix('faults');
  const env = { FAULT_TOKEN: 'planted-fault-token-41d2', FAULT_PROVIDER_SECRET: 'planted-fault-provider-77c0' };

  beforeAll(async () => {
    emulator = await startEmulator({
      seed: SEED,
      buildMs: 0,
      failRate: 0.2,
      rateLimitRate: 0.1,
      resetRate: 0.05,
      lostResponseRate: 0.05,
      retryAfterSeconds: 0.2,
      // One seeded stream per knob: each kind of fault fires within its first five draws (reset at the
      // 3rd request, 503 at the 5th not reset, 429 at the 4th, a lost answer at the 2nd handled), whatever
      // order the six concurrent jobs' requests arrive in. So every run meets every kind, not by chance.
      randomFor: (site) => prng(FAULT_SEEDS[site]),
      latencyMs: 2,
      jitterMs: 5,
    });
    tree = await manifestDir(files());
  });
  afterAll(async () => {
    await emulator.close();
    await tree.remove();
    await dropPrefix(prefix);
  });

  it('lands every change exactly once: 20% 503, 10% 429, 5% dropped before and 5% after handling', async () => {
    const argv = [
      tree.dir,
      '--api-url',
      emulator.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--concurrency',
      '6',
      '--attempts',
      '12',
      '--backoff',
      '20ms',
      '--log-level',
      'warn',
    ];
    const run = await runApplyCli(argv, env);
    expect(run.stdout).toContain('Apply complete: 23 done, 0 unchanged, 0 failed.');
    expect(run.code).toBe(0);

    const faults = emulator.requestLog.filter((e) => e.outcome.startsWith('fault-'));
    const kinds = new Set(faults.map((e) => e.outcome));
    // the run did meet every kind of fault
    expect([...kinds].sort()).toEqual(['fault-429', 'fault-503', 'fault-lost', 'fault-reset']);

    const landed = landedWrites(emulator.requestLog);
    const creates = landed
      .filter((e) => e.route === '/v2/deployments')
      .map((e) => (e.body as { name: string }).name)
      .sort();
    expect(creates).toEqual([...NEW].sort());
    const patches = landed.filter((e) => e.route === '/v2/deployments/{deployment_id}');
    expect(patches).toHaveLength(CHANGED.length);
    expect(new Set(patches.map((e) => e.deploymentId)).size).toBe(CHANGED.length);
    const providers = landed
      .filter((e) => e.route === '/v2/auth/providers')
      .map((e) => (e.body as { provider_id: string }).provider_id)
      .sort();
    expect(providers).toEqual([...PROVIDERS].sort());
    // no needless revision: one per create and one per changed deployment
    expect(landed.filter((e) => e.newRevision).length).toBe(NEW.length + CHANGED.length);

    // level-triggered: nothing is left to do, even with the faults still on
    emulator.resetLog();
    const again = await runApplyCli(argv, env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No changes. Live state matches the manifests.');
    expect(writes(emulator.requestLog)).toEqual([]);
  }, 120_000);
});
