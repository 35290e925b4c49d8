// Tolerant reading, strict writing: unknown fields, statuses and sources and a missing tenant_id never fail a listing;
// preview deployments and deployments being deleted are shown and never written, neither by the plan nor by a job.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { parseManifestBytes } from '../../src/core/manifest/parse.js';
import type { Plan } from '../../src/core/model.js';
import { startEmulator, type EmulatorSeed } from '../../src/emulator/server.js';
import { AppliedStateStore } from '../../src/store/applied-state.js';
import { ServiceClient } from '../../src/service/client.js';
import { syncResource } from '../../src/sync/sync.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCapture } from '../helpers/cli.js';

function docker(
  name: string,
  maxScale: number,
  extra: Record<string, unknown> = {},
): NonNullable<EmulatorSeed['deployments']>[number] {
  return {
    name,
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: maxScale } },
    source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    ...extra,
  };
}

const SEED = seedWith([
  docker('preview-same', 1, { is_preview: true }),
  docker('preview-diff', 1, { is_preview: true }),
  docker('going', 1, { status: 'AWAITING_DELETE' }),
  docker('odd-status', 1, { status: 'MIGRATING' }),
  { name: 'quantum', source: 'quantum_source', source_config: {}, source_revision_config: {} },
  docker('normal', 1),
]);

const FILES = Object.fromEntries(
  (
    [
      ['preview-same', 1],
      ['preview-diff', 3],
      ['going', 1],
      ['odd-status', 1],
      ['normal', 2],
    ] as const
  ).map(([name, scale]) => [
    `${name}.yaml`,
    deploymentYaml(name, externalDockerSpec(`docker.io/acme/${name}:1`, scale)),
  ]),
);

describe('tolerant reading against a service with previews, deletions, unknown values and no tenant_id', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup() {
    const emulator = await startEmulator({ seed: SEED, buildMs: 0, omitTenantId: true, echo: 'real' });
    const tree = await manifestDir(FILES);
    const prefix = testPrefix('tolerant');
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const common = ['--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
    return { emulator, tree, prefix, common };
  }

  it('plans every one of them: previews and deletions shown with the reason, never as an update; unknown status and source kept as text', async () => {
    const { emulator, tree, common } = await setup();
    const run = await runCapture(['plan', tree.dir, ...common, '--output', 'json']);
    expect(run.stderr.replace(/^converge plan: read \d+ manifest files? in \S+\n/, '')).toBe('');
    const plan = JSON.parse(run.stdout) as Plan;
    const change = (name: string) => plan.changes.find((c) => c.name === name)!;
    expect(change('preview-same')).toMatchObject({
      action: 'noop',
      reason: expect.stringContaining(
        'preview deployment (is_preview: true): converge never writes to a preview deployment',
      ),
    });
    expect(change('preview-diff')).toMatchObject({
      action: 'blocked',
      reason: expect.stringContaining('preview deployment (is_preview: true)'),
    });
    expect(change('going')).toMatchObject({
      action: 'blocked',
      reason: expect.stringContaining('status AWAITING_DELETE'),
    });
    expect(change('odd-status')).toMatchObject({
      action: 'noop',
      reason: 'the service reports status "MIGRATING", which this converge does not know; shown as given',
    });
    expect(change('quantum')).toMatchObject({ action: 'orphan' });
    expect(change('normal')).toMatchObject({ action: 'adopt' });

    emulator.resetLog();
    const apply = await runApplyCli([tree.dir, ...common], {});
    expect(apply.stdout).toContain('Plan: 0 to create, 0 to update, 1 to adopt, 2 blocked');
    expect(
      writes(emulator.requestLog).map(
        (e) => `${e.method} ${e.deploymentId === emulator.store.allDeployments().find((d) => d.name === 'normal')!.id}`,
      ),
    ).toEqual(['PATCH true']);
  });

  it('a job re-checks on its fresh read: it writes nothing to a preview deployment or one being deleted', async () => {
    const { emulator, prefix } = await setup();
    const service = new ServiceClient({ baseUrl: emulator.url });
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    cleanups.push(
      () => service.close(),
      async () => void redis.disconnect(),
    );
    const store = new AppliedStateStore(redis, prefix);
    for (const name of ['preview-diff', 'going']) {
      const parsed = parseManifestBytes(`${name}.yaml`, new TextEncoder().encode(FILES[`${name}.yaml`]), {
        allowLiteralSecrets: false,
      });
      const id = emulator.store.allDeployments().find((d) => d.name === name)!.id;
      // Decided as an update before the deployment became a preview or started to be deleted: the step sends nothing and says why, as a value.
      const outcome = await syncResource(
        parsed.resources[0]!,
        { op: 'update', fields: ['source_revision_config.image_uri'] },
        { service, appliedState: store, secretEnv: {} },
        id,
      );
      expect(outcome, name).toMatchObject({
        outcome: 'unchanged',
        notRun: 'live_changed',
        message: expect.stringMatching(
          /^not written: live state changed since the decision: the plan would block it now: .*(preview deployment|AWAITING_DELETE)/,
        ),
      });
    }
    expect(writes(emulator.requestLog)).toEqual([]);
  });
});
