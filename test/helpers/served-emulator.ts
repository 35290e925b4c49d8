// The emulator on loopback for the tests of one describe block: seeded with external_docker deployments, and a client.
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type EmulatorSeed, type RunningEmulator } from '../../src/emulator/server.js';
import { ServiceClient } from '../../src/service/client.js';
import { deploymentYaml, externalDockerSpec } from './manifests.js';
import { seedWith } from './apply.js';

/** A seed of one external_docker deployment per name, each at max_scale 1 with image docker.io/acme/NAME:1. */
export function dockerSeed(names: readonly string[]): EmulatorSeed {
  return seedWith(
    names.map((name) => ({
      name,
      source: 'external_docker' as const,
      source_config: { resource_spec: { max_scale: 1 } },
      source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    })),
  );
}

/** The manifest of `name` as dockerSeed serves it, at max_scale `scale`. */
export function dockerYaml(name: string, scale: number): string {
  return deploymentYaml(name, externalDockerSpec(`docker.io/acme/${name}:1`, scale));
}

interface Served {
  emulator: RunningEmulator;
  client: ServiceClient;
}

/** Started before the block's tests (builds take 50 ms), closed after them; read its fields inside the tests. */
export function servedEmulator(seed: EmulatorSeed): Readonly<Served> {
  const served = {} as Served;
  beforeAll(async () => {
    served.emulator = await startEmulator({ seed, buildMs: 50 });
    served.client = new ServiceClient({ baseUrl: served.emulator.url });
  });
  afterAll(async () => {
    await served.client.close();
    await served.emulator.close();
  });
  return served;
}
