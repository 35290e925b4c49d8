// converge apply of more changes than one enqueue batch: every job tracked and landed once; applied hashes read ahead.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { ENQUEUE_BATCH } from '../../src/jobs/queue/enqueuer.js';
import {
  deploymentYaml,
  externalDockerSpec,
  landedWrites,
  manifestDir,
  runApplyCli,
  seedWith,
  writes,
} from '../helpers/apply.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

// More than the first batch and several of the smaller batches after it.
const COUNT = ENQUEUE_BATCH + 57;
const names = Array.from({ length: COUNT }, (_, i) => `many-${String(i).padStart(3, '0')}`);
const image = (name: string): string => `docker.io/acme/${name}:1`;

describe('converge apply of many changes', () => {
  let emulator: RunningEmulator;
  let tree: { dir: string; remove(): Promise<void> };
  const prefix = testPrefix('many');
  const env = { TEST_MANY_KEY: 'planted-many-5e21' };

  async function writeManifests(maxScale: number): Promise<void> {
    for (const name of names) {
      await writeFile(
        join(tree.dir, `${name}.yaml`),
        deploymentYaml(name, externalDockerSpec(image(name), maxScale, [['API_KEY', 'TEST_MANY_KEY']])),
      );
    }
  }

  beforeAll(async () => {
    // The emulator masks secret values: whether API_KEY needs a write is known only from the applied hashes.
    emulator = await startEmulator({
      seed: seedWith(
        names.map((name) => ({
          name,
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: image(name) },
        })),
      ),
      buildMs: 0,
    });
    tree = await manifestDir({});
  });
  afterAll(async () => {
    await emulator.close();
    await tree.remove();
    await dropPrefix(prefix);
  });

  const argv = (): string[] => [
    tree.dir,
    '--api-url',
    emulator.url,
    '--redis-url',
    REDIS_URL,
    '--redis-prefix',
    prefix,
    '--concurrency',
    '8',
    '--backoff',
    '50ms',
  ];
  const patchedNames = (): string[] => {
    const byId = new Map(emulator.store.allDeployments().map((d) => [d.id, d.name]));
    return landedWrites(emulator.requestLog)
      .map((e) => byId.get(e.deploymentId!)!)
      .sort();
  };

  it('patches each deployment once, then only what changed (no secret re-sent), then nothing', async () => {
    await writeManifests(2);
    const first = await runApplyCli(argv(), env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`Apply complete: ${COUNT} done, 0 unchanged, 0 failed.`);
    expect(patchedNames()).toEqual(names);
    // no applied hash yet: the secret is written once with the change
    expect(
      landedWrites(emulator.requestLog).every(
        (e) =>
          Object.keys(e.body as object)
            .sort()
            .join() === 'secrets,source_config',
      ),
    ).toBe(true);

    emulator.resetLog();
    await writeManifests(3);
    const second = await runApplyCli(argv(), env);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`Apply complete: ${COUNT} done, 0 unchanged, 0 failed.`);
    expect(patchedNames()).toEqual(names);
    // the hashes recorded by the first apply, read ahead by this one, show the secret unchanged: only resource_spec goes
    expect(
      landedWrites(emulator.requestLog)
        .map((e) => Object.keys(e.body as object).join())
        .filter((keys) => keys !== 'source_config'),
    ).toEqual([]);
    expect(
      emulator.store
        .allDeployments()
        .every((d) => (d.source_config.resource_spec as { max_scale?: number }).max_scale === 3),
    ).toBe(true);

    emulator.resetLog();
    const third = await runApplyCli(argv(), env);
    expect(third.code).toBe(0);
    expect(third.stdout).toContain('No changes. Live state matches the manifests.');
    expect(writes(emulator.requestLog)).toEqual([]);
  });
});
