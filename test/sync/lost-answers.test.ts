// Writes whose answers are lost, creates that meet a 409, fatal answers and 429s: each write lands once or fails clearly.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../src/emulator/server.js';
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
import { lossyProxy, type LossyProxy } from '../helpers/lossy-proxy.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const ENV = { TOKEN_ENV: 'planted-token-6a1e', PROVIDER_ENV: 'planted-provider-0d3b' };

describe('lost answers and conflicts', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(
    files: Record<string, string>,
    seed = seedWith([]),
    rules: Parameters<typeof lossyProxy>[1] = {},
    options: Omit<EmulatorOptions, 'seed' | 'buildMs'> = {},
  ) {
    const emulator: RunningEmulator = await startEmulator({ seed, buildMs: 0, ...options });
    const proxy: LossyProxy = await lossyProxy(emulator.url, rules);
    const tree = await manifestDir(files);
    const prefix = testPrefix('lost');
    cleanups.push(
      () => emulator.close(),
      () => proxy.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const argv = (url: string, ...extra: string[]) => [
      tree.dir,
      '--api-url',
      url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--backoff',
      '20ms',
      ...extra,
    ];
    return { emulator, proxy, argv };
  }

  function once(match: (method: string, path: string) => boolean): (method: string, path: string) => boolean {
    let used = false;
    return (method, path) => {
      if (used || !match(method, path)) return false;
      used = true;
      return true;
    };
  }

  it('a create whose answer is lost is not sent again, and its secret is recorded as applied', async () => {
    const { emulator, proxy, argv } = await setup(
      { 'solo.yaml': deploymentYaml('solo', externalDockerSpec('docker.io/acme/solo:1', 2, [['TOKEN', 'TOKEN_ENV']])) },
      seedWith([]),
      { loseAnswer: once((m, p) => m === 'POST' && p === '/v2/deployments') },
    );
    const run = await runApplyCli(argv(proxy.url), ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /done +Deployment\/solo: created; a new revision started \(the answer to an earlier attempt was lost; live state shows its write landed\)/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 201']);
    emulator.resetLog();
    const again = await runApplyCli(argv(proxy.url), ENV);
    expect(again.code).toBe(0);
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('a PATCH carrying a secret whose answer is lost starts exactly one revision', async () => {
    const seed = seedWith([
      {
        name: 'api',
        source: 'external_docker',
        source_config: { resource_spec: { max_scale: 1 } },
        source_revision_config: { image_uri: 'docker.io/acme/api:1' },
      },
    ]);
    const { emulator, proxy, argv } = await setup(
      { 'api.yaml': deploymentYaml('api', externalDockerSpec('docker.io/acme/api:1', 1, [['TOKEN', 'TOKEN_ENV']])) },
      seed,
      { loseAnswer: once((m) => m === 'PATCH') },
    );
    const run = await runApplyCli(argv(proxy.url), ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/done +Deployment\/api: updated; a new revision started/);
    expect(landedWrites(emulator.requestLog).map((e) => `${e.method} ${e.status} ${e.newRevision}`)).toEqual([
      'PATCH 200 true',
    ]);
    emulator.resetLog();
    expect((await runApplyCli(argv(proxy.url), ENV)).code).toBe(0);
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('a PATCH whose answer is lost, to a service that does not echo what it got: the fields are recorded from live state, not sent again', async () => {
    const spec = [
      'source: external_docker',
      'source_config:',
      '  listener_config: { k8s_namespace: api }',
      '  install_command: pip install .',
      '  resource_spec: { max_scale: 1 }',
      'source_revision_config:',
      '  image_uri: docker.io/acme/api:1',
      'secrets:',
      '  - name: TOKEN',
      '    valueFrom: { env: TOKEN_ENV }',
    ].join('\n');
    const seed = seedWith([
      {
        name: 'api',
        source: 'external_docker',
        source_config: { listener_config: { k8s_namespace: 'api' }, resource_spec: { max_scale: 1 } },
        source_revision_config: { image_uri: 'docker.io/acme/api:1' },
      },
    ]);
    const { emulator, proxy, argv } = await setup(
      { 'api.yaml': deploymentYaml('api', spec) },
      seed,
      { loseAnswer: once((m) => m === 'PATCH') },
      { echo: 'real', secretsPatch: 'replace' },
    );
    const run = await runApplyCli(argv(proxy.url), ENV);
    expect(run.code, run.stdout).toBe(0);
    expect(landedWrites(emulator.requestLog).map((e) => `${e.method} ${e.status} ${e.newRevision}`)).toEqual([
      'PATCH 200 true',
    ]);
    expect(landedWrites(emulator.requestLog)[0]!.body).toMatchObject({
      source_config: { listener_config: { k8s_namespace: 'api' }, install_command: 'pip install .' },
    });
    emulator.resetLog();
    const again = await runApplyCli(argv(proxy.url), ENV);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No changes.');
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('a create answered 409 sends nothing more (the decision was to create); the next apply decides to adopt and patches only what differs', async () => {
    const seed = seedWith([
      {
        name: 'late',
        source: 'external_docker',
        source_config: { resource_spec: { max_scale: 1 } },
        source_revision_config: { image_uri: 'docker.io/acme/late:1' },
      },
    ]);
    let lists = 0;
    const { emulator, proxy, argv } = await setup(
      { 'late.yaml': deploymentYaml('late', externalDockerSpec('docker.io/acme/late:1', 4)) },
      seed,
      {
        hiddenName: 'late',
        // hidden from the plan's listing and the job's first read, as if created by someone else in between
        hideFromList: () => ++lists <= 2,
      },
    );
    const run = await runApplyCli(argv(proxy.url), ENV);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('Plan: 1 to create');
    expect(run.stdout).toMatch(
      /failed +Deployment\/late: not written: live state changed since the decision: the create was answered 409: a deployment named "late" was made elsewhere meanwhile \(id [0-9a-f-]+\); the next reconcile decides again/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 409']);
    const again = await runApplyCli(argv(proxy.url), ENV);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('1 to adopt');
    expect(again.stdout).toMatch(/done +Deployment\/late: adopted; a new revision started/);
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 409', 'PATCH 200']);
    const patch = writes(emulator.requestLog)[1]!;
    expect(patch.body).toEqual({ source_config: { resource_spec: { max_scale: 4 } } });
    expect(patch.newRevision).toBe(true);
  });

  it('a name held by a tracing project fails at once, NameTaken with what to do, after one request', async () => {
    const seed = { ...seedWith([]), tracing_projects: [{ name: 'taken' }] };
    const { emulator, argv } = await setup(
      { 'taken.yaml': deploymentYaml('taken', externalDockerSpec('docker.io/acme/taken:1', 1)) },
      seed,
    );
    const run = await runApplyCli(argv(emulator.url, '--attempts', '5'), ENV);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /failed +Deployment\/taken: blocked: the name is taken on the service: the create was answered 409 \(.+\) and no deployment named "taken" is listed \(a deleted deployment's tracing project keeps its name, or another deployment has it\); rename the manifest \(metadata.name\), or delete the tracing project "taken"/,
    );
    expect(run.stdout).toContain('Apply incomplete: 0 done, 0 unchanged, 1 failed; not converged (jobs failed).');
    expect(writes(emulator.requestLog)).toHaveLength(1);
  });

  it('a 4xx from the service fails the job at once, carrying the service detail', async () => {
    const spec = [
      'source: codehost',
      'source_config:',
      '  integration_id: 99999999-9999-4999-8999-999999999999',
      '  repo_url: https://codehost.example.com/acme/nowhere',
      '  deployment_type: dev',
      'source_revision_config:',
      '  repo_ref: main',
      '  graph_config_path: langgraph.json',
    ].join('\n');
    const { emulator, argv } = await setup({ 'bad.yaml': deploymentYaml('bad', spec) });
    const run = await runApplyCli(argv(emulator.url, '--attempts', '5'), ENV);
    expect(run.code).toBe(1);
    const post = writes(emulator.requestLog);
    expect(post).toHaveLength(1);
    expect(run.stdout).toMatch(
      new RegExp(
        `failed +Deployment/bad: POST /v2/deployments answered ${post[0]!.status}: Integration 99999999-9999-4999-8999-999999999999 not found`,
      ),
    );
  });

  it('spec-only service: a provider create whose answer is lost meets 409 on retry and is recorded once', async () => {
    const { emulator, proxy, argv } = await setup(
      { 'p.yaml': providerYaml('github', 'PROVIDER_ENV') },
      seedWith([]),
      { loseAnswer: once((m, p) => m === 'POST' && p === '/v2/auth/providers') },
      { specOnly: true },
    );
    const run = await runApplyCli(argv(proxy.url), ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /done +OAuthProvider\/github: adopted \(an earlier attempt created the provider but its answer was lost; converge recorded it as applied\)/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 200', 'POST 409']);
    emulator.resetLog();
    const again = await runApplyCli(argv(proxy.url), ENV);
    expect(again.stdout).toContain('No changes.');
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('spec-only service: a provider create answered 409 that no earlier attempt explains is blocked with the ways out, and stays so', async () => {
    // created in the service by someone else: converge has never seen its definition (the service cannot read providers)
    const seed = {
      ...seedWith([]),
      providers: [
        {
          provider_id: 'github',
          name: 'Someone else',
          client_id: 'other',
          auth_url: 'https://other.example/a',
          token_url: 'https://other.example/t',
        },
      ],
    };
    const { emulator, argv } = await setup(
      { 'p.yaml': providerYaml('github', 'PROVIDER_ENV') },
      seed,
      {},
      { specOnly: true },
    );
    const run = await runApplyCli(argv(emulator.url, '--attempts', '5'), ENV);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /failed +OAuthProvider\/github: blocked: the service already has an OAuth provider "github" that converge did not create, and it cannot read providers, so converge has never seen its definition; the service cannot update an OAuth provider; delete it in the service and remove its applied state, or rename/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 409']);
    expect(run.stdout).not.toContain(ENV.PROVIDER_ENV);

    // nothing was recorded as applied, and the pending write was dropped: the next apply is blocked the same way
    emulator.resetLog();
    const again = await runApplyCli(argv(emulator.url, '--attempts', '5'), ENV);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain('Plan: 1 to create');
    expect(again.stdout).toMatch(
      /failed +OAuthProvider\/github: blocked: the service already has an OAuth provider "github"/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 409']);
  });

  it('429 pauses the queue without spending an attempt (every write 429s once, attempts 1)', async () => {
    const names = ['r1', 'r2', 'r3', 'r4'];
    const files = Object.fromEntries(
      names.map((n) => [`${n}.yaml`, deploymentYaml(n, externalDockerSpec(`docker.io/acme/${n}:1`, 1))]),
    );
    const seen = new Set<string>();
    const { emulator, proxy, argv } = await setup(files, seedWith([]), {
      rateLimit: (method, path) => {
        if (method !== 'POST') return false;
        const key = `${method} ${path} ${seen.size}`;
        if (seen.size >= names.length) return false;
        seen.add(key);
        return true;
      },
    });
    const run = await runApplyCli(argv(proxy.url, '--attempts', '1'), ENV);
    expect(run.stdout).toContain('Apply complete: 4 done, 0 unchanged, 0 failed.');
    expect(run.code).toBe(0);
    expect(seen.size).toBe(names.length);
    expect(landedWrites(emulator.requestLog)).toHaveLength(names.length);
  });
});
