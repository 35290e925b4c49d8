// `converge plan` end to end: real manifests on disk, the emulator on loopback, every output format and exit code.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorSeed, type RunningEmulator } from '../../src/emulator/server.js';
import { startCombinedServer, type CombinedServer } from '../discovery/mcp-oauth-fixture.js';
import { runCapture } from '../helpers/cli.js';

const INTEGRATION = '5f64863e-b7a7-42ff-9061-df5ae08380de';
const SECRET_VALUE = 'sk-plan-test-7c1f9e55d2';

const SEED: EmulatorSeed = {
  version: 1,
  organization_id: '2057d183-3e81-4bed-9848-5cc2920c4104',
  tenants: [{ id: 'a89b7c89-df09-46bf-b17b-6008e757e3ee', name: 'acme' }],
  integrations: [
    {
      id: INTEGRATION,
      installation_id: 1,
      name: 'acme',
      repositories: [{ id: 1, name: 'support-agent', default_branch: 'main' }],
    },
  ],
  deployments: [
    {
      name: 'support-agent',
      source: 'codehost',
      source_config: {
        integration_id: INTEGRATION,
        repo_url: 'https://codehost.example.com/acme/support-agent',
        resource_spec: { min_scale: 1, max_scale: 2 },
      },
      source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
    },
    { name: 'legacy-etl', source: 'external_docker', source_revision_config: { image_uri: 'registry.example/etl:1' } },
  ],
};

function deployment(maxScale: number): string {
  return [
    'apiVersion: converge/v1',
    'kind: Deployment',
    'metadata:',
    '  name: support-agent',
    'spec:',
    '  source: codehost',
    '  repository: acme/support-agent',
    '  source_config:',
    '    deployment_type: dev',
    '    resource_spec: { min_scale: 1, max_scale: ' + maxScale + ' }',
    '  source_revision_config:',
    '    graph_config_path: langgraph.json',
    '  secrets:',
    '    - name: OPENAI_API_KEY',
    '      valueFrom: { env: PLAN_TEST_OPENAI }',
    '',
  ].join('\n');
}

let emulator: RunningEmulator;
let dir: string;
const env = {
  PLAN_TEST_OPENAI: SECRET_VALUE,
  NO_COLOR: '1',
  REDIS_URL: process.env.CONVERGE_TEST_REDIS_URL,
  CONVERGE_REDIS_PREFIX: `${process.env.CONVERGE_TEST_PREFIX}-plan`,
};

beforeAll(async () => {
  emulator = await startEmulator({ seed: SEED, secrets: 'plain' });
  dir = await mkdtemp(join(tmpdir(), 'converge-plan-'));
});
afterAll(async () => {
  await emulator.close();
  await rm(dir, { recursive: true, force: true });
});

async function writeManifest(name: string, text: string): Promise<void> {
  await writeFile(join(dir, name), text);
}

