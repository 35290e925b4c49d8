// Helpers of the end-to-end suites: one build of dist per test run, converge children, redis-server children, polling.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { copyBuild } from './project-dist.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI built once per test run by test/global-build.ts (the e2e tier's setup; falls back to the project's dist/). */
export const MAIN = join(process.env.CONVERGE_TEST_DIST ?? join(ROOT, 'dist'), 'cli', 'main.js');
/** The project's own dist, which the benchmarks load. */
const PROJECT_MAIN = join(ROOT, 'dist', 'cli', 'main.js');

const CACHE = join(ROOT, 'node_modules', '.cache', 'converge-e2e');

/**
 * Builds the project's dist (`tsc -p tsconfig.build.json`, or a copy of the run's build for child processes when there
 * is one) once per test run, for what loads it by path (the benchmark runner); child processes run MAIN instead: the
 * first e2e file to get here builds while holding a lock directory, the others wait and reuse it (a marker names the
 * run's Redis prefix).
 */
export async function ensureBuilt(): Promise<void> {
  const run = process.env.CONVERGE_TEST_PREFIX ?? 'local';
  await mkdir(CACHE, { recursive: true });
  const marker = join(CACHE, 'built-for');
  const lock = join(CACHE, 'lock');
  for (let waited = 0; ; waited += 100) {
    if ((await readFile(marker, 'utf8').catch(() => '')) === run && existsSync(PROJECT_MAIN)) return;
    try {
      await mkdir(lock);
      break;
    } catch {
      // A lock older than two minutes belongs to a run that died.
      const info = await stat(lock).catch(() => undefined);
      if (info && Date.now() - info.mtimeMs > 120_000) await rmdir(lock).catch(() => undefined);
      if (waited > 180_000) throw new Error('waited three minutes for another e2e file to build dist');
      await sleep(100);
    }
  }
  try {
    if ((await readFile(marker, 'utf8').catch(() => '')) === run && existsSync(PROJECT_MAIN)) return;
    const runBuild = process.env.CONVERGE_TEST_DIST;
    if (runBuild && existsSync(join(runBuild, 'cli', 'main.js'))) {
      // The run's build for child processes is this very compile with another outDir: copy it, do not compile twice.
      await copyBuild(runBuild, dirname(dirname(PROJECT_MAIN)));
    } else {
      const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      // tsc emits even when another helper's in-progress file has a type error; the checks below are what matter.
      const output = await collect(
        spawn(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }),
      );
      if (!existsSync(PROJECT_MAIN)) throw new Error(`build failed:\n${output.text.slice(0, 3000)}`);
    }
    await writeFile(marker, run);
  } finally {
    await rmdir(lock).catch(() => undefined);
  }
}

async function collect(child: ChildProcess): Promise<{ code: number | null; text: string }> {
  let text = '';
  child.stdout?.on('data', (c: Buffer) => (text += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (text += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { code, text };
}

import { dropPrefix, keysUnder as scanKeys, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { deploymentYaml, externalDockerSpec } from '../helpers/manifests.js';

export { dropPrefix, REDIS_URL, scanKeys, testPrefix, until };

/** A free loopback port (bound, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function tempDir(label: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `converge-e2e-${label}-`));
}

export async function writeFiles(dir: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
}

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A converge child process (dist), with everything it printed kept. */
export interface ConvergeChild {
  child: ChildProcess;
  pid: number;
  /** Every byte of stdout and stderr, as text. */
  stdout(): string;
  stderr(): string;
  /** stdout lines parsed as JSON (log lines); others as { level: 0, msg }. */
  lines: LogLine[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  waitForLine(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const children = new Set<ConvergeChild>();

/**
 * Starts `node NODE_ARGS dist/cli/main.js ARGS` with `env` over a copy of the test process's environment (`nodeArgs`:
 * node's own options, such as `--cpu-prof`, which NODE_OPTIONS does not allow).
 */
export function spawnConverge(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  options: { cleanEnv?: boolean; nodeArgs?: string[] } = {},
): ConvergeChild {
  const base: NodeJS.ProcessEnv = options.cleanEnv
    ? { PATH: process.env.PATH, HOME: process.env.HOME }
    : { ...process.env };
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), MAIN, ...args], {
    cwd: ROOT,
    env: { ...base, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let partial = '';
  const lines: LogLine[] = [];
  const waiters: Array<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }> = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    out += chunk;
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const text = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let line: LogLine;
      try {
        const parsed = JSON.parse(text) as unknown;
        line =
          parsed && typeof parsed === 'object' && !Array.isArray(parsed)
            ? (parsed as LogLine)
            : { level: 0, msg: text };
      } catch {
        line = { level: 0, msg: text };
      }
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (err += chunk));
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      done = true;
      resolve({ code, signal });
    }),
  );
  const handle: ConvergeChild = {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    lines,
    exited,
    alive: () => !done,
    waitForLine(match, timeoutMs = 45_000) {
      const found = lines.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no matching log line within ${timeoutMs} ms; stderr: ${err.slice(-1500)}; last lines: ${JSON.stringify(lines.slice(-4)).slice(0, 2000)}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          match,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
        void exited.then(({ code, signal }) => {
          clearTimeout(timer);
          reject(
            new Error(`converge exited (${code ?? signal}) before the expected log line; stderr: ${err.slice(-1500)}`),
          );
        });
      });
    },
    async kill(signal = 'SIGKILL') {
      if (done) return;
      child.kill(signal);
      await exited;
    },
  };
  children.add(handle);
  void exited.then(() => children.delete(handle));
  return handle;
}

