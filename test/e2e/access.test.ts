// Access: the status server binds where it is told and serves no secret; the daemon runs as a non-root user on a
// read-only root filesystem; the Dockerfile and the Kubernetes example say so and keep the API key in a Secret.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  freePort,
  killAllConverge,
  MAIN,
  REDIS_URL,
  ROOT,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';

const API_KEY = 'access-suite-api-key-7Rt2';
const SECRET = 'access-suite-secret-value-Qe81';

/** Whether this machine lets a child have its own mount namespace (to make / read-only for it alone). */
function canUnshare(): boolean {
  try {
    execFileSync('unshare', ['-m', '--propagation', 'private', 'true'], { stdio: 'ignore' });
    execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('access', () => {
  let emulator: RunningEmulator;
  let dir: string;
  const prefixes: string[] = [];

  beforeAll(async () => {
    emulator = await startEmulator({ apiKey: API_KEY, buildMs: 0, secrets: 'plain' });
    dir = await tempDir('access');
    await writeFiles(dir, {
      'a.yaml': dockerDeploymentYaml('access-a', { maxScale: 2, secrets: [['TOKEN', 'ACCESS_TOKEN']] }),
      'b.yaml': dockerDeploymentYaml('access-b', { maxScale: 3 }),
    });
  }, 120_000);

  afterAll(async () => {
    await killAllConverge();
    await emulator?.close();
    for (const p of prefixes) await dropPrefix(p);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('--http-host: the status server listens on that address only, answers GET only, and shows no secret', async () => {
    const prefix = testPrefix('access');
    prefixes.push(prefix);
    const port = await freePort();
    const daemon = await startDaemon(
      dir,
      [
        '--api-url',
        emulator.url,
        '--redis-prefix',
        prefix,
        '--http-host',
        '127.0.0.2',
        '--http-port',
        String(port),
        '--log-level',
        'info',
      ],
      {
        CONVERGE_API_KEY: API_KEY,
        ACCESS_TOKEN: SECRET,
      },
    );
    expect(daemon.url).toBe(`http://127.0.0.2:${port}`);
    const listening = await daemon.waitForLine((l) => l.msg === 'status server listening');
    expect(listening.url).toBe(`http://127.0.0.2:${port}`);
    // another address of the same machine gets nothing
    const elsewhere = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.status,
      (e: Error & { cause?: { code?: string } }) => e.cause?.code,
    );
    expect(elsewhere).toBe('ECONNREFUSED');

    await until(
      'both deployments',
      () => ['access-a', 'access-b'].every((n) => emulator.store.allDeployments().some((d) => d.name === n)),
      15_000,
      100,
    );
    expect((await fetch(`${daemon.url}/status`, { method: 'POST', body: '{}' })).status).toBe(405);
    const unknown = await fetch(`${daemon.url}/debug/vars?key=${API_KEY}`);
    expect(unknown.status).toBe(404);
    const bodies = [await unknown.text()];
    for (const path of ['/healthz', '/readyz', '/metrics', '/status']) {
      const res = await fetch(`${daemon.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('cache-control'), path).toBe('no-store');
      bodies.push(await res.text());
    }
    const served = bodies.join('\n');
    expect(served).toContain('access-a');
    expect(served).not.toContain(API_KEY);
    expect(served).not.toContain(SECRET);
    expect(served).not.toContain(Buffer.from(SECRET).toString('base64').replace(/=+$/, ''));
    await daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
  }, 60_000);

  it.skipIf(!canUnshare())(
    'runs as uid 1000 with / mounted read-only (as in the container) and converges',
    async () => {
      const prefix = testPrefix('readonly');
      prefixes.push(prefix);
      const port = await freePort();
      const roDir = await tempDir('readonly');
      await writeFiles(roDir, { 'c.yaml': dockerDeploymentYaml('readonly-c', { maxScale: 1 }) });
      // readable by the unprivileged user; nothing of the checkout is writable by it, and / is read-only anyway
      await chmod(roDir, 0o755);
      await chmod(join(roDir, 'c.yaml'), 0o644);
      const script =
        'mount -o remount,bind,ro / && exec setpriv --reuid=1000 --regid=1000 --clear-groups --inh-caps=-all "$@"';
      const child = spawn(
        'unshare',
        [
          '-m',
          '--propagation',
          'private',
          'sh',
          '-c',
          script,
          'sh',
          process.execPath,
          MAIN,
          'run',
          roDir,
          '--api-url',
          emulator.url,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefix,
          '--http-host',
          '127.0.0.1',
          '--http-port',
          String(port),
          '--log-level',
          'info',
        ],
        {
          cwd: ROOT,
          env: { PATH: process.env.PATH, CONVERGE_API_KEY: API_KEY, HOME: '/nonexistent' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      try {
        await until(
          'the read-only daemon to answer /healthz',
          async () => {
            if (child.exitCode !== null) throw new Error(`exited: ${out.slice(-1500)}`);
            return (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200;
          },
          20_000,
          100,
        );
        await until(
          'its deployment to be created',
          () => emulator.store.allDeployments().some((d) => d.name === 'readonly-c'),
          15_000,
          100,
        );
        await until(
          '/readyz 200',
          async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
          10_000,
          100,
        );
        // the process serving it runs as uid 1000, on a root filesystem it cannot write
        const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
        expect(status).toMatch(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
        const mounts = await readFile(`/proc/${child.pid}/mounts`, 'utf8');
        expect(mounts).toMatch(/^\S+ \/ \S+ ro[,\s]/m);
        expect(out).not.toMatch(/EROFS|EACCES|read-only file system/i);
      } finally {
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        await rm(roDir, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it('the Dockerfile runs the daemon as a non-root user, with production dependencies only and a health check', async () => {
    const text = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
    const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
    const stages: string[][] = [];
    for (const line of lines) {
      if (/^FROM\s/i.test(line)) stages.push([line]);
      else stages.at(-1)?.push(line);
    }
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const runtime = stages.at(-1)!;
    const users = runtime.filter((l) => /^USER\s/i.test(l)).map((l) => l.split(/\s+/)[1]!);
    expect(users.length).toBeGreaterThan(0);
    const user = users.at(-1)!;
    expect(user.split(':')[0]).not.toMatch(/^(root|0)$/);
    // the runtime stage installs nothing itself: node_modules come from a production-only stage
    expect(runtime.join('\n')).not.toMatch(/npm (ci|install)/);
    const deps = stages.find((s) => s.some((l) => /npm ci .*--omit=dev/.test(l)));
    expect(deps, 'a stage installing production dependencies only').toBeDefined();
    expect(runtime.join('\n')).toMatch(/COPY --from=\S+ \S*node_modules/);
    expect(runtime.join('\n')).toMatch(/HEALTHCHECK[\s\S]*\/healthz/);
    expect(runtime.join('\n')).toMatch(/CMD \["converge", "run", "\/manifests"\]/);
  });

  it('every file the Dockerfile copies from the build context exists and is not left out by .dockerignore', async () => {
    const rules = (await readFile(join(ROOT, '.dockerignore'), 'utf8'))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => ({ keep: l.startsWith('!'), pattern: l.replace(/^!/, '').replace(/\/$/, '') }));
    // Docker's rule: the last pattern that matches a path decides; a pattern matches the path or a folder above it.
    const matches = (pattern: string, path: string): boolean => {
      const glob = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/|$)`);
      return glob.test(path);
    };
    const ignored = (path: string): boolean =>
      rules.reduce((out, rule) => (matches(rule.pattern, path) ? !rule.keep : out), false);
    const copied = (await readFile(join(ROOT, 'Dockerfile'), 'utf8'))
      .split('\n')
      .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
      .flatMap((l) => l.trim().split(/\s+/).slice(1, -1));
    expect(copied).toEqual(expect.arrayContaining(['src', 'scripts/bundle.mjs', 'config']));
    for (const path of copied) {
      expect(existsSync(join(ROOT, path)), path).toBe(true);
      expect(ignored(path), `${path} is left out of the build context by .dockerignore`).toBe(false);
    }
    expect(ignored('scripts/quickstart.mjs')).toBe(true);
    expect(ignored('test')).toBe(true);
  });

  it('the Kubernetes example: every container non-root with a read-only root filesystem; the API key from a Secret', async () => {
    const folder = join(ROOT, 'examples', 'kubernetes');
    const docs: Array<Record<string, any>> = [];
    for (const file of (await readdir(folder)).filter((f) => /\.ya?ml$/.test(f))) {
      for (const doc of parseAllDocuments(await readFile(join(folder, file), 'utf8'))) {
        expect(doc.errors, file).toEqual([]);
        const value = doc.toJS() as Record<string, any> | null;
        if (value) docs.push({ ...value, __file: file });
      }
    }
    const workloads = docs.filter((d) => ['Deployment', 'StatefulSet', 'DaemonSet', 'Pod'].includes(d.kind));
    expect(workloads.map((w) => w.metadata.name)).toContain('converge');
    for (const w of workloads) {
      const pod = w.kind === 'Pod' ? w.spec : w.spec.template.spec;
      const containers = [...(pod.initContainers ?? []), ...pod.containers];
      for (const c of containers) {
        const where = `${w.__file}: ${w.metadata.name}/${c.name}`;
        const sc = c.securityContext ?? {};
        expect(sc.readOnlyRootFilesystem, where).toBe(true);
        expect(sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, where).toBe(true);
        expect(sc.runAsUser ?? pod.securityContext?.runAsUser, where).not.toBe(0);
        expect(sc.allowPrivilegeEscalation, where).toBe(false);
      }
    }
    const converge = workloads
      .find((w) => w.metadata.name === 'converge')!
      .spec.template.spec.containers.find((c: { name: string }) => c.name === 'converge');
    const key = converge.env.find((e: { name: string }) => e.name === 'CONVERGE_API_KEY');
    expect(key.value).toBeUndefined();
    expect(key.valueFrom.secretKeyRef.name).toBeTruthy();
    // the uid the image declares is the one Kubernetes runs it as
    const dockerUser = /^USER\s+(\d+)/m.exec(await readFile(join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
    expect(String(converge.securityContext.runAsUser)).toBe(dockerUser);
    // no literal credential anywhere in the example's environment
    for (const w of workloads) {
      const pod = w.kind === 'Pod' ? w.spec : w.spec.template.spec;
      for (const c of pod.containers) {
        for (const e of c.env ?? [])
          if (/KEY|SECRET|TOKEN|PASSWORD/i.test(e.name)) expect(e.value, `${c.name} ${e.name}`).toBeUndefined();
      }
    }
  });
});
