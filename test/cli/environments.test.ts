// One base, two environments: plans of examples/environments for dev and prod against two emulators on loopback.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorSeed, type RunningEmulator } from '../../src/emulator/server.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/environments', import.meta.url));
const INTEGRATION = '5f64863e-b7a7-42ff-9061-df5ae08380de';

function seed(tenant: string): EmulatorSeed {
  return {
    version: 1,
    organization_id: '2057d183-3e81-4bed-9848-5cc2920c4104',
    tenants: [{ id: tenant, name: 'acme' }],
    integrations: [
      {
        id: INTEGRATION,
        installation_id: 1,
        name: 'acme',
        repositories: [{ id: 1, name: 'support-agent', default_branch: 'main' }],
      },
    ],
    deployments: [],
  };
}

interface PlanChange {
  name: string;
  action: string;
  fields: Array<{ path: string; after: unknown }>;
}
interface PlanJson {
  changes: PlanChange[];
  diagnostics: Array<{ file: string; line: number; column: number; code: string; severity: string; message: string }>;
}

const env = {
  NO_COLOR: '1',
  DEV_OPENAI_API_KEY: 'sk-dev-not-printed',
  PROD_OPENAI_API_KEY: 'sk-prod-not-printed',
  PROD_PAGERDUTY_TOKEN: 'pd-not-printed',
};
let dev: RunningEmulator;
let prod: RunningEmulator;

beforeAll(async () => {
  dev = await startEmulator({ seed: seed('a89b7c89-df09-46bf-b17b-6008e757e3ee'), secrets: 'plain' });
  prod = await startEmulator({ seed: seed('0c2a3a43-5b0e-4c55-9d55-0f1b2a3c4d5e'), secrets: 'plain' });
});
afterAll(async () => {
  await dev?.close();
  await prod?.close();
});

async function planFor(
  name: 'dev' | 'prod',
  emulator: RunningEmulator,
): Promise<{ code: number; plan: PlanJson; stdout: string }> {
  const args = [
    'plan',
    'base',
    '--vars',
    `vars/${name}.yaml`,
    '--overlay',
    `overlays/${name}`,
    '--api-url',
    emulator.url,
    '--no-applied-state',
    '--output',
    'json',
  ];
  const { code, stdout } = await runCapture(args, env, { cwd: EXAMPLE });
  return { code, plan: JSON.parse(stdout) as PlanJson, stdout };
}

function field(change: PlanChange | undefined, path: string): unknown {
  return change?.fields.find((f) => f.path === path)?.after;
}

describe('environments: one base, a plan per environment', () => {
  it('dev: its variables and its overlay, against its own service', async () => {
    const { code, plan, stdout } = await planFor('dev', dev);
    expect(code).toBe(0);
    expect(plan.changes.map((c) => `${c.action} ${c.name}`).sort()).toEqual([
      'create faq-template',
      'create support-dev',
    ]);
    const support = plan.changes.find((c) => c.name === 'support-dev');
    expect(field(support, 'source_config.resource_spec.max_scale')).toBe(1);
    expect(field(support, 'source_config.build_on_push')).toBe(true);
    expect(field(support, 'source_config.deployment_type')).toBe('dev');
    expect(field(support, 'source_revision_config.repo_ref')).toBe('develop');
    expect(stdout).not.toContain('sk-dev-not-printed');
    expect(prod.requestLog.length).toBe(0);
  });

  it('prod: the same base with its variables, an overlay that merges, replaces a list and adds a resource', async () => {
    const { code, plan, stdout } = await planFor('prod', prod);
    expect(code).toBe(1);
    expect(plan.changes.map((c) => `${c.action} ${c.name}`).sort()).toEqual([
      'blocked support-prod',
      'create faq-template',
      'create support-canary',
    ]);
    // The secret the prod overlay added reads a file that is not there: the diagnostic points at the overlay's line,
    // named relative to the manifest directory (base/) as every path in a message is (docs/commands.md).
    const missing = plan.diagnostics.find((d) => d.severity === 'error')!;
    expect(missing).toMatchObject({ file: '../overlays/prod/support-agent.yaml', line: 16 });
    expect(missing.message).toContain('PAGERDUTY_TOKEN');
    expect(stdout).not.toContain('sk-prod-not-printed');
  });

  it('prod with the missing secret file given: max_scale 6, min_scale 2, both secrets, prod tier and tag', async () => {
    const args = [
      'plan',
      'base',
      '--vars',
      'vars/prod.yaml',
      '--overlay',
      'overlays/prod',
      '--api-url',
      prod.url,
      '--no-applied-state',
      '--output',
      'json',
    ];
    const withoutPagerduty = await runCapture(
      [...args, '--overlay', '../../test/fixtures/environments/no-pagerduty'],
      env,
      { cwd: EXAMPLE },
    );
    const plan = JSON.parse(withoutPagerduty.stdout) as PlanJson;
    expect(withoutPagerduty.code).toBe(0);
    const support = plan.changes.find((c) => c.name === 'support-prod');
    expect(support?.action).toBe('create');
    expect(field(support, 'source_config.resource_spec.max_scale')).toBe(6);
    expect(field(support, 'source_config.resource_spec.min_scale')).toBe(2);
    expect(field(support, 'source_config.deployment_type')).toBe('prod');
    expect(field(support, 'source_revision_config.repo_ref')).toBe('v1.4.2');
    expect(support?.fields.filter((f) => f.path.startsWith('secrets.')).map((f) => f.path)).toEqual([
      'secrets.OPENAI_API_KEY',
      'secrets.PAGERDUTY_TOKEN',
    ]);
  });
});

