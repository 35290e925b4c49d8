// converge apply end to end: real emulator on loopback, real Redis, jobs through BullMQ, in-process workers.
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

const SECRETS = {
  TEST_OPENAI_KEY: 'planted-openai-8c1f',
  TEST_WEB_KEY: 'planted-web-2b7d',
  TEST_SLACK_SECRET: 'planted-slack-93ae',
};

const MIXED = {
  'apps/fresh.yaml': deploymentYaml(
    'fresh',
    [
      'source: codehost',
      'repository: acme/support-agent',
      'source_config:',
      '  resource_spec: { max_scale: 2 }',
      'source_revision_config:',
      '  graph_config_path: graph.json',
      'secrets:',
      '  - name: OPENAI_API_KEY',
      '    valueFrom: { env: TEST_OPENAI_KEY }',
    ].join('\n'),
  ),
  'apps/web.yaml': deploymentYaml('web', externalDockerSpec('docker.io/acme/web:1', 3, [['API_KEY', 'TEST_WEB_KEY']])),
  'apps/steady.yaml': deploymentYaml('steady', externalDockerSpec('docker.io/acme/steady:2', 1)),
  'providers/slack.yaml': providerYaml('slack', 'TEST_SLACK_SECRET'),
};

const SEED = seedWith([
  {
    name: 'web',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: 'docker.io/acme/web:1' },
    secrets: [{ name: 'API_KEY', value: 'old-web-value' }],
  },
  {
    name: 'steady',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: 'docker.io/acme/steady:2' },
  },
]);

describe('converge apply', () => {
  let emulator: RunningEmulator;
  let tree: { dir: string; remove(): Promise<void> };
  const prefix = testPrefix('apply');

  beforeAll(async () => {
    emulator = await startEmulator({ seed: SEED, buildMs: 200 });
    tree = await manifestDir(MIXED);
  });
  afterAll(async () => {
    await emulator.close();
    await tree.remove();
    await dropPrefix(prefix);
  });

  const argv = (...extra: string[]): string[] => [
    tree.dir,
    '--api-url',
    emulator.url,
    '--redis-url',
    REDIS_URL,
    '--redis-prefix',
    prefix,
    '--concurrency',
    '4',
    '--backoff',
    '50ms',
    ...extra,
  ];

  it('converges a mixed set (create, patch with secrets, provider) and a second apply writes nothing', async () => {
    const first = await runApplyCli(argv('--wait', '--wait-timeout', '20s'), { ...SECRETS });
    // Not a terminal: only the wait's progress, a line when its counts change.
    expect(
      first.stderr
        .split('\n')
        .filter(Boolean)
        .every((line) =>
          /^converge apply: waiting for 2 revisions: \d active, \d building \[\d+s elapsed\]$/.test(line),
        ),
    ).toBe(true);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('Plan: 2 to create, 0 to update, 1 to adopt, 0 blocked, 0 orphaned, 1 unchanged.');
    expect(first.stdout).toMatch(/done +Deployment\/fresh: created; a new revision started/);
    // The plan's adopt is reported as what it was: the first write takes it over.
    expect(first.stdout).toMatch(/done +Deployment\/web: adopted; a new revision started/);
    expect(first.stdout).toMatch(/done +OAuthProvider\/slack: created/);
    expect(first.stdout).toMatch(/active +Deployment\/fresh: new revision is active/);
    expect(first.stdout).toMatch(/active +Deployment\/web: new revision is active/);
    expect(first.stdout).toContain('Apply complete: 3 done, 0 unchanged, 0 failed. Live state matches the manifests.');

    const landed = landedWrites(emulator.requestLog)
      .map((e) => `${e.method} ${e.route}`)
      .sort();
    expect(landed).toEqual([
      'PATCH /v2/deployments/{deployment_id}',
      'POST /v2/auth/providers',
      'POST /v2/deployments',
    ]);
    const patch = emulator.requestLog.find((e) => e.method === 'PATCH')!;
    // each job read its deployment right before writing: the update by the id the plan listed, the create by name
    const patchAt = emulator.requestLog.indexOf(patch);
    const readById = emulator.requestLog.findIndex(
      (e) =>
        e.method === 'GET' && e.route === '/v2/deployments/{deployment_id}' && e.deploymentId === patch.deploymentId,
    );
    expect(readById).toBeGreaterThan(-1);
    expect(readById).toBeLessThan(patchAt);
    expect(emulator.requestLog.some((e) => e.method === 'GET' && e.query.name_contains === 'web')).toBe(false);
    expect(emulator.requestLog.some((e) => e.method === 'GET' && e.query.name_contains === 'fresh')).toBe(true);
    // the minimal PATCH: resource_spec (sent whole) and the secret whose value the service hides, nothing else
    expect(Object.keys(patch.body as object).sort()).toEqual(['secrets', 'source_config']);
    const create = emulator.requestLog.find((e) => e.method === 'POST' && e.route === '/v2/deployments')!;
    expect((create.body as { source_config: { repo_url: string } }).source_config.repo_url).toBe(
      'https://codehost.example.com/acme/support-agent',
    );

    emulator.resetLog();
    const second = await runApplyCli(argv(), { ...SECRETS });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('No changes. Live state matches the manifests.');
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('re-applies a changed secret once, from the applied-state hashes, though the service masks values', async () => {
    emulator.resetLog();
    const changed = await runApplyCli(argv(), { ...SECRETS, TEST_WEB_KEY: 'planted-web-rotated-55aa' });
    expect(changed.code).toBe(0);
    expect(changed.stdout).toContain('Plan: 0 to create, 1 to update, 0 blocked, 0 orphaned, 3 unchanged.');
    const patches = writes(emulator.requestLog);
    expect(patches.map((e) => `${e.method} ${e.status}`)).toEqual(['PATCH 200']);
    expect(Object.keys(patches[0]!.body as object)).toEqual(['secrets']);
    emulator.resetLog();
    const again = await runApplyCli(argv(), { ...SECRETS, TEST_WEB_KEY: 'planted-web-rotated-55aa' });
    expect(again.code).toBe(0);
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('prints json with the plan, one result per resource and converged', async () => {
    // the web secret goes back to its first value: one update
    const run = await runApplyCli(argv('--output', 'json'), { ...SECRETS });
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.converged).toBe(true);
    expect(out.plan.summary).toEqual({
      create: 0,
      update: 1,
      adopt: 0,
      delete: 0,
      noop: 3,
      orphan: 0,
      blocked: 0,
      suspended: 0,
    });
    expect(out.results).toHaveLength(1);
    expect(out.results[0]).toMatchObject({
      kind: 'Deployment',
      name: 'web',
      status: 'done',
      outcome: 'updated',
      new_revision: true,
    });
    expect(run.stdout).not.toContain(SECRETS.TEST_WEB_KEY);
  });
});
