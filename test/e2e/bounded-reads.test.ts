// Reads stay in the tree and are bounded, through the built binary: links out of the manifest or overlay directory are
// not followed, hostile variables files (a FIFO, /dev/zero, 20 MB, a mistyped path) are refused with one clear error and
// little memory, and a variable amplified past the manifest cap blocks only its resource, in the CLI and the daemon.
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { providerYaml } from '../helpers/apply.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  MAIN,
  REDIS_URL,
  ROOT,
  runConverge,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';
import { atEnd, daemonOf } from './scoped.js';

afterAll(async () => {
  await killAllConverge();
});

interface PlanJson {
  changes: Array<{ kind: string; name: string; action: string; reason: string | null }>;
  diagnostics: Array<{ file: string; line: number; column: number; severity: string; message: string }>;
}

/** A generous bound on a command's peak memory: a plan of a few files takes about 70-120 MB; the faults took 0.8-11 GB. */
const PEAK_RSS_BOUND_MB = 300;

/**
 * Runs `node dist/cli/main.js ARGS` under /usr/bin/time, which reports the child's peak resident memory (max RSS) on
 * its last stderr line. Killed after `timeoutMs` (a hang then fails the test with what was printed).
 */
function runMeasured(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string; peakMb: number }> {
  return new Promise((done) => {
    const child = spawn('/usr/bin/time', ['-f', 'peak-rss-kb %M', process.execPath, MAIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const peak = /peak-rss-kb (\d+)\s*$/.exec(stderr);
      const rest = stderr.replace(/(Command exited with non-zero status \d+\n)?peak-rss-kb \d+\s*$/, '');
      done({ code, stdout, stderr: rest, peakMb: peak ? Number(peak[1]) / 1024 : Number.POSITIVE_INFINITY });
    });
  });
}

async function emulatorFor(t: TestContext): Promise<RunningEmulator> {
  const e = await startEmulator({ buildMs: 0, lenientCreate: true });
  atEnd(t, () => e.close());
  return e;
}

async function rootFor(t: TestContext, label: string): Promise<string> {
  const root = await tempDir(label);
  atEnd(t, () => rm(root, { recursive: true, force: true }));
  return root;
}

const SECRET_ENV = { AMP_CLIENT_SECRET: 'not-printed' };