describe('paths in messages: text from the working directory, JSON relative to the manifest directory', () => {
  it('names a manifest and an overlay as they open from each of two working directories, and the same in JSON; an argument that does not exist as given', async () => {
    const root = await mkdtemp(join(tmpdir(), 'converge-paths-'));
    try {
      await mkdir(join(root, 'repo/manifests'), { recursive: true });
      await mkdir(join(root, 'repo/overlays/prod'), { recursive: true });
      await mkdir(join(root, 'elsewhere/deeper'), { recursive: true });
      await writeFile(
        join(root, 'repo/manifests/a.yaml'),
        'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  source: external_docker\n  sourc_revision_config: {}\n',
      );
      await writeFile(
        join(root, 'repo/overlays/prod/patch.yaml'),
        'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  min_scal: 2\n',
      );
      const fromRepo = await runCapture(
        ['validate', 'manifests', '--overlay', 'overlays/prod'],
        {},
        { cwd: join(root, 'repo') },
      );
      const fromElsewhere = await runCapture(
        ['validate', '../../repo/manifests', '--overlay', '../../repo/overlays/prod'],
        {},
        { cwd: join(root, 'elsewhere/deeper') },
      );
      const located = (run: { stdout: string }) =>
        run.stdout
          .split('\n')
          .filter((l) => /^\S+:\d+:\d+: error:/.test(l))
          .map((l) => l.split(': error:')[0])
          .sort();
      expect(fromRepo.code).toBe(1);
      expect(located(fromRepo)).toEqual(['manifests/a.yaml:7:3', 'overlays/prod/patch.yaml:6:3']);
      expect(fromElsewhere.code).toBe(1);
      expect(located(fromElsewhere)).toEqual([
        '../../repo/manifests/a.yaml:7:3',
        '../../repo/overlays/prod/patch.yaml:6:3',
      ]);
      // JSON names them relative to the manifest directory from both
      for (const cwd of [join(root, 'repo'), join(root, 'elsewhere/deeper')]) {
        const prefix = cwd.endsWith('repo') ? '' : '../../repo/';
        const json = await runCapture(
          ['validate', `${prefix}manifests`, '--overlay', `${prefix}overlays/prod`, '-o', 'json'],
          {},
          { cwd },
        );
        const files = (
          JSON.parse(json.stdout) as { diagnostics: Array<{ file: string; severity: string }> }
        ).diagnostics
          .filter((d) => d.severity === 'error')
          .map((d) => d.file)
          .sort();
        expect(files).toEqual(['../overlays/prod/patch.yaml', 'a.yaml']);
      }
      // an absolute overlay outside the manifest directory keeps its absolute path
      const absolute = await runCapture(
        ['validate', 'manifests', '--overlay', join(root, 'repo/overlays/prod')],
        {},
        { cwd: join(root, 'repo') },
      );
      expect(absolute.stdout).toContain(
        `${join(root, 'repo/overlays/prod/patch.yaml').replace(/\\/g, '/')}:6:3: error:`,
      );
      // an error about the argument itself names it as it was typed
      const missing = await runCapture(
        ['validate', '../../repo/manifests', '--vars', 'vars/nope.yaml'],
        {},
        { cwd: join(root, 'elsewhere/deeper') },
      );
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('variables file vars/nope.yaml does not exist');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('export --overlay-out: the overlay of one workspace against the base', () => {
  it('writes a patch where live differs, an add for a live resource the base lacks; base + overlay then plans no field change', async () => {
    const live = await startEmulator({
      seed: {
        ...seed('6f0d3b5e-1f1e-4a52-9a0c-8d7e6f5a4b3c'),
        deployments: [
          {
            name: 'support-prod',
            source: 'codehost',
            source_config: {
              integration_id: INTEGRATION,
              repo_url: 'https://codehost.example.com/acme/support-agent',
              deployment_type: 'prod',
              build_on_push: false,
              resource_spec: { min_scale: 3, max_scale: 6 },
            },
            source_revision_config: { repo_ref: 'v1.4.2', graph_config_path: 'langgraph.json' },
          },
          {
            name: 'extra-etl',
            source: 'external_docker',
            source_revision_config: { image_uri: 'registry.example/etl:${TAG}' },
          },
        ],
      },
      secrets: 'plain',
    });
    const out = await mkdtemp(join(tmpdir(), 'converge-overlay-out-'));
    try {
      const exported = await runCapture(
        ['export', '--out', 'base', '--overlay-out', out, '--vars', 'vars/prod.yaml', '--api-url', live.url],
        env,
        { cwd: EXAMPLE },
      );
      expect(exported.stderr).toContain('1 patch, 1 added, 0 equal to the base');
      expect(exported.code).toBe(0);
      const patch = await readFile(join(out, 'support-prod.yaml'), 'utf8');
      expect(patch).toContain('min_scale: 3');
      expect(patch).not.toContain('max_scale');
      const added = await readFile(join(out, 'extra-etl.yaml'), 'utf8');
      expect(added).toContain('converge/overlay: add');
      // A live "${" is written "$${": read back, it is the same text, not a variable.
      expect(added).toContain('registry.example/etl:$${TAG}');
      const planned = await runCapture(
        [
          'plan',
          'base',
          '--vars',
          'vars/prod.yaml',
          '--overlay',
          out,
          '--api-url',
          live.url,
          '--no-applied-state',
          '--output',
          'json',
        ],
        env,
        { cwd: EXAMPLE },
      );
      const plan = JSON.parse(planned.stdout) as PlanJson;
      expect(plan.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
      for (const name of ['support-prod', 'extra-etl']) {
        const change = plan.changes.find((c) => c.name === name);
        expect(change?.fields.filter((f) => !f.path.startsWith('secrets.'))).toEqual([]);
      }
    } finally {
      await live.close();
      await rm(out, { recursive: true, force: true });
    }
  });
});

describe('apply of one environment', () => {
  it('creates what the dev plan shows, with dev variables and overlay, in the dev workspace only', async () => {
    const workspace = await startEmulator({
      seed: seed('3d6c1f0e-2b4a-4c8d-9e7f-1a2b3c4d5e6f'),
      secrets: 'plain',
      buildMs: 0,
    });
    const prefix = testPrefix('env-apply');
    try {
      const args = [
        'apply',
        'base',
        '--vars',
        'vars/dev.yaml',
        '--overlay',
        'overlays/dev',
        '--api-url',
        workspace.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
      ];
      const applied = await runCapture(args, env, { cwd: EXAMPLE });
      expect(applied.code).toBe(0);
      const support = workspace.store.allDeployments().find((d) => d.name === 'support-dev');
      expect(support?.source_config).toMatchObject({
        deployment_type: 'dev',
        build_on_push: true,
        resource_spec: { min_scale: 1, max_scale: 1 },
      });
      expect(
        workspace.store
          .allDeployments()
          .map((d) => d.name)
          .sort(),
      ).toEqual(['faq-template', 'support-dev']);
      expect(applied.stdout).not.toContain('sk-dev-not-printed');
    } finally {
      await workspace.close();
      await dropPrefix(prefix);
    }
  });
});
