// `converge validate` and `converge schema` through runCli, the binary's own entry point, in process.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { manifestJsonSchemaText } from '../../src/core/manifest/json-schema.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function converge(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (text: string) => void) =>
    ({ write: (chunk: string | Uint8Array) => (append(String(chunk)), true) }) as unknown as NodeJS.WritableStream;
  const code = await runCli(argv, {
    stdout: sink((t) => (stdout += t)),
    stderr: sink((t) => (stderr += t)),
    env: { PATH: process.env.PATH, ...env },
    cwd: ROOT,
  });
  return { code, stdout, stderr };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'converge-validate-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const LITERAL = `apiVersion: converge/v1
kind: Deployment
metadata:
  name: local-dev
spec:
  source: internal_template
  secrets:
    - name: TOKEN
      value: local-literal-value-123
`;

describe('converge validate', () => {
  it('accepts the example manifests: exit 0 and a summary line', async () => {
    const run = await converge(['validate', 'examples/manifests']);
    expect(run).toEqual({ code: 0, stdout: '11 resources in 10 files, 0 errors\n', stderr: '' });
  });

  it('prints one line per diagnostic as file:line:column and exits 1', async () => {
    writeFileSync(
      join(dir, 'bad.yaml'),
      'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: bad\nspec:\n  source: internal_template\n  replicas: 2\n',
    );
    writeFileSync(
      join(dir, 'good.yaml'),
      'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: good\nspec:\n  source: internal_template\n',
    );
    const run = await converge(['validate', dir]);
    expect(run.code).toBe(1);
    // DIR is given as an absolute path: so is each file named in text (JSON: relative to DIR)
    expect(run.stdout).toBe(
      `${dir}/bad.yaml:7:3: error: unknown field "replicas" in spec; known fields: source, repository, integration, source_config, source_revision_config, secrets, secret_references\n` +
        '1 resource in 2 files, 1 error\n',
    );
  });

  it('refuses literal secrets unless --allow-literal-secrets (flag or environment), never printing the value', async () => {
    writeFileSync(join(dir, 'literal.yaml'), LITERAL);
    const refused = await converge(['validate', dir]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('literal.yaml:9:14: error: secret "TOKEN" has a literal value in the manifest');
    expect(await converge(['validate', dir, '--allow-literal-secrets'])).toEqual({
      code: 0,
      stdout: '1 resource in 1 file, 0 errors\n',
      stderr: '',
    });
    expect((await converge(['validate', dir], { CONVERGE_ALLOW_LITERAL_SECRETS: 'true' })).code).toBe(0);
    const json = await converge(['validate', dir, '--allow-literal-secrets', '--output', 'json']);
    for (const run of [refused, json]) expect(run.stdout).not.toContain('local-literal-value-123');
  });

  it('--output json reports the same findings as data', async () => {
    writeFileSync(
      join(dir, 'a.yaml'),
      'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  source: codehub\n',
    );
    const run = await converge(['validate', dir, '-o', 'json']);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report).toEqual({
      valid: false,
      summary: { resources: 0, blocked: 1, files: 1, errors: 1, warnings: 0 },
      files: ['a.yaml'],
      resources: [],
      blocked: [
        {
          kind: 'Deployment',
          name: 'a',
          file: 'a.yaml',
          line: 4,
          column: 9,
          reason: expect.stringContaining('a.yaml:6:11: spec.source: "codehub" is not one of'),
        },
      ],
      diagnostics: [
        {
          severity: 'error',
          file: 'a.yaml',
          line: 6,
          column: 11,
          code: 'E_SCHEMA',
          message:
            'spec.source: "codehub" is not one of "codehost", "external_docker", "internal_docker", "internal_source", "internal_template"',
        },
      ],
    });
  });

  it('warns (W_CREATE_NEEDS_GRAPH_CONFIG, exit 0) at a new codehost manifest without graph_config_path, which plan would block; not when it takes over a live one, and never in a plan', async () => {
    const head = ['apiVersion: converge/v1', 'kind: Deployment', 'metadata:', '  name: NAME'];
    const spec = [
      'spec:',
      '  source: codehost',
      '  repository: acme/agent',
      '  source_config: { deployment_type: dev }',
    ];
    const manifest = (name: string, meta: string[], extra: string[]): string =>
      [...head.map((l) => l.replace('NAME', name)), ...meta, ...spec, ...extra, ''].join('\n');
    writeFileSync(join(dir, 'bare.yaml'), manifest('bare', [], []));
    writeFileSync(
      join(dir, 'revision.yaml'),
      manifest('revision', [], ['  source_revision_config:', '    repo_ref: main']),
    );
    writeFileSync(join(dir, 'adopted.yaml'), manifest('adopted', ['  annotations: { converge/adopt: "true" }'], []));
    writeFileSync(
      join(dir, 'complete.yaml'),
      manifest('complete', [], ['  source_revision_config: { repo_ref: main, graph_config_path: langgraph.json }']),
    );
    const message =
      'spec.source_revision_config.graph_config_path is not set: the service refuses to create a codehost deployment without it, so converge plan blocks its create; ' +
      'if the deployment already exists, converge takes it over as it is and this is fine; ' +
      'to create it, add source_revision_config.graph_config_path (the path of the graph configuration file, e.g. langgraph.json)';
    const run = await converge(['validate', dir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // at spec when the manifest has no source_revision_config, else at that key
    expect(run.stdout).toBe(
      `${dir}/bare.yaml:5:1: warning: ${message}\n${dir}/revision.yaml:9:3: warning: ${message}\n4 resources in 4 files, 0 errors, 2 warnings\n`,
    );
    const report = JSON.parse((await converge(['validate', dir, '-o', 'json'])).stdout) as {
      valid: boolean;
      diagnostics: Array<{ code: string; file: string }>;
    };
    expect(report.valid).toBe(true);
    expect(report.diagnostics.map((d) => [d.file, d.code])).toEqual([
      ['bare.yaml', 'W_CREATE_NEEDS_GRAPH_CONFIG'],
      ['revision.yaml', 'W_CREATE_NEEDS_GRAPH_CONFIG'],
    ]);
    // a plan reads live state and decides itself (it blocks only the create that needs it, test/plan/real-service.test.ts):
    // the same manifests carry no such warning there (the embedded service sees no code-host integration: those are its errors)
    const planned = await converge(['plan', dir, '--api-url', 'embedded', '--output', 'json']);
    const plan = JSON.parse(planned.stdout) as {
      diagnostics: Array<{ severity: string; message: string }>;
      changes: Array<{ name: string }>;
    };
    expect(plan.changes.map((c) => c.name).sort()).toEqual(['adopted', 'bare', 'complete', 'revision']);
    expect(plan.diagnostics.filter((d) => d.severity === 'warning' || d.message.includes('graph_config_path'))).toEqual(
      [],
    );
  });

  it('does not read secrets unless --check-secrets, which reports unset variables at their line', async () => {
    const plain = await converge(['validate', 'examples/manifests']);
    expect(plain.code).toBe(0);
    const checked = await converge(['validate', 'examples/manifests', '--check-secrets'], {
      EXAMPLE_OPENAI_API_KEY: 'x',
      EXAMPLE_STRIPE_API_KEY: 'x',
      EXAMPLE_ANTHROPIC_API_KEY: 'x',
      EXAMPLE_SLACK_BOT_TOKEN: 'x',
      EXAMPLE_SALESFORCE_TOKEN: 'x',
    });
    expect(checked.code).toBe(1);
    expect(checked.stdout).toBe(
      'examples/manifests/providers.yaml:10:38: error: OAuthProvider/slack: secret client_secret: environment variable EXAMPLE_SLACK_CLIENT_SECRET is not set\n' +
        '11 resources in 10 files, 1 error\n',
    );
  });

  it('names a missing directory and an unknown output format in one line, exit 1', async () => {
    const missing = await converge(['validate', join(dir, 'nope')]);
    expect(missing).toEqual({
      code: 1,
      stdout: '',
      stderr: `converge validate: manifest directory ${join(dir, 'nope')} does not exist\n`,
    });
    const format = await converge(['validate', dir, '--output', 'yaml']);
    expect(format).toEqual({
      code: 1,
      stdout: '',
      stderr: 'converge validate: --output "yaml" is not one of text, json\n',
    });
  });

  it('is listed by --help', async () => {
    const help = await converge(['--help']);
    expect(help.stdout).toMatch(/\n {2}validate {2,}load and check manifests/);
    expect(help.stdout).toMatch(/\n {2}schema {2,}print the JSON Schema of manifests/);
  });
});

describe('converge schema', () => {
  it('prints the JSON Schema and exits 0', async () => {
    const run = await converge(['schema']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(manifestJsonSchemaText());
    expect(JSON.parse(run.stdout).title).toBe('converge manifest');
  });
});