describe.concurrent('reads stay in the tree and are bounded (the built binary)', () => {
  it(
    'a link out of the manifest directory or an overlay directory is not followed: a warning names it, nothing declared there is planned',
    { timeout: 90_000 },
    async (t) => {
      const e = await emulatorFor(t);
      const root = await rootFor(t, 'link-out');
      const outside = join(root, 'outside');
      await writeFiles(join(root, 'manifests'), { 'app.yaml': dockerDeploymentYaml('inside-app', { maxScale: 1 }) });
      await writeFiles(outside, {
        'elsewhere.yaml': dockerDeploymentYaml('declared-outside', { maxScale: 1 }),
        'added.yaml': dockerDeploymentYaml('added-outside', {
          maxScale: 1,
          annotations: { 'converge/overlay': 'add' },
        }),
      });
      await mkdir(join(root, 'overlay'));
      await symlink(outside, join(root, 'manifests', 'linked'));
      await symlink(join(outside, 'elsewhere.yaml'), join(root, 'manifests', 'one.yaml'));
      await symlink(outside, join(root, 'overlay', 'linked'));
      const r = await runConverge(
        [
          'plan',
          join(root, 'manifests'),
          '--overlay',
          join(root, 'overlay'),
          '--api-url',
          e.url,
          '--no-applied-state',
          '--output',
          'json',
        ],
        {},
        60_000,
      );
      expect(r.code, r.stderr).toBe(0);
      const plan = JSON.parse(r.stdout) as PlanJson;
      expect(plan.changes.map((c) => `${c.action} ${c.name}`)).toEqual(['create inside-app']);
      const real = await realpath(outside);
      const warnings = plan.diagnostics
        .filter((d) => d.message.startsWith('symbolic link to'))
        .map((d) => `${d.file}:${d.line}:${d.column} ${d.severity} ${d.message}`);
      expect(warnings).toEqual([
        `${join(root, 'overlay')}/linked:1:1 warning symbolic link to ${real}, outside the overlay directory: not followed, nothing declared there is planned; copy the files into the overlay directory, or give that folder itself`,
        `linked:1:1 warning symbolic link to ${real}, outside the manifest directory: not followed, nothing declared there is planned; copy the files into the manifest directory, or give that folder itself`,
        `one.yaml:1:1 warning symbolic link to ${join(real, 'elsewhere.yaml')}, outside the manifest directory: not followed, nothing declared there is planned; copy the files into the manifest directory, or give that folder itself`,
      ]);
    },
  );

  it(
    'the daemon with links to /usr/share and to a folder outside: neither walked nor watched, nothing there created, peak memory modest',
    { timeout: 120_000 },
    async (t) => {
      const e = await emulatorFor(t);
      const root = await rootFor(t, 'link-out-daemon');
      const dir = join(root, 'manifests');
      await writeFiles(dir, { 'app.yaml': dockerDeploymentYaml('inside-app', { maxScale: 1 }) });
      await writeFiles(join(root, 'outside'), {
        'elsewhere.yaml': dockerDeploymentYaml('declared-outside', { maxScale: 1 }),
      });
      await symlink(join(root, 'outside'), join(dir, 'linked'));
      await symlink('/usr/share', join(dir, 'system'));
      const prefix = testPrefix('link-out-daemon');
      atEnd(t, () => dropPrefix(prefix));
      const daemon = await daemonOf(t, dir, [
        '--api-url',
        e.url,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
        '--resync',
        '1h',
        '--log-level',
        'debug',
      ]);
      await until(
        'inside-app created',
        () => e.store.allDeployments().some((d) => d.name === 'inside-app'),
        60_000,
        100,
      );
      await daemon.waitForLine((l) => l.msg === 'reconciled', 30_000);
      const skipped = daemon.lines
        .filter((l) => String(l.msg).startsWith('symbolic link not followed'))
        .map((l) => l.link)
        .sort();
      expect(skipped).toEqual(['linked', 'system']);
      const warned = daemon.lines.filter((l) => l.msg === 'manifest problem').map((l) => String(l.diagnostic));
      expect(warned).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            /^linked:1:1: warning: symbolic link to .*outside the manifest directory: not followed/,
          ),
          expect.stringMatching(
            /^system:1:1: warning: symbolic link to \/usr\/share, outside the manifest directory: not followed/,
          ),
        ]),
      );
      expect(e.store.allDeployments().map((d) => d.name)).toEqual(['inside-app']);
      // Walking and watching /usr/share took 500 MB and 16 CPU-seconds; VmHWM is the process' peak resident memory.
      const peakMb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))![1]) / 1024;
      console.log(`daemon with a link to /usr/share: peak RSS ${peakMb.toFixed(0)} MB`);
      expect(peakMb).toBeLessThan(PEAK_RSS_BOUND_MB);
      expect(await daemon.healthz()).toBe(200);
    },
  );

  it(
    'a FIFO as variables file is refused at once: the command ends with one clear error, it does not wait for a writer',
    { timeout: 90_000 },
    async (t) => {
      const root = await rootFor(t, 'vars-fifo');
      await writeFiles(join(root, 'manifests'), { 'app.yaml': dockerDeploymentYaml('fifo-app', { maxScale: 1 }) });
      execFileSync('mkfifo', [join(root, 'vars.yaml')]);
      const r = await runConverge(['validate', join(root, 'manifests'), '--vars', join(root, 'vars.yaml')], {}, 60_000);
      expect(r.signal, 'killed by the test timeout: the read blocked').toBeNull();
      expect(r.code).toBe(1);
      expect(r.stdout.split('\n')[0]).toBe(
        `${join(root, 'vars.yaml')}:1:1: error: variables file is not a regular file (a pipe, a device or a folder); give a plain YAML file to --vars (or the setting vars)`,
      );
    },
  );

  it.for([
    {
      label: 'a variables path linked to /dev/zero',
      file: 'zero.yaml',
      message: 'variables file is not a regular file (a pipe, a device or a folder)',
    },
    { label: 'a 20 MB variables file', file: 'big.yaml', message: 'variables file is larger than 1 MiB' },
  ])(
    '$label is refused without being read whole: one clear error, peak memory stays modest',
    { timeout: 120_000 },
    async ({ file, message }, t) => {
      const root = await rootFor(t, 'vars-huge');
      await writeFiles(join(root, 'manifests'), { 'app.yaml': dockerDeploymentYaml('huge-app', { maxScale: 1 }) });
      if (file === 'zero.yaml') await symlink('/dev/zero', join(root, file));
      // 20 MB of small variables: read whole and parsed, such a file took 784 MB.
      else await writeFile(join(root, file), manyVariables(20 * 1024 * 1024));
      const r = await runMeasured(['validate', join(root, 'manifests'), '--vars', join(root, file)], {}, 90_000);
      console.log(`validate --vars ${file}: exit ${r.code}, peak RSS ${r.peakMb.toFixed(0)} MB`);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toContain(`${join(root, file)}:1:1: error: ${message}`);
      expect(r.peakMb).toBeLessThan(PEAK_RSS_BOUND_MB);
    },
  );

  it(
    'a mistyped --vars path is the one error, said first, and no file is claimed as read',
    { timeout: 90_000 },
    async (t) => {
      const root = await rootFor(t, 'vars-missing');
      const manifest = dockerDeploymentYaml('typo-app', { maxScale: 1 }).replace('name: typo-app', 'name: typo-${ENV}');
      await writeFiles(join(root, 'manifests'), { 'app.yaml': manifest });
      await writeFile(join(root, 'dev.yaml'), 'ENV: dev\n');
      const r = await runConverge(['validate', join(root, 'manifests'), '--vars', join(root, 'dve.yaml')], {}, 60_000);
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toEqual([
        `converge validate: variables file ${join(root, 'dve.yaml')} does not exist (--vars, setting vars); check the path`,
      ]);
      expect(r.stdout).toBe('');
    },
  );

  it(
    'a wrong-typed variable is reported at the manifest and at the variables file line that set it',
    { timeout: 90_000 },
    async (t) => {
      const root = await rootFor(t, 'vars-type');
      const manifest = [
        'apiVersion: converge/v1',
        'kind: Deployment',
        'metadata:',
        '  name: typed-app',
        'spec:',
        '  source: external_docker',
        '  source_config:',
        '    resource_spec:',
        '      max_scale: ${MAX_SCALE}',
        '  source_revision_config:',
        '    image_uri: docker.io/acme/typed-app:1',
        '',
      ].join('\n');
      await writeFiles(join(root, 'manifests'), { 'app.yaml': manifest });
      await writeFile(join(root, 'prod.yaml'), '# prod\nMAX_SCALE: lots\n');
      const r = await runConverge(['validate', join(root, 'manifests'), '--vars', join(root, 'prod.yaml')], {}, 60_000);
      expect(r.code).toBe(1);
      expect(r.stdout.split('\n')[0]).toBe(
        `${join(root, 'manifests')}/app.yaml:9:18: error: spec.source_config.resource_spec.max_scale: expected a number, got a string (the value of variable MAX_SCALE, set at ${join(root, 'prod.yaml')}:2:12)`,
      );
    },
  );

  it(
    'a 1 MB variable used 1,000 times blocks only its provider, at the reference that crosses 1 MiB; the rest is planned in bounded memory',
    { timeout: 120_000 },
    async (t) => {
      const e = await emulatorFor(t);
      const root = await rootFor(t, 'amplified');
      const { dir, vars } = await amplifiedTree(root);
      const r = await runMeasured(
        ['plan', dir, '--vars', vars, '--api-url', e.url, '--no-applied-state', '--output', 'json'],
        SECRET_ENV,
        90_000,
      );
      console.log(`plan with a variable amplified to 1 GB: exit ${r.code}, peak RSS ${r.peakMb.toFixed(0)} MB`);
      expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
      const plan = JSON.parse(r.stdout) as PlanJson;
      expect(plan.changes.map((c) => `${c.action} ${c.kind}/${c.name}`).sort()).toEqual([
        'blocked OAuthProvider/amplified',
        'create Deployment/amp-app',
        'create OAuthProvider/small',
      ]);
      const expansion = plan.diagnostics.filter((d) => d.message.includes('once substituted'));
      expect(expansion.map((d) => `${d.file}:${d.line}:${d.column}`)).toEqual(['providers.yaml:11:42']);
      expect(expansion[0]!.message).toContain(
        'variable BIG makes this document larger than 1 MiB once substituted (the manifest size cap)',
      );
      expect(plan.changes.find((c) => c.name === 'amplified')?.reason).toContain('providers.yaml:11:42');
      expect(r.peakMb).toBeLessThan(PEAK_RSS_BOUND_MB);
    },
  );

  it(
    'the daemon with the amplified variable: the other resources are applied, /healthz answers, the provider is reported blocked',
    { timeout: 120_000 },
    async (t) => {
      const e = await emulatorFor(t);
      const root = await rootFor(t, 'amplified-daemon');
      const { dir, vars } = await amplifiedTree(root);
      const prefix = testPrefix('amplified-daemon');
      atEnd(t, () => dropPrefix(prefix));
      const daemon = await daemonOf(
        t,
        dir,
        ['--vars', vars, '--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--resync', '1h'],
        SECRET_ENV,
      );
      await until(
        'amp-app and the small provider created',
        () =>
          e.store.allDeployments().some((d) => d.name === 'amp-app') &&
          e.store.providers().some((p) => p.name === 'SMALL'),
        60_000,
        100,
      );
      const reconciled = await daemon.waitForLine((l) => l.msg === 'reconciled', 30_000);
      expect(reconciled).toMatchObject({ blocked: 1 });
      expect(await daemon.healthz()).toBe(200);
      expect(
        daemon.lines.some(
          (l) =>
            l.msg === 'manifest problem' &&
            String(l.diagnostic).includes(
              'providers.yaml:11:42: error: variable BIG makes this document larger than 1 MiB once substituted',
            ),
        ),
      ).toBe(true);
      expect(e.store.providers().map((p) => p.name)).toEqual(['SMALL']);
    },
  );
});

/** A variables file of `bytes` bytes (about), one small variable a line. */
function manyVariables(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `VARIABLE_${i}: value-${i}\n`;
    lines.push(line);
    size += line.length;
  }
  return lines.join('');
}

/** A tree with an OAuth provider whose scope uses a 1 MB variable 1,000 times (1 GB once substituted), a small provider in the same file, and a deployment in its own file. */
async function amplifiedTree(root: string): Promise<{ dir: string; vars: string }> {
  const dir = join(root, 'manifests');
  const uses = Array.from({ length: 1000 }, () => '${BIG}').join(' ');
  const amplified = providerYaml('amplified', 'AMP_CLIENT_SECRET') + `  authorization_params: { scope: "${uses}" }\n`;
  const small = providerYaml('small', 'AMP_CLIENT_SECRET');
  await writeFiles(dir, {
    'providers.yaml': `${amplified}---\n${small}`,
    'app.yaml': dockerDeploymentYaml('amp-app', { maxScale: 1 }),
  });
  const vars = join(root, 'vars.yaml');
  await writeFile(vars, `BIG: ${'b'.repeat(1_000_000)}\n`);
  return { dir, vars };
}
