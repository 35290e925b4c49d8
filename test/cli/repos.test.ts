// `converge repos` end to end: against a scripted service on loopback, and against the embedded emulator seeded from a file.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { json, startServer, type ScriptedServer } from '../service/scripted-server.js';

const INTEGRATION = 'dddddddd-0000-4000-8000-000000000001';
const API_KEY = 'ck-repos-cmd-91b2c3d4';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function run(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  const code = await runCli(argv, { stdout, stderr, env, cwd: process.cwd() });
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

async function service(): Promise<ScriptedServer> {
  const server = await startServer((request, response) => {
    if (request.headers['x-api-key'] !== API_KEY) return json(response, 401, { detail: 'missing or invalid API key' });
    if (request.url.pathname === '/v1/integrations/forge/codehost/install') {
      return json(response, 200, [{ id: INTEGRATION, installation_id: 7, name: 'acme' }]);
    }
    if (request.url.pathname === `/v1/integrations/forge/codehost/${INTEGRATION}/repos`) {
      return json(response, 200, [
        {
          host_integration_id: INTEGRATION,
          id: 2,
          owner: 'acme',
          name: 'web',
          url: 'https://codehost.example/acme/web',
          default_branch: 'main',
        },
        {
          host_integration_id: INTEGRATION,
          id: 1,
          owner: 'acme',
          name: 'agent',
          url: 'https://codehost.example/acme/agent',
          default_branch: 'trunk',
        },
      ]);
    }
    json(response, 404, { detail: 'Not Found' });
  });
  cleanups.push(() => server.close());
  return server;
}

describe('converge repos', () => {
  it('prints a table of account, integration id, owner/name, default branch and url', async () => {
    const server = await service();
    const result = await run(['repos', '--api-url', server.url], { CONVERGE_API_KEY: API_KEY });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      [
        'ACCOUNT  INTEGRATION ID                        REPOSITORY  DEFAULT BRANCH  URL',
        `acme     ${INTEGRATION}  acme/agent  trunk           https://codehost.example/acme/agent`,
        `acme     ${INTEGRATION}  acme/web    main            https://codehost.example/acme/web`,
        '',
      ].join('\n'),
    );
  });

  it('prints JSON with --output json', async () => {
    const server = await service();
    const result = await run(['repos', '--api-url', server.url, '--output', 'json'], { CONVERGE_API_KEY: API_KEY });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([
      {
        account: 'acme',
        integration_id: INTEGRATION,
        installation_id: 7,
        owner: 'acme',
        name: 'agent',
        full_name: 'acme/agent',
        default_branch: 'trunk',
        url: 'https://codehost.example/acme/agent',
      },
      {
        account: 'acme',
        integration_id: INTEGRATION,
        installation_id: 7,
        owner: 'acme',
        name: 'web',
        full_name: 'acme/web',
        default_branch: 'main',
        url: 'https://codehost.example/acme/web',
      },
    ]);
  });

  it('turns a service refusal into one line and exit 1, without the key', async () => {
    const server = await service();
    const result = await run(['repos', '--api-url', server.url, '--api-key', 'wrong-key-123']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      'converge repos: GET /v1/integrations/forge/codehost/install answered 401: missing or invalid API key; check the API key in CONVERGE_API_KEY (--api-key), and for a key that spans several workspaces the workspace in CONVERGE_TENANT_ID (--tenant-id)\n',
    );
  });

  it('rejects an unknown output format', async () => {
    const result = await run(['repos', '--output', 'yaml']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('converge repos: --output "yaml" is not one of table, json\n');
  });

  it('lists what the embedded emulator was seeded with', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'converge-repos-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const seed = join(dir, 'state.json');
    await writeFile(
      seed,
      JSON.stringify({
        integrations: [
          {
            id: INTEGRATION,
            installation_id: 7,
            name: 'acme',
            repositories: [{ id: 1, name: 'agent', default_branch: 'trunk' }],
          },
          { id: 'dddddddd-0000-4000-8000-000000000002', installation_id: 8, name: 'beta', repositories: [] },
        ],
      }),
    );
    const result = await run(['repos', '--api-url', 'embedded', '--emulator-state', seed, '-o', 'json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([
      {
        account: 'acme',
        integration_id: INTEGRATION,
        installation_id: 7,
        owner: 'acme',
        name: 'agent',
        full_name: 'acme/agent',
        default_branch: 'trunk',
        url: 'https://codehost.example.com/acme/agent',
      },
    ]);
  });
});
