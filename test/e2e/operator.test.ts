// An operator's tool that cannot mislead (issue 14), through the built binary: no silent emulator, exit codes a CI
// job can trust, applied state that must answer when configured, plans that fit, inputs and errors in one line.
import { spawn } from 'node:child_process';
import { cp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorSeed, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  freePort,
  killAllConverge,
  REDIS_URL,
  ROOT,
  runConverge,
  spawnConverge,
  tempDir,
  testPrefix,
  writeFiles,
} from './helpers.js';

const SEED: EmulatorSeed = {
  version: 1,
  organization_id: '2057d183-3e81-4bed-9848-5cc2920c4104',
  tenants: [{ id: 'a89b7c89-df09-46bf-b17b-6008e757e3ee', name: 'acme' }],
  integrations: [],
  deployments: [
    {
      name: 'team-a-api',
      source: 'external_docker',
      source_config: { resource_spec: { max_scale: 2 } },
      source_revision_config: { image_uri: 'docker.io/acme/team-a-api:1' },
    },
    ...['team-a-old', 'team-b-web', 'team-b-db', 'legacy-1', 'legacy-2', 'legacy-3'].map((name) => ({
      name,
      source: 'external_docker' as const,
      source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    })),
  ],
};

/** No service URL anywhere: an empty variable counts as not set. */
const NO_URL = { CONVERGE_API_URL: '' };
const NEEDS_URL =
  /^converge \w+: no service URL: give --api-url https:\/\/HOST or set CONVERGE_API_URL \(--api-url embedded runs a throwaway in-process emulator\)\n$/;

