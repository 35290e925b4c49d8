// A job's read by id: GET /v2/deployments/{id} where the service has it, probed once per client; the filtered list on a service without it.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../src/emulator/server.js';
import { ServiceClient } from '../../src/service/client.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const SEED = seedWith([
  {
    name: 'api',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: 'docker.io/acme/api:1' },
  },
  {
    name: 'web',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: 'docker.io/acme/web:1' },
  },
]);
const GONE = '0b5e4c5e-9c1f-4d3a-8f3e-2a6f1d2c3b4a';

function reads(emulator: RunningEmulator): string[] {
  return emulator.requestLog
    .filter((e) => e.method === 'GET')
    .map((e) =>
      e.route === '/v2/deployments'
        ? `list ${e.query.deployment_ids ? 'ids' : e.query.name_contains ? 'name' : 'all'}`
        : `${e.route} ${e.status}`,
    );
}

describe('reading one deployment by id', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function client(options: EmulatorOptions = {}) {
    const emulator = await startEmulator({ seed: SEED, buildMs: 0, ...options });
    const service = new ServiceClient({ baseUrl: emulator.url });
    const notices: string[] = [];
    service.onNotice((message) => notices.push(message));
    cleanups.push(
      () => emulator.close(),
      () => service.close(),
    );
    const id = (name: string) => emulator.store.allDeployments().find((d) => d.name === name)!.id;
    return { emulator, service, notices, id };
  }

  it("uses GET /v2/deployments/{id}, one request a read; the service's own 404 means gone", async () => {
    const { emulator, service, notices, id } = await client();
    expect((await service.readDeployment(id('api')))?.name).toBe('api');
    expect((await service.readDeployment(id('web')))?.name).toBe('web');
    expect(await service.readDeployment(GONE)).toBeUndefined();
    expect(reads(emulator)).toEqual([
      '/v2/deployments/{deployment_id} 200',
      '/v2/deployments/{deployment_id} 200',
      '/v2/deployments/{deployment_id} 404',
    ]);
    expect(notices).toEqual([]);
  });

  it('under --spec-only, probes once, says so once, and reads through the filtered list from then on (concurrent first reads included)', async () => {
    const { emulator, service, notices, id } = await client({ specOnly: true });
    const first = await Promise.all([service.readDeployment(id('api')), service.readDeployment(id('web'))]);
    expect(first.map((d) => d?.name)).toEqual(['api', 'web']);
    expect(await service.readDeployment(GONE)).toBeUndefined();
    const probes = reads(emulator).filter(
      (r) => r.startsWith('/v2/deployments/{deployment_id}') || r.startsWith('(unmatched)'),
    );
    expect(probes).toHaveLength(1);
    expect(probes[0]).toMatch(/ 40[45]$/);
    // the probe, then one filtered list per read (a found id ends its list at once; the gone one reads the empty page)
    expect(reads(emulator).filter((r) => r === 'list ids')).toHaveLength(3);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^the service has no GET \/v2\/deployments\/\{deployment_id\} \(it answered 40[45]\); a job reads a deployment from GET \/v2\/deployments\?deployment_ids= instead, for the rest of this process$/,
    );
  });

  it.each([
    ['the emulator default', {}, ['/v2/deployments/{deployment_id} 200']],
    ['--spec-only', { specOnly: true }, ['PROBE', 'list ids']],
  ] as const)(
    'a job patching a deployment reads it once before the write (%s), and logs the fallback once at info',
    async (_what, options, expected) => {
      const emulator = await startEmulator({ seed: SEED, buildMs: 0, ...options });
      const tree = await manifestDir({
        'api.yaml': deploymentYaml('api', externalDockerSpec('docker.io/acme/api:1', 3)),
      });
      const prefix = testPrefix('byid');
      cleanups.push(
        () => emulator.close(),
        () => tree.remove(),
        () => dropPrefix(prefix),
      );
      const run = await runApplyCli(
        [
          tree.dir,
          '--api-url',
          emulator.url,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefix,
          '--log-level',
          'info',
        ],
        {},
      );
      expect(run.code).toBe(0);
      expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['PATCH 200']);
      // after the plan's listing: the job's read before its write
      const jobReads = reads(emulator)
        .filter((r) => r !== 'list all')
        .map((r) => (/^(\/v2\/deployments\/\{deployment_id\}|\(unmatched\)) 40[45]$/.test(r) ? 'PROBE' : r));
      expect(jobReads).toEqual(expected);
      const fallbackLines = run.stderr
        .split('\n')
        .filter((l) => l.includes('the service has no GET /v2/deployments/{deployment_id}'));
      expect(fallbackLines).toHaveLength(options === undefined || !('specOnly' in options) ? 0 : 1);
    },
  );
});