/** Runs a converge command to its end (killed after `timeoutMs`: a hang fails the test with what was printed). */
export async function runConverge(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 30_000,
  nodeArgs: string[] = [],
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  const c = spawnConverge(args, env, { nodeArgs });
  const timer = setTimeout(() => c.child.kill('SIGKILL'), timeoutMs);
  const { code, signal } = await c.exited;
  clearTimeout(timer);
  return { code, signal, stdout: c.stdout(), stderr: c.stderr(), ms: Date.now() - started };
}

export interface DaemonHandle extends ConvergeChild {
  url: string;
  status(): Promise<DaemonStatus>;
  readyz(): Promise<{
    status: number;
    body: { ready: boolean; checks: Array<{ name: string; ok: boolean; detail?: string }> };
  }>;
  healthz(): Promise<number>;
  metrics(): Promise<string>;
}

export interface ResourceRow {
  key: string;
  kind: string;
  name: string;
  file: string | null;
  action: string;
  state: string;
  /** the sync status and its reason (WriteRefused, Conflict, DeletePending, ...), as docs/contracts.md describes */
  sync?: { status: string; reason?: string; message?: string };
  reason: string | null;
  error: string | null;
  heldAtLastGood: boolean;
  job: { id: string; state: string; outcome?: string; message?: string } | null;
}

/** What a row of /status shows of a resource's record (issue 40): its last job, appliedFrom, hold and health. */
export interface RecordedRow {
  key: string;
  job: { id: string; state: string } | null;
  appliedFrom?: { kind: string; id: string };
  hold?: { reason: string; revisionId?: string };
  health: { status: string; reason: string; revisionId?: string };
}

export interface DaemonStatus {
  manifests: { loaded: boolean; error: string | null } | null;
  lastReconcile: { id: number; ok: boolean; error: string | null; trigger: string } | null;
  reconciles: { total: number; failed: number } | null;
  resources: ResourceRow[];
  plan: {
    summary: Record<string, number>;
    diagnostics: Array<{ severity: string; file: string; line: number; column: number; message: string }>;
  } | null;
  [field: string]: unknown;
}

/**
 * Starts `converge run DIR` with its status server on a free port of 127.0.0.1 (or --http-host/--http-port from
 * `args`); resolves once its own status server answers (/healthz 200, /status not the starting port's 503), whatever
 * the log level.
 */
