// Creates as the real service takes them: complete bodies, the codehost tier named, internal artifacts patched after the create, each step once under lost answers.
import { afterEach, describe, expect, it } from 'vitest';
import {
  startEmulator,
  type EmulatorOptions,
  type RequestLogEntry,
  type RunningEmulator,
} from '../../src/emulator/server.js';
import { deploymentYaml, landedWrites, manifestDir, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { lossyProxy, type ProxyRules } from '../helpers/lossy-proxy.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { prng } from '../helpers/prng.js';

const ENV = { TOKEN_ENV: 'create-bodies-token-51c2' };

const CODEHOST = [
  'source: codehost',
  'repository: acme/support-agent',
  'source_revision_config:',
  '  graph_config_path: langgraph.json',
].join('\n');
const TEMPLATE = ['source: internal_template', 'secrets:', '  - name: TOKEN', '    valueFrom: { env: TOKEN_ENV }'].join(
  '\n',
);
const EXTERNAL = ['source: external_docker', 'source_revision_config:', '  image_uri: docker.io/acme/ext:1'].join('\n');
function dockerSpec(image: string): string {
  return [
    'source: internal_docker',
    'source_config:',
    '  resource_spec: { max_scale: 2 }',
    'source_revision_config:',
    `  image_uri: ${image}`,
  ].join('\n');
}
function sourceSpec(tarball: string): string {
  return [
    'source: internal_source',
    'source_revision_config:',
    '  graph_config_path: langgraph.json',
    `  source_tarball_path: ${tarball}`,
  ].join('\n');
}

function byName(log: RequestLogEntry[], emulator: RunningEmulator): Map<string, string[]> {
  const names = new Map(emulator.store.allDeployments().map((d) => [d.id, d.name]));
  const out = new Map<string, string[]>();
  for (const e of landedWrites(log)) {
    const name = e.method === 'POST' ? (e.body as { name: string }).name : (names.get(e.deploymentId ?? '') ?? '?');
    out.set(name, [...(out.get(name) ?? []), `${e.method} ${e.status}${e.newRevision ? ' revision' : ''}`]);
  }
  return out;
}

describe('create bodies against the strict emulator', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(files: Record<string, string>, options: EmulatorOptions = {}, rules?: ProxyRules) {
    const emulator = await startEmulator({ seed: seedWith([]), buildMs: 0, ...options });
    const tree = await manifestDir(files);
    const prefix = testPrefix('bodies');
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    let url = emulator.url;
    if (rules) {
      const proxy = await lossyProxy(emulator.url, rules);
      cleanups.push(() => proxy.close());
      url = proxy.url;
    }
    const apply = (...extra: string[]) =>
      runApplyCli(
        [tree.dir, '--api-url', url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--backoff', '20ms', ...extra],
        ENV,
      );
    return { emulator, apply };
  }

  it('sends name, source, source_config, source_revision_config and secrets on every create; codehost names its tier', async () => {
    const { emulator, apply } = await setup({
      'code.yaml': deploymentYaml('code', CODEHOST),
      'tpl.yaml': deploymentYaml('tpl', TEMPLATE),
      'ext.yaml': deploymentYaml('ext', EXTERNAL),
    });
    const run = await apply();
    expect(run.stdout).toContain('Apply complete: 3 done');
    const posts = writes(emulator.requestLog).filter((e) => e.method === 'POST');
    expect(posts.map((e) => e.status)).toEqual([201, 201, 201]);
    const bodies = new Map(posts.map((e) => [(e.body as { name: string }).name, e.body as Record<string, unknown>]));
    for (const body of bodies.values()) {
      expect(Object.keys(body).sort()).toEqual([
        'name',
        'secrets',
        'source',
        'source_config',
        'source_revision_config',
      ]);
    }
    expect(bodies.get('code')!.source_config).toEqual({
      integration_id: expect.any(String),
      repo_url: 'https://codehost.example.com/acme/support-agent',
      deployment_type: 'prod',
    });
    expect(bodies.get('ext')).toMatchObject({ source_config: {}, secrets: [] });
    expect(bodies.get('tpl')).toMatchObject({
      source_config: {},
      source_revision_config: {},
      secrets: [{ name: 'TOKEN' }],
    });
    expect(emulator.store.allDeployments().find((d) => d.name === 'code')!.source_config.deployment_type).toBe('prod');
  });

  it('creates internal_docker and internal_source without their artifact, then patches it in the same job: one create, one revision each', async () => {
    // A tarball path declared before the deployment exists cannot have been handed out by the service: this test of the
    // create-then-patch sequence takes the old reading (--any-tarball-path); the next one shows the real service's answer.
    const { emulator, apply } = await setup(
      {
        'img.yaml': deploymentYaml('img', dockerSpec('registry.acme.example/img:1')),
        'src.yaml': deploymentYaml('src', sourceSpec('uploads/acme/src/1.tar.gz')),
      },
      { anyTarballPath: true },
    );
    const run = await apply();
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/done +Deployment\/img: created; a new revision started/);
    const post = writes(emulator.requestLog).find(
      (e) => e.method === 'POST' && (e.body as { name: string }).name === 'img',
    )!;
    expect((post.body as { source_revision_config: unknown }).source_revision_config).toEqual({});
    expect(byName(emulator.requestLog, emulator)).toEqual(
      new Map([
        ['img', ['POST 201', 'PATCH 200 revision']],
        ['src', ['POST 201', 'PATCH 200 revision']],
      ]),
    );
    const patch = writes(emulator.requestLog).find(
      (e) =>
        e.method === 'PATCH' && e.deploymentId === emulator.store.allDeployments().find((d) => d.name === 'img')!.id,
    )!;
    expect(patch.body).toEqual({ source_revision_config: { image_uri: 'registry.acme.example/img:1' } });
    emulator.resetLog();
    expect((await apply()).code).toBe(0);
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it("a declared tarball path the service did not hand out is refused (400): the create stays, the PATCH fails with the service's reason", async () => {
    const { emulator, apply } = await setup({
      'src.yaml': deploymentYaml('src', sourceSpec('uploads/acme/src/1.tar.gz')),
    });
    const run = await apply();
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(
      /source_tarball_path "uploads\/acme\/src\/1.tar.gz" was not issued for deployment/,
    );
    expect(byName(emulator.requestLog, emulator).get('src')?.[0]).toBe('POST 201');
    expect(emulator.store.allDeployments().find((d) => d.name === 'src')!.latest_revision_id).toBeNull();
  });

  // The retry reports what its own read found: the create (and its PATCH sent now), or only the earlier PATCH.
  it.each([
    ['the create', (m: string) => m === 'POST', 'created'],
    ['the artifact PATCH', (m: string) => m === 'PATCH', 'updated'],
  ])('a lost answer to %s (lossy proxy): still one create and one revision', async (_what, match, outcome) => {
    let lost = false;
    const { emulator, apply } = await setup(
      { 'img.yaml': deploymentYaml('img', dockerSpec('registry.acme.example/img:2')) },
      {},
      {
        loseAnswer: (method) => {
          if (lost || !match(method)) return false;
          lost = true;
          return true;
        },
      },
    );
    const run = await apply();
    expect(lost).toBe(true);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(
        `done +Deployment/img: ${outcome}; a new revision started \\(the answer to an earlier attempt was lost; live state shows its write landed\\)`,
      ),
    );
    expect(byName(emulator.requestLog, emulator).get('img')).toEqual(['POST 201', 'PATCH 200 revision']);
    emulator.resetLog();
    expect((await apply()).code).toBe(0);
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it("under the emulator's lostResponseRate, every internal deployment is created once and gets exactly one revision", async () => {
    const names = Array.from({ length: 6 }, (_, i) => `lossy-${i}`);
    const files: Record<string, string> = {};
    for (const [i, name] of names.entries()) {
      files[`${name}.yaml`] = deploymentYaml(
        name,
        i % 2 === 0 ? dockerSpec(`registry.acme.example/${name}:1`) : sourceSpec(`uploads/acme/${name}.tar.gz`),
      );
    }
    const random = prng(1207);
    const { emulator, apply } = await setup(files, {
      lostResponseRate: 0.4,
      randomFor: () => random,
      anyTarballPath: true,
    });
    const run = await apply('--attempts', '12');
    expect(run.stdout).toContain('Apply complete: 6 done');
    expect(emulator.requestLog.some((e) => e.outcome === 'fault-lost' && e.method !== 'GET')).toBe(true);
    const per = byName(emulator.requestLog, emulator);
    for (const name of names) expect(per.get(name), name).toEqual(['POST 201', 'PATCH 200 revision']);
  }, 60_000);
});