describe('converge plan', () => {
  it('prints the JSON plan of docs/contracts.md §3 and never the secret value', async () => {
    await writeManifest('app.yaml', deployment(4));
    const { code, stdout, stderr } = await runCapture(
      ['plan', dir, '--api-url', emulator.url, '--output', 'json'],
      env,
    );
    expect(stderr).toBe(`converge plan: read 1 manifest file in ${dir}\n`);
    expect(code).toBe(0);
    const plan = JSON.parse(stdout);
    expect(Object.keys(plan)).toEqual(['format_version', 'summary', 'changes', 'notes', 'health', 'diagnostics']);
    expect(plan.summary).toEqual({
      create: 0,
      update: 0,
      adopt: 1,
      delete: 0,
      noop: 0,
      orphan: 1,
      blocked: 0,
      suspended: 0,
    });
    const update = plan.changes.find((c: { name: string }) => c.name === 'support-agent');
    // converge never wrote to the seeded deployment: its first write takes it over.
    expect(update.action).toBe('adopt');
    expect(update.new_revision).toBe(true);
    expect(update.fields).toContainEqual({
      path: 'source_config.resource_spec.max_scale',
      before: 2,
      after: 4,
      sensitive: false,
    });
    expect(update.fields).toContainEqual({
      path: 'secrets.OPENAI_API_KEY',
      before: null,
      after: '(sensitive)',
      sensitive: true,
    });
    expect(plan.changes.find((c: { name: string }) => c.name === 'legacy-etl').action).toBe('orphan');
    expect(stdout).not.toContain(SECRET_VALUE);
  });

  it('lists live deployments with GETs only: a plan never writes', async () => {
    emulator.resetLog();
    await runCapture(['plan', dir, '--api-url', emulator.url], env);
    const methods = new Set(emulator.requestLog.map((e) => e.method));
    expect([...methods]).toEqual(['GET']);
    expect(emulator.requestLog.filter((e) => e.route === '/v2/deployments')[0]?.query.limit).toBe('100');
  });

  it('--detailed-exitcode: 2 with changes, 0 without, 1 on an invalid manifest', async () => {
    await writeManifest('app.yaml', deployment(4));
    expect((await runCapture(['plan', dir, '--api-url', emulator.url, '--detailed-exitcode'], env)).code).toBe(2);

    await writeManifest('app.yaml', deployment(2).replace(/ {2}secrets:\n.*\n.*\n/, ''));
    const same = await runCapture(['plan', dir, '--api-url', emulator.url, '--detailed-exitcode'], env);
    expect(same.stdout).toContain('No changes.');
    expect(same.code).toBe(0);

    await writeManifest(
      'broken.yaml',
      'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\nspec:\n  source: codehost\n',
    );
    const broken = await runCapture(['plan', dir, '--api-url', emulator.url, '--detailed-exitcode'], env);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/broken\.yaml:4:\d+/);
    await rm(join(dir, 'broken.yaml'));
  });

  it('renders markdown with a summary table and collapsible details', async () => {
    await writeManifest('app.yaml', deployment(5));
    const { stdout } = await runCapture(['plan', dir, '--api-url', emulator.url, '--output', 'markdown'], env);
    expect(stdout).toMatch(/^\|.*create.*\|/m);
    expect(stdout).toContain('<details>');
    expect(stdout).toContain('max_scale');
    expect(stdout).not.toContain(SECRET_VALUE);
  });

  it('colours text only on a TTY without NO_COLOR', async () => {
    const plain = await runCapture(['plan', dir, '--api-url', emulator.url], { ...env, NO_COLOR: '' }, { tty: false });
    expect(plain.stdout).not.toContain('\x1b[');
    const tty = await runCapture(['plan', dir, '--api-url', emulator.url], { ...env, NO_COLOR: '' }, { tty: true });
    expect(tty.stdout).toContain('\x1b[');
    const noColor = await runCapture(
      ['plan', dir, '--api-url', emulator.url],
      { ...env, NO_COLOR: '1' },
      { tty: true },
    );
    expect(noColor.stdout).not.toContain('\x1b[');
  });

  it('shows listing progress on stderr only on a TTY, and clears it before the plan', async () => {
    const tty = await runCapture(['plan', dir, '--api-url', emulator.url], env, { tty: true });
    expect(tty.stderr).toContain('listing live deployments: 2');
    expect(tty.stderr.endsWith('\r\x1b[K')).toBe(true);
    const piped = await runCapture(['plan', dir, '--api-url', emulator.url], env, { tty: false });
    expect(piped.stderr).toBe(`converge plan: read 1 manifest file in ${dir}\n`);
  });

  it('rejects an unknown output format with one line', async () => {
    const { code, stderr } = await runCapture(['plan', dir, '--api-url', emulator.url, '--output', 'yaml'], env);
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('--output "yaml"');
  });

  it('says which directory is missing', async () => {
    const { code, stderr } = await runCapture(['plan', join(dir, 'nope'), '--api-url', emulator.url], env);
    expect(code).toBe(1);
    expect(stderr).toContain('nope');
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});

describe('converge plan with an MCP provider (read-only discovery)', () => {
  let mcp: CombinedServer;
  let mcpDir: string;
  beforeAll(async () => {
    mcp = await startCombinedServer({ registration: true });
    mcpDir = await mkdtemp(join(tmpdir(), 'converge-plan-mcp-'));
    await mkdir(mcpDir, { recursive: true });
  });
  afterAll(async () => {
    await mcp.close();
    await rm(mcpDir, { recursive: true, force: true });
  });

  function provider(url: string): string {
    return `apiVersion: converge/v1\nkind: OAuthProvider\nmetadata:\n  name: tools\nspec:\n  name: Tools\n  mcp_server_url: ${url}\n`;
  }

  it('prints the endpoints discovery found, and registers no client', async () => {
    await writeFile(join(mcpDir, 'p.yaml'), provider(mcp.mcpUrl));
    const clients = (mcp.demo.clientsStore as unknown as { clients: Map<string, unknown> }).clients;
    const registered = clients.size;
    const { code, stdout } = await runCapture(
      ['plan', mcpDir, '--api-url', emulator.url, '--allow-local-discovery', '--output', 'json'],
      env,
    );
    expect(code).toBe(0);
    const change = JSON.parse(stdout).changes.find((c: { kind: string }) => c.kind === 'OAuthProvider');
    expect(change.action).toBe('create');
    const paths = Object.fromEntries(change.fields.map((f: { path: string; after: unknown }) => [f.path, f.after]));
    expect(Object.values(paths)).toContain(`${mcp.origin}/authorize`);
    expect(Object.values(paths)).toContain(`${mcp.origin}/token`);
    expect(clients.size).toBe(registered);
  });

  it('blocks the provider and names the failing step when discovery is refused', async () => {
    await writeFile(join(mcpDir, 'p.yaml'), provider(mcp.mcpUrl));
    const { stdout } = await runCapture(['plan', mcpDir, '--api-url', emulator.url, '--output', 'json'], env);
    const change = JSON.parse(stdout).changes.find((c: { kind: string }) => c.kind === 'OAuthProvider');
    expect(change.action).toBe('blocked');
    expect(change.reason).toContain('mcp-server-url');
  });
});

describe('converge plan --detailed-exitcode with a suspended change', () => {
  it('exits 0: a suspended change is shown but never applied', async () => {
    const suspendedDir = await mkdtemp(join(tmpdir(), 'converge-plan-suspended-'));
    try {
      await writeFile(
        join(suspendedDir, 'app.yaml'),
        deployment(9)
          .replace('  name: support-agent\n', '  name: support-agent\n  annotations:\n    converge/suspend: "true"\n')
          .replace(/ {2}secrets:\n.*\n.*\n/, ''),
      );
      const { code, stdout } = await runCapture(
        ['plan', suspendedDir, '--api-url', emulator.url, '--detailed-exitcode'],
        env,
      );
      expect(stdout).toContain('suspended');
      expect(stdout).toContain('max_scale');
      expect(code).toBe(0);
    } finally {
      await rm(suspendedDir, { recursive: true, force: true });
    }
  });
});

describe('converge plan with a repository that resolves to nothing', () => {
  it('reports a diagnostic at the line of spec.repository and blocks only that deployment', async () => {
    const repoDir = await mkdtemp(join(tmpdir(), 'converge-plan-repo-'));
    try {
      await writeFile(
        join(repoDir, 'missing.yaml'),
        deployment(2)
          .replace('acme/support-agent', 'acme/no-such-repo')
          .replace('name: support-agent', 'name: lost-agent'),
      );
      await writeFile(join(repoDir, 'good.yaml'), deployment(2).replace(/ {2}secrets:\n.*\n.*\n/, ''));
      const { code, stdout } = await runCapture(
        ['plan', repoDir, '--api-url', emulator.url, '--output', 'json', '--detailed-exitcode'],
        env,
      );
      const plan = JSON.parse(stdout);
      expect(plan.diagnostics).toHaveLength(1);
      expect(plan.diagnostics[0]).toMatchObject({ severity: 'error', file: 'missing.yaml', line: 7, column: 15 });
      expect(plan.diagnostics[0].message).toContain('acme/no-such-repo');
      expect(plan.changes.find((c: { name: string }) => c.name === 'lost-agent').action).toBe('blocked');
      expect(plan.changes.find((c: { name: string }) => c.name === 'support-agent').action).toBe('noop');
      expect(code).toBe(1);
    } finally {
      await rm(repoDir, { recursive: true, force: true });
    }
  });
});

describe('converge plan with a secret value too short to be masked safely', () => {
  it('warns once, at the line of its reference, naming the secret and never its value; the plan still runs', async () => {
    await writeManifest('app.yaml', deployment(4));
    const { code, stdout } = await runCapture(['plan', dir, '--api-url', emulator.url], {
      ...env,
      PLAN_TEST_OPENAI: 'x',
    });
    expect(code, stdout).toBe(0);
    const warnings = stdout.split('\n').filter((l) => l.includes('too short to be masked safely'));
    expect(warnings).toHaveLength(1);
    // DIR is given as an absolute path, and so is the file in text
    expect(warnings[0]!.startsWith(`  ${dir}/app.yaml:15:`)).toBe(true);
    expect(warnings[0]).toMatch(
      /app\.yaml:15:\d+: warning: Deployment\/support-agent: secret OPENAI_API_KEY has a value shorter than 4 characters, too short to be masked safely: .*; use a longer secret$/,
    );
    const long = await runCapture(['plan', dir, '--api-url', emulator.url], env);
    expect(long.stdout).not.toContain('too short to be masked safely');
  });
});
