// `converge run` serves /healthz from the start (issue 50, item 1): the built CLI binds its status port before it loads the
// daemon, answers /healthz 200 and /readyz 503 "starting" while it does, and the daemon's status server takes the same
// socket over: never a refused connection, /healthz 200 before the first reconcile is done, /readyz 503 then 200.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { heldProxy } from '../helpers/held-proxy.js';
import {
  dockerDeploymentYaml,
  freePort,
  killAllConverge,
  REDIS_URL,
  ROOT,
  spawnConverge,
  tempDir,
  until,
  writeFiles,
} from './helpers.js';
import { atEnd, prefixOf } from './scoped.js';
import { chunkOf, modulesBehind } from './bundle-chunks.js';

afterAll(killAllConverge);

const HOLD = join(ROOT, 'test', 'helpers', 'hold-import.mjs');
const IMPORT_LOG = join(ROOT, 'test', 'helpers', 'import-log.mjs');
/** What only the daemon itself needs: none of it is loaded before the status port answers. */
const HEAVY = [
  'bullmq',
  'ioredis',
  'undici',
  'prom-client',
  'pino',
  'chokidar',
  '@opentelemetry',
  '@modelcontextprotocol',
];
/** The listing of every deployment (the first reconcile's read of the service), not a read by id. */
const isListing = (method: string, path: string): boolean => method === 'GET' && /^\/v2\/deployments(\?|$)/.test(path);

/** One answer of the daemon's status port, or the error of a request it did not answer. */
async function ask(
  url: string,
): Promise<{ status: number; body: string; retryAfter: string | null } | { error: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return { status: res.status, body: await res.text(), retryAfter: res.headers.get('retry-after') };
  } catch (error) {
    return { error: String((error as Error).cause ?? error) };
  }
}

/** `converge run` over one manifest, its service behind a proxy that holds the listing, its daemon's import held until `go` is written. */
async function heldDaemon(t: TestContext, label: string) {
  const emulator = await startEmulator({ buildMs: 0 });
  atEnd(t, () => emulator.close());
  const proxy = await heldProxy(emulator.url);
  atEnd(t, () => proxy.close());
  // The first reconcile cannot end before the test lets its listing through.
  proxy.holdNext(isListing);
  const dir = await tempDir(label);
  atEnd(t, () => rm(dir, { recursive: true, force: true }));
  await writeFiles(dir, { 'a.yaml': dockerDeploymentYaml(`${label}-a`, { maxScale: 1 }) });
  const go = join(dir, 'load-the-daemon');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const prefix = prefixOf(t, label);
  const args = [
    'run',
    dir,
    '--api-url',
    proxy.url,
    '--redis-url',
    REDIS_URL,
    '--redis-prefix',
    prefix,
    '--http-host',
    '127.0.0.1',
    '--http-port',
    String(port),
    '--resync',
    '1h',
  ];
  // The daemon's modules are held at their import until the test writes `go`: the process sits between the two steps.
  const imports = join(dir, 'imports.log');
  const env = {
    NODE_OPTIONS: `--import ${HOLD} --import ${IMPORT_LOG}`,
    IMPORT_LOG: imports,
    // The file of the bundle that holds the daemon's command module (scripts/bundle.mjs).
    HOLD_IMPORT_MODULE: `/${chunkOf('cli/commands/run-daemon.js')}`,
    HOLD_IMPORT_UNTIL: go,
  };
  const daemon = spawnConverge(args, env);
  atEnd(t, () => daemon.kill('SIGKILL'));
  // Polled from spawn: connection refused until the port is bound, then 200.
  await until(
    '/healthz 200 from the starting process',
    async () => {
      const answer = await ask(`${url}/healthz`);
      return 'status' in answer && answer.status === 200;
    },
    60_000,
    20,
  );
  const loaded = async (): Promise<string[]> => (await readFile(imports, 'utf8')).split('\n').filter(Boolean);
  return { daemon, proxy, port, url, loaded, load: () => writeFile(go, '') };
}

describe('converge run: /healthz from the start', () => {
  it('answers /healthz 200 while the daemon loads and before its first reconcile ends; /readyz 503, then 200', async (t) => {
    const { daemon, proxy, port, url, loaded, load } = await heldDaemon(t, 'startup-health');
    // What answers now is the command's own light part: no queue, Redis, HTTP client, logger, watcher or tracing yet.
    const packages = modulesBehind(await loaded()).flatMap(
      (u) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u)?.[1] ?? [],
    );
    expect(packages.filter((p) => HEAVY.some((h) => p.startsWith(h)))).toEqual([]);
    expect(packages).toContain('zod');
    // Every later poll is answered, through the take-over by the daemon's status server (same socket, never closed).
    const later: Array<Awaited<ReturnType<typeof ask>>> = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        later.push(await ask(`${url}/healthz`));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    const starting = await ask(`${url}/readyz`);
    expect(starting).toMatchObject({ status: 503 });
    expect(JSON.parse((starting as { body: string }).body)).toEqual({
      ready: false,
      checks: [{ name: 'running', ok: false, detail: 'starting' }],
    });
    const status = await ask(`${url}/status`);
    expect(status).toMatchObject({ status: 503, retryAfter: '1' });
    expect(JSON.parse((status as { body: string }).body).error).toMatch(/starting; retry/);
    expect(daemon.lines.some((l) => l.msg === 'status server listening')).toBe(false);

    await load();
    const listening = await daemon.waitForLine((l) => l.msg === 'status server listening', 60_000);
    expect(listening.port).toBe(port);
    await until('the first reconcile to ask for the listing', () => proxy.held().length === 1, 60_000, 20);
    // The first reconcile is under way and cannot end: alive, not ready.
    expect(await ask(`${url}/healthz`)).toMatchObject({ status: 200 });
    const notReady = await ask(`${url}/readyz`);
    expect(notReady).toMatchObject({ status: 503 });
    expect(JSON.parse((notReady as { body: string }).body).ready).toBe(false);
    expect(daemon.lines.some((l) => l.msg === 'reconciled')).toBe(false);

    proxy.release();
    await daemon.waitForLine((l) => l.msg === 'reconciled' && l.trigger === 'startup', 60_000);
    await until(
      '/readyz 200',
      async () => {
        const answer = await ask(`${url}/readyz`);
        return 'status' in answer && answer.status === 200;
      },
      30_000,
      50,
    );
    polling = false;
    await poller;
    expect(later.length).toBeGreaterThan(0);
    expect(later.filter((answer) => !('status' in answer) || answer.status !== 200)).toEqual([]);
  }, 120_000);

  it('a SIGTERM while the daemon loads is held: the daemon stops as soon as it is up, and exits 0', async (t) => {
    const { daemon, proxy, url, load } = await heldDaemon(t, 'startup-signal');
    daemon.child.kill('SIGTERM');
    // Held, not fatal: the process still answers after it, while its daemon's import waits.
    expect(await ask(`${url}/healthz`)).toMatchObject({ status: 200 });
    proxy.release();
    await load();
    await daemon.waitForLine(
      (l) => l.msg === 'shutting down: no new reconciles or jobs' && l.reason === 'SIGTERM',
      60_000,
    );
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(daemon.stderr()).toBe('');
  }, 120_000);
});
