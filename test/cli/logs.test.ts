// `converge logs NAME` for a name the service does not have: names that contain it, else where deployment names are listed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { seedWith } from '../helpers/apply.js';
import { runCapture } from '../helpers/cli.js';

const docker = (name: string) => ({
  name,
  source: 'external_docker',
  source_config: { resource_spec: { max_scale: 1 } },
  source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
});

describe('converge logs with an unknown name', () => {
  let emulator: RunningEmulator;
  beforeAll(async () => {
    emulator = await startEmulator({ seed: seedWith([docker('support-agent'), docker('support-bot'), docker('etl')]) });
  });
  afterAll(async () => {
    await emulator.close();
  });

  it('offers the names that contain it', async () => {
    const run = await runCapture(['logs', 'support', '--api-url', emulator.url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'converge logs: the service has no deployment named "support"; did you mean one of "support-agent", "support-bot"?\n',
    );
  });

  it("else points at the listing of live deployment names (the plan's orphans), not at export", async () => {
    const run = await runCapture(['logs', 'nope', '--api-url', emulator.url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'converge logs: the service has no deployment named "nope"; a deployment is named by its metadata.name: converge plan DIR --show-orphans lists the live deployments no manifest in DIR declares, and the manifests name the rest\n',
    );
    expect(run.stderr).not.toContain('export');
  });
});