/** A TCP server that accepts connections and never answers. */
async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("an operator's tool that cannot mislead", () => {
  let emulator: RunningEmulator;
  let dir: string;
  let empty: string;
  const prefixes: string[] = [];
  const prefix = (label: string): string => {
    const p = testPrefix(label);
    prefixes.push(p);
    return p;
  };

  beforeAll(async () => {
    emulator = await startEmulator({ seed: SEED, buildMs: 0, apiKey: 'operator-key-1' });
    dir = await tempDir('operator');
    empty = await tempDir('operator-empty');
    await writeFiles(dir, { 'api.yaml': dockerDeploymentYaml('team-a-api', { maxScale: 4 }) });
  }, 60_000);

  afterAll(async () => {
    await killAllConverge();
    await emulator?.close();
    for (const p of prefixes) await dropPrefix(p);
    for (const d of [dir, empty]) if (d) await rm(d, { recursive: true, force: true });
  });

  // Groups 1, 3 and 7 run their tests concurrently (child processes that mostly wait): none of them writes to the shared
  // emulator or reads its request log, which groups 2, 4 and 6 do, in order, between them.
  describe.concurrent('1. no silent emulator', () => {
    it.each([
      ['plan', ['plan', 'examples/manifests']],
      ['apply', ['apply', 'examples/manifests']],
      ['run', ['run', 'examples/manifests', '--http-port', '0']],
      ['repos', ['repos']],
      ['worker', ['worker']],
    ])(
      '%s without a URL exits 1 with one line naming --api-url, CONVERGE_API_URL and --api-url embedded',
      async (_name, args) => {
        const r = await runConverge(args, { ...NO_URL, CONVERGE_API_ULR: 'http://misspelt.example' });
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(NEEDS_URL);
        expect(r.stdout).toBe('');
      },
    );

    it('apply and run against the embedded emulator say so in their first line', async () => {
      const local = await tempDir('operator-embedded');
      await writeFiles(local, { 'x.yaml': dockerDeploymentYaml('embedded-x', { maxScale: 1 }) });
      try {
        const applied = await runConverge(
          ['apply', local, '--api-url', 'embedded', '--redis-url', REDIS_URL, '--redis-prefix', prefix('emb')],
          {},
          60_000,
        );
        expect(applied.code, applied.stderr).toBe(0);
        expect(applied.stdout.split('\n')[0]).toBe(
          'using the embedded emulator (--api-url embedded): nothing is written to a real service, and its state is gone when this process exits',
        );
        const daemon = spawnConverge([
          'run',
          local,
          '--api-url',
          'embedded',
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefix('emb-run'),
          '--http-port',
          '0',
          '--http-host',
          '127.0.0.1',
        ]);
        const first = await daemon.waitForLine(() => true);
        expect(first.msg).toMatch(/^using the embedded emulator \(--api-url embedded\)/);
        expect(daemon.lines[0]).toBe(first);
        await daemon.kill('SIGTERM');
      } finally {
        await rm(local, { recursive: true, force: true });
      }
    }, 90_000);

    it('the Dockerfile and the Kubernetes example require the URL; the shipped config has none', async () => {
      const config = await readFile(join(ROOT, 'config', 'default.yaml'), 'utf8');
      expect(config).toMatch(/^api_url: null$/m);
      expect(await readFile(join(ROOT, 'Dockerfile'), 'utf8')).toContain('CONVERGE_API_URL is required');
      const kube = await readFile(join(ROOT, 'examples', 'kubernetes', 'converge.yaml'), 'utf8');
      expect(kube).toMatch(
        /Required: converge has no default service[^\n]*\n\s+- name: CONVERGE_API_URL\n\s+value: https:/,
      );
    });
  });

  describe('2. exit codes a CI job can trust', () => {
    it('error diagnostics and blocked resources exit 1 with and without --detailed-exitcode; suspended changes are their own count', async () => {
      const local = await tempDir('operator-exit');
      try {
        await writeFiles(local, {
          'api.yaml': dockerDeploymentYaml('team-a-api', { maxScale: 4, annotations: { 'converge/suspend': 'true' } }),
        });
        const env = { CONVERGE_API_KEY: 'operator-key-1' };
        const base = ['plan', local, '--api-url', emulator.url, '--no-applied-state'];
        const suspended = await runConverge([...base, '-o', 'json', '--detailed-exitcode'], env);
        expect(suspended.code, suspended.stderr).toBe(0);
        const planned = JSON.parse(suspended.stdout) as {
          summary: Record<string, number>;
          changes: Array<{ name: string; action: string; suspended: boolean }>;
        };
        expect(planned.summary).toMatchObject({ update: 0, suspended: 1 });
        expect(planned.changes.find((c) => c.name === 'team-a-api')).toMatchObject({
          action: 'update',
          suspended: true,
        });
        const text = await runConverge(base, env);
        expect(text.stdout).toContain(
          'No changes to apply; 6 live deployments are in no manifest (orphaned, never deleted). 1 suspended change is shown but not applied.',
        );

        await writeFiles(local, {
          'broken.yaml':
            'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\nspec:\n  source: external_docker\n',
        });
        for (const detailed of [[], ['--detailed-exitcode']]) {
          const r = await runConverge([...base, ...detailed], env);
          expect(r.code, `${detailed.join(' ')}: ${r.stderr}`).toBe(1);
          expect(r.stdout).toMatch(/broken\.yaml:4:\d+: error/);
        }
      } finally {
        await rm(local, { recursive: true, force: true });
      }
    }, 60_000);
  });

  describe.concurrent('3. applied state unreachable', () => {
    const env = { CONVERGE_API_KEY: 'operator-key-1' };

    it('a Redis URL given that does not answer: exit 1 with one line, unless --no-applied-state (then a note in every format)', async () => {
      const closed = `redis://127.0.0.1:${await freePort()}`;
      const r = await runConverge(['plan', dir, '--api-url', emulator.url, '--redis-url', closed], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `converge plan: Redis at ${closed} is unreachable (ECONNREFUSED): start redis-server, or set --redis-url or REDIS_URL; give --no-applied-state to plan without it\n`,
      );
      expect(r.stdout).toBe('');
      for (const output of ['text', 'markdown', 'json']) {
        const blind = await runConverge(
          ['plan', dir, '--api-url', emulator.url, '--redis-url', closed, '--no-applied-state', '-o', output],
          env,
        );
        expect(blind.code, blind.stderr).toBe(0);
        expect(blind.stdout).toContain(
          'applied state not read (--no-applied-state): secrets and OAuth providers are planned without knowing what converge last wrote',
        );
      }
    });

    it('none configured and none answering at the default: the plan runs without it and says so', async () => {
      // A copy of the build whose shipped defaults name a Redis that does not answer.
      const alt = join(dirname(process.env.CONVERGE_TEST_DIST!), `alt-${Date.now()}`);
      await cp(process.env.CONVERGE_TEST_DIST!, join(alt, 'dist'), { recursive: true });
      await writeFile(join(alt, 'package.json'), '{ "type": "module" }\n');
      await mkdir(join(alt, 'config'));
      const port = await freePort();
      const shipped = await readFile(join(ROOT, 'config', 'default.yaml'), 'utf8');
      await writeFile(
        join(alt, 'config', 'default.yaml'),
        shipped.replace(/^redis_url: .*$/m, `redis_url: redis://127.0.0.1:${port}`),
      );
      try {
        // Asynchronously: the emulator in this process must keep answering.
        const run = (output: string) =>
          new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
            const child = spawn(
              process.execPath,
              [join(alt, 'dist', 'cli', 'main.js'), 'plan', dir, '--api-url', emulator.url, '-o', output],
              {
                env: { PATH: process.env.PATH, ...env },
              },
            );
            let stdout = '';
            let stderr = '';
            child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
            child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
            child.on('close', (status) => resolve({ status, stdout, stderr }));
          });
        const note = `applied state not read: no Redis configured (--redis-url, REDIS_URL) and none answers at redis://127.0.0.1:${port}`;
        const text = await run('text');
        expect(text.status, text.stderr).toBe(0);
        expect(text.stdout.split('\n')[0]).toContain(`Note: ${note}`);
        expect((await run('markdown')).stdout).toContain(`> **Note:** ${note.replace(/_/g, '\\_')}`);
        const json = JSON.parse((await run('json')).stdout) as { notes: string[] };
        expect(json.notes[0]).toContain(note);
      } finally {
        await rm(alt, { recursive: true, force: true });
      }
    }, 60_000);
  });

  describe('4. plans that fit', () => {
    const env = { CONVERGE_API_KEY: 'operator-key-1' };

    it('orphans are one line in text; --show-orphans lists them; --name-prefix scopes listing, planning and orphans', async () => {
      const text = await runConverge(['plan', dir, '--api-url', emulator.url, '--no-applied-state'], env);
      expect(text.stdout).toContain(
        '  ? 6 live deployments are in no manifest: legacy-1, legacy-2, legacy-3 and 3 more; --show-orphans lists them\n',
      );
      const listed = await runConverge(
        ['plan', dir, '--api-url', emulator.url, '--no-applied-state', '--show-orphans'],
        env,
      );
      expect(listed.stdout).toContain('      Deployment/team-b-web\n');

      emulator.resetLog();
      const scoped = await runConverge(['plan', dir, '--api-url', emulator.url, '--no-applied-state', '-o', 'json'], {
        ...env,
        CONVERGE_NAME_PREFIX: 'team-a-',
      });
      expect(scoped.code, scoped.stderr).toBe(0);
      const planned = JSON.parse(scoped.stdout) as { changes: Array<{ name: string; action: string }> };
      expect(planned.changes.map((c) => `${c.name}:${c.action}`)).toEqual(['team-a-api:update', 'team-a-old:orphan']);
      const lists = emulator.requestLog.filter((e) => e.route === '/v2/deployments' && e.method === 'GET');
      expect(lists.length).toBeGreaterThan(0);
      for (const list of lists) expect(list.query.name_contains).toBe('team-a-');
    });

    it('a deployment converge applied whose manifest is gone is named once, as no longer declared', async () => {
      const local = await tempDir('operator-released');
      const p = prefix('released');
      const common = [
        '--api-url',
        emulator.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        p,
        '--name-prefix',
        'team-b-',
      ];
      try {
        await writeFiles(local, {
          'web.yaml': dockerDeploymentYaml('team-b-web', { maxScale: 3, image: 'docker.io/acme/team-b-web:1' }),
        });
        const applied = await runConverge(['apply', local, ...common], env, 60_000);
        expect(applied.code, applied.stdout + applied.stderr).toBe(0);
        await rm(join(local, 'web.yaml'));
        const r = await runConverge(['plan', local, ...common], env);
        expect(r.stdout).toContain(
          '  ? Deployment/team-b-web is no longer declared: converge owns it and its manifest is gone; converge apply --prune deletes it\n',
        );
        expect(r.stdout.match(/team-b-web/g)).toHaveLength(1);
        expect(r.stdout).toContain('1 live deployment is in no manifest: team-b-db (converge never deletes)');
      } finally {
        await rm(local, { recursive: true, force: true });
      }
    }, 90_000);
  });

  describe('6. a record of every write', () => {
    const PLANTED = 'planted-secret-value-6f1d2c';

    it("apply prints each write's fields in the plan's format and whether a revision started; never a secret value", async () => {
      const local = await tempDir('operator-writes');
      const common = [
        '--api-url',
        emulator.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix('writes'),
        '--name-prefix',
        'team-c-',
      ];
      const env = { CONVERGE_API_KEY: 'operator-key-1', OP_TOKEN: PLANTED };
      try {
        await writeFiles(local, {
          'c.yaml': dockerDeploymentYaml('team-c-new', { maxScale: 2, secrets: [['TOKEN', 'OP_TOKEN']] }),
        });
        const created = await runConverge(['apply', local, ...common], env, 60_000);
        expect(created.code, created.stdout + created.stderr).toBe(0);
        expect(created.stdout).toContain(
          '  done      Deployment/team-c-new: created; a new revision started\n      + name: "team-c-new"\n',
        );
        expect(created.stdout).toContain('      + source_config.resource_spec.max_scale: 2\n');
        expect(created.stdout).toContain('      + secrets.TOKEN: (sensitive)\n');

        await writeFiles(local, {
          'c.yaml': dockerDeploymentYaml('team-c-new', { maxScale: 3, secrets: [['TOKEN', 'OP_TOKEN']] }),
        });
        const updated = await runConverge(['apply', local, ...common], env, 60_000);
        expect(updated.code, updated.stdout + updated.stderr).toBe(0);
        expect(updated.stdout).toContain(
          '  done      Deployment/team-c-new: updated; a new revision started\n      ~ source_config.resource_spec.max_scale: 2 -> 3\n',
        );
        for (const out of [created, updated]) expect(out.stdout + out.stderr).not.toContain(PLANTED);
      } finally {
        await rm(local, { recursive: true, force: true });
      }
    }, 120_000);

    it('the daemon logs every write at info: resource, fields, values, revision; never a secret value', async () => {
      const local = await tempDir('operator-daemon-writes');
      try {
        await writeFiles(local, {
          'd.yaml': dockerDeploymentYaml('team-d-new', { maxScale: 2, secrets: [['TOKEN', 'OP_TOKEN']] }),
        });
        const daemon = spawnConverge(
          [
            'run',
            local,
            '--api-url',
            emulator.url,
            '--redis-url',
            REDIS_URL,
            '--redis-prefix',
            prefix('daemon-writes'),
            '--name-prefix',
            'team-d-',
            '--http-port',
            '0',
            '--http-host',
            '127.0.0.1',
            '--log-level',
            'info',
          ],
          { CONVERGE_API_KEY: 'operator-key-1', OP_TOKEN: PLANTED },
        );
        const wrote = await daemon.waitForLine((l) => typeof l.msg === 'string' && l.msg.startsWith('wrote'), 30_000);
        expect(wrote).toMatchObject({
          key: 'Deployment/team-d-new',
          outcome: 'created',
          new_revision: true,
          msg: expect.stringMatching(/^wrote; a new revision started \(applied from content [0-9a-f]{12}\)$/),
          appliedFrom: expect.stringMatching(/^content [0-9a-f]{12}$/),
          requests: [expect.stringMatching(/^POST \/v2\/deployments 20\d$/)],
        });
        expect(wrote.fields).toEqual(
          expect.arrayContaining(['name', 'source_config.resource_spec.max_scale', 'secrets.TOKEN']),
        );
        expect(wrote.changes).toEqual(
          expect.arrayContaining(['+ source_config.resource_spec.max_scale: 2', '+ secrets.TOKEN: (sensitive)']),
        );
        expect(wrote.level).toBe(30);
        await daemon.kill('SIGTERM');
        expect(daemon.stdout() + daemon.stderr()).not.toContain(PLANTED);
      } finally {
        await rm(local, { recursive: true, force: true });
      }
    }, 90_000);
  });

  describe.concurrent('7. inputs and errors', () => {
    it('an unknown flag gets a "did you mean"', async () => {
      const r = await runConverge(['plan', dir, '--outptu', 'json']);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        'converge plan: unknown option --outptu; did you mean --output? (see "converge plan --help")\n',
      );
      const run = await runConverge(['run', dir, '--concurency', '3']);
      expect(run.stderr).toContain('did you mean --concurrency?');
    });

    it.each([
      [['--http-port', '99999'], '--http-port: "99999" is not a port; give 1 to 65535 (0: any free port)'],
      [['--resync', '0s'], '--resync: "0s" is too short; give at least 1s'],
      [['--concurrency', '0'], '--concurrency: 0 is too small; give at least 1'],
      [['--attempts', '0'], '--attempts: 0 is too small; give at least 1'],
      [['--debounce', '0ms'], '--debounce: "0ms" is too short; give at least 10ms'],
    ])('run %j: one line, exit 1', async (args, message) => {
      const r = await runConverge(['run', dir, '--api-url', emulator.url, ...args]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`converge run: ${message}\n`);
    });

    it('a port in use is one line, no stack trace', async () => {
      const busy = createServer();
      await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
      const { port } = busy.address() as { port: number };
      try {
        const r = await runConverge(
          [
            'run',
            dir,
            '--api-url',
            emulator.url,
            '--redis-url',
            REDIS_URL,
            '--redis-prefix',
            prefix('port'),
            '--http-host',
            '127.0.0.1',
            '--http-port',
            String(port),
          ],
          { CONVERGE_API_KEY: 'operator-key-1' },
          30_000,
        );
        expect(r.code).toBe(1);
        expect(r.stderr).not.toMatch(/\n\s+at /);
        expect(r.stderr.trim().split('\n')).toEqual([
          `converge run: status server cannot listen on 127.0.0.1:${port} (the port is in use); set --http-port or --http-host`,
        ]);
      } finally {
        busy.close();
      }
    }, 40_000);

    it('network errors name the host and the setting; 401 and 403 name CONVERGE_API_KEY and CONVERGE_TENANT_ID', async () => {
      const port = await freePort();
      const refused = await runConverge(
        ['plan', dir, '--api-url', `http://127.0.0.1:${port}`, '--no-applied-state'],
        {},
        60_000,
      );
      expect(refused.code).toBe(1);
      const last = refused.stderr.trim().split('\n').at(-1)!;
      expect(last).toBe(
        `converge plan: GET /v2/deployments to 127.0.0.1:${port}: connection refused; is the service up there? the URL comes from --api-url or CONVERGE_API_URL`,
      );
      for (const key of ['', 'wrong-key']) {
        const r = await runConverge(['plan', dir, '--api-url', emulator.url, '--no-applied-state'], {
          CONVERGE_API_KEY: key,
        });
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(
          /answered 40[13]: .*; check the API key in CONVERGE_API_KEY \(--api-key\), and for a key that spans several workspaces the workspace in CONVERGE_TENANT_ID \(--tenant-id\)\n$/,
        );
        expect(r.stderr).not.toContain('wrong-key');
      }
    }, 90_000);

    it('retries of a read are shown on stderr as they happen', async () => {
      const silent = await silentServer();
      try {
        const r = await runConverge(
          ['plan', dir, '--api-url', silent.url, '--no-applied-state', '--request-timeout', '300ms'],
          {},
          60_000,
        );
        expect(r.code).toBe(1);
        const retries = r.stderr.split('\n').filter((l) => l.includes('retrying'));
        expect(retries).toHaveLength(4);
        retries.forEach((line, i) =>
          expect(line).toMatch(
            new RegExp(
              `^converge plan: GET /v2/deployments: no answer in 300ms, retrying \\(${i + 2}/5\\) in \\d+(ms|\\.?\\d*s)$`,
            ),
          ),
        );
        expect(r.stderr.trim().split('\n').at(-1)).toMatch(
          /no response headers before the headers timeout \(300 ms\); is the service up there\?/,
        );
      } finally {
        await silent.close();
      }
    }, 60_000);

    it('with --output json an error still writes a JSON document to stdout', async () => {
      const noUrl = await runConverge(['plan', dir, '-o', 'json'], NO_URL);
      expect(noUrl.code).toBe(1);
      expect(JSON.parse(noUrl.stdout)).toEqual({
        error: { code: 'E_USAGE', message: expect.stringContaining('no service URL') },
      });
      const typo = await runConverge(['apply', dir, '--output', 'json', '--wiat']);
      expect(JSON.parse(typo.stdout)).toEqual({
        error: { code: 'E_USAGE', message: expect.stringContaining('did you mean --wait?') },
      });
      const invalid = await runConverge(['validate', 'test/fixtures/bad', '-o', 'json']);
      expect(invalid.code).toBe(1);
      expect((JSON.parse(invalid.stdout) as { diagnostics: unknown[] }).diagnostics.length).toBeGreaterThan(0);
    });

    it('an empty manifest directory is a warning, and validate and plan say how many files they read', async () => {
      const validated = await runConverge(['validate', empty]);
      expect(validated.code).toBe(0);
      // the directory itself, named as typed (here an absolute path)
      expect(validated.stdout).toBe(
        `${empty}:1:1: warning: the manifest directory holds no manifest file (*.yaml, *.yml): nothing to plan; is it the right directory, and has it been synced?\n0 resources in 0 files, 0 errors, 1 warning\n`,
      );
      const planned = await runConverge(
        ['plan', empty, '--api-url', emulator.url, '--no-applied-state', '--name-prefix', 'none-'],
        { CONVERGE_API_KEY: 'operator-key-1' },
      );
      expect(planned.code).toBe(0);
      expect(planned.stderr).toBe(`converge plan: read 0 manifest files in ${empty}\n`);
      expect(planned.stdout).toContain('warning: the manifest directory holds no manifest file');
      const notManifests = await tempDir('operator-other');
      try {
        await writeFiles(notManifests, { 'values.yaml': '# helm values\n' });
        const other = await runConverge(['validate', notManifests]);
        expect(other.stdout).toContain('1 file read, but none declares a resource');
      } finally {
        await rm(notManifests, { recursive: true, force: true });
      }
    });
  });
});
