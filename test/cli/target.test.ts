// plan and apply --target NAME (repeatable): only those resources are planned and applied, the plan says it is partial in
// every format, prune is off with it, and a name no manifest declares is one line naming it, with "did you mean".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  deploymentYaml,
  externalDockerSpec,
  manifestDir,
  providerYaml,
  runApplyCli,
  seedWith,
  writes,
} from '../helpers/apply.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const docker = (name: string, scale: number) => ({
  name,
  source: 'external_docker',
  source_config: { resource_spec: { max_scale: scale } },
  source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
});
const manifest = (name: string, scale: number) =>
  deploymentYaml(name, externalDockerSpec(`docker.io/acme/${name}:1`, scale));

interface PlanJson {
  targets?: string[];
  summary: Record<string, number>;
  changes: Array<{ kind: string; name: string; action: string }>;
  notes: string[];
}

describe('--target', () => {
  let emulator: RunningEmulator;
  let dir: { dir: string; remove(): Promise<void> };
  const prefix = testPrefix('target');
  const env = { NO_COLOR: '1', TARGET_TEST_SECRET: 'client-secret-value-1' };
  const common = () => ['--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];

  beforeAll(async () => {
    emulator = await startEmulator({
      seed: seedWith([docker('web', 1), docker('api', 1), docker('stray', 1)]),
      buildMs: 0,
    });
    dir = await manifestDir({
      'web.yaml': manifest('web', 2),
      'api.yaml': manifest('api', 2),
      'slack.yaml': manifest('slack', 1),
      'slack-provider.yaml': providerYaml('slack', 'TARGET_TEST_SECRET'),
    });
  });
  afterAll(async () => {
    await emulator.close();
    await dir.remove();
    await dropPrefix(prefix);
  });

  it('plan: only the named resource, no orphan; the plan says it is partial in JSON (targets, a note), text and markdown', async () => {
    const json = await runCapture(['plan', dir.dir, '--target', 'web', '--output', 'json', ...common()], env);
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout) as PlanJson;
    expect(doc.targets).toEqual(['Deployment/web']);
    expect(doc.changes.map((c) => `${c.action} ${c.kind}/${c.name}`)).toEqual(['adopt Deployment/web']);
    expect(doc.summary).toMatchObject({ create: 0, update: 0, adopt: 1, orphan: 0 });
    expect(doc.notes[0]).toBe(
      'partial plan (--target): only Deployment/web is planned; the other manifests and the live resources no manifest declares are not looked at, and nothing is pruned',
    );
    const text = await runCapture(
      ['plan', dir.dir, '--target', 'web', '--target', 'OAuthProvider/slack', ...common()],
      env,
    );
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      'Note: partial plan (--target): only Deployment/web, OAuthProvider/slack are planned;',
    );
    expect(text.stdout).toMatch(/^Plan: 1 to create, 0 to update, 1 to adopt, 0 blocked, 0 orphaned, 0 unchanged\.$/m);
    expect(text.stdout).not.toContain('stray');
    const markdown = await runCapture(['plan', dir.dir, '--target', 'api', '--output', 'markdown', ...common()], env);
    expect(markdown.stdout).toContain('> **Note:** partial plan (--target): only Deployment/api is planned;');
    // Without --target: the whole directory, and no targets field.
    const whole = JSON.parse(
      (await runCapture(['plan', dir.dir, '--output', 'json', ...common()], env)).stdout,
    ) as PlanJson;
    expect(whole.targets).toBeUndefined();
    expect(whole.summary).toMatchObject({ adopt: 2, orphan: 1 });
  });

  it('a name no manifest declares, a wrong kind, a name two kinds share: one line each, exit 1, with "did you mean"', async () => {
    const cases: Array<[string, string]> = [
      ['wbe', 'converge plan: --target "wbe": no manifest declares it; did you mean "web"?'],
      [
        'Deployment/wbe',
        'converge plan: --target "Deployment/wbe": no manifest declares it; did you mean "Deployment/web"?',
      ],
      [
        'Deploymnet/web',
        'converge plan: --target "Deploymnet/web": Deploymnet is not a kind; did you mean "Deployment"?; give NAME or Kind/NAME, Kind one of Deployment, OAuthProvider',
      ],
      [
        'slack',
        'converge plan: --target "slack": more than one kind declares that name (Deployment/slack, OAuthProvider/slack); give Kind/NAME, e.g. --target Deployment/slack',
      ],
    ];
    for (const [target, line] of cases) {
      const run = await runCapture(['plan', dir.dir, '--target', target, ...common()], env);
      expect(run.code, target).toBe(1);
      expect(run.stdout, target).toBe('');
      expect(
        run.stderr.split('\n').filter((l) => l.startsWith('converge plan: --target')),
        target,
      ).toEqual([line]);
    }
  });

  it('--prune with --target is refused before anything is read', async () => {
    emulator.resetLog();
    const run = await runCapture(['plan', dir.dir, '--target', 'web', '--prune', ...common()], env);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'converge plan: --target and --prune cannot be combined: --target plans and applies only the named resources and deletes nothing; run without --target to prune\n',
    );
    expect(emulator.requestLog).toEqual([]);
  });

  it('apply: writes only the named resource, says the apply is partial, and the rest is still to do', async () => {
    emulator.resetLog();
    const run = await runApplyCli([dir.dir, '--target', 'web', ...common()], { ...env, CONVERGE_PRUNE: 'true' });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('  Note: partial plan (--target): only Deployment/web is planned;');
    expect(run.stdout).toContain(
      'Apply complete: 1 done, 0 unchanged, 0 failed. The targeted resources match their manifests (partial apply: --target Deployment/web).',
    );
    const webId = emulator.store.allDeployments().find((d) => d.name === 'web')!.id;
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.path}`)).toEqual([`PATCH /v2/deployments/${webId}`]);
    const after = JSON.parse(
      (await runCapture(['plan', dir.dir, '--output', 'json', ...common()], env)).stdout,
    ) as PlanJson;
    expect(
      after.changes
        .filter((c) => c.action !== 'noop' && c.action !== 'orphan')
        .map((c) => `${c.action} ${c.kind}/${c.name}`)
        .sort(),
    ).toEqual(['adopt Deployment/api', 'create Deployment/slack', 'create OAuthProvider/slack']);
  });
});