export async function startDaemon(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<DaemonHandle> {
  const hostAt = args.indexOf('--http-host');
  const portAt = args.indexOf('--http-port');
  const host = hostAt >= 0 ? args[hostAt + 1]! : '127.0.0.1';
  const port = portAt >= 0 ? Number(args[portAt + 1]) : await freePort();
  const c = spawnConverge(
    [
      'run',
      dir,
      ...(portAt >= 0 ? [] : ['--http-port', String(port)]),
      ...(hostAt >= 0 ? [] : ['--http-host', host]),
      ...args,
    ],
    env,
  );
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  // The port answers /healthz while the daemon's modules load, and 503 elsewhere (src/daemon/server/status-port.ts):
  // the daemon is up once its own status server answers /status.
  await until(
    `the daemon's /healthz and /status at ${url}`,
    async () => {
      if (!c.alive()) throw new Error(`the daemon exited: ${c.stderr().slice(-1500)}`);
      if ((await fetch(`${url}/healthz`)).status !== 200) return false;
      return (await fetch(`${url}/status?limit=1`)).status !== 503;
    },
    45_000,
    50,
  ).catch((error: unknown) => {
    if (!c.alive())
      throw new Error(
        `the daemon exited at start; stderr: ${c.stderr().slice(-1500)}; stdout: ${c.stdout().slice(-1500)}`,
      );
    throw error;
  });
  return {
    ...c,
    url,
    async status() {
      return (await (await fetch(`${url}/status`)).json()) as DaemonStatus;
    },
    async readyz() {
      const res = await fetch(`${url}/readyz`);
      return { status: res.status, body: (await res.json()) as Awaited<ReturnType<DaemonHandle['readyz']>>['body'] };
    },
    async healthz() {
      return (await fetch(`${url}/healthz`)).status;
    },
    async metrics() {
      return (await fetch(`${url}/metrics`)).text();
    },
  };
}

/** SIGKILLs every converge child still running (afterAll). */
export async function killAllConverge(): Promise<void> {
  await Promise.all([...children].map((c) => c.kill('SIGKILL')));
}

/** A redis-server child on its own port and data directory. */
export interface RedisChild {
  port: number;
  url: string;
  dir: string;
  /** Starts it (again) on the same port and directory. */
  start(): Promise<void>;
  /** SIGKILL (a crash) or SHUTDOWN NOSAVE-like SIGTERM. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: connections stay open, nothing is answered (a frozen Redis). */
  freeze(): void;
  /** SIGCONT after freeze(). */
  thaw(): void;
  remove(): Promise<void>;
}

export async function redisChild(options: { extraArgs?: string[] } = {}): Promise<RedisChild> {
  const port = await freePort();
  const dir = await tempDir('redis');
  let proc: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const handle: RedisChild = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    async start() {
      proc = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          '--save',
          '',
          '--daemonize',
          'no',
          ...(options.extraArgs ?? []),
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let text = '';
      proc.stdout!.on('data', (c: Buffer) => (text += c.toString()));
      const p = proc;
      exited = new Promise((resolve) => p.once('exit', () => resolve()));
      await until(
        `redis-server on port ${port} to answer PING (output: ${text.slice(-500)})`,
        async () => {
          if (p.exitCode !== null) throw new Error(`redis-server exited: ${text.slice(-500)}`);
          const probe = new Redis(port, '127.0.0.1', {
            lazyConnect: true,
            maxRetriesPerRequest: 0,
            retryStrategy: () => null,
            ...(options.extraArgs?.includes('--requirepass')
              ? { password: options.extraArgs[options.extraArgs.indexOf('--requirepass') + 1] }
              : {}),
          });
          probe.on('error', () => undefined);
          try {
            await probe.connect();
            return (await probe.ping()) === 'PONG';
          } finally {
            probe.disconnect();
          }
        },
        10_000,
        50,
      );
    },
    async stop(signal = 'SIGKILL') {
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill(signal);
      await exited;
    },
    freeze() {
      proc?.kill('SIGSTOP');
    },
    thaw() {
      proc?.kill('SIGCONT');
    },
    async remove() {
      if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill('SIGCONT');
      await handle.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  await handle.start();
  return handle;
}

/** A Deployment manifest of source external_docker (the emulator requires image_uri), with env secrets. */
export function dockerDeploymentYaml(
  name: string,
  opts: {
    maxScale: number;
    image?: string;
    secrets?: Array<[name: string, env: string]>;
    annotations?: Record<string, string>;
  },
): string {
  return deploymentYaml(
    name,
    externalDockerSpec(opts.image ?? `docker.io/acme/${name}:1`, opts.maxScale, opts.secrets),
    opts.annotations,
  );
}

/** A manual OAuthProvider manifest whose client secret comes from `secretEnv`. */
export { providerYaml } from '../helpers/apply.js';

/** max_scale of a deployment in the emulator's store. */
export function liveMaxScale(deployment: { source_config: Record<string, unknown> } | undefined): unknown {
  return (deployment?.source_config.resource_spec as { max_scale?: unknown } | undefined)?.max_scale;
}
