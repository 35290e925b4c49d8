// Bounded under bursts (issue 32), against the built daemon and the emulator on loopback: 300 concurrent authorised
// reconcile requests (POST /reconcile and /webhook, some asking for secret writes) cost at most two reconciles, every
// request is answered with the reconcile it joined, and the secret writes asked for are merged, not lost; a write the
// service refuses for its size (413) is sent once and held until its manifest changes.
import { rm } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it, type TestContext } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  killAllConverge,
  REDIS_URL,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { atEnd, daemonOf, emulatorWithSecrets, prefixOf } from './scoped.js';

const HOOK = 'hook-token-burst-8c2f1a';
const ENV = { BURST_TOKEN: 'burst-secret-value-77d0', CONVERGE_WEBHOOK_TOKEN: HOOK };

afterAll(async () => {
  await killAllConverge();
});

function emulator(t: TestContext, names: readonly string[]): Promise<RunningEmulator> {
  return emulatorWithSecrets(t, names, ENV.BURST_TOKEN, 'masked');
}

/** Landed PATCHes of the deployment named `name`. */
function patchesOf(e: RunningEmulator, name: string): number {
  const id = e.store.allDeployments().find((d) => d.name === name)?.id;
  return e.requestLog.filter(
    (r) => r.method === 'PATCH' && r.status >= 200 && r.status < 300 && r.path.endsWith(`/${id}`),
  ).length;
}

/**
 * The whole listings the emulator served: each reconcile lists the deployments once (its first page is at offset 0,
 * with no filter). A read filtered by deployment_ids or name_contains is one deployment's (a job's sync, the rollout
 * poller's), not a reconcile's.
 */
function listings(e: RunningEmulator): number {
  return e.requestLog.filter(
    (r) =>
      r.method === 'GET' &&
      r.path === '/v2/deployments' &&
      (r.query.offset ?? '0') === '0' &&
      r.query.deployment_ids === undefined &&
      r.query.name_contains === undefined,
  ).length;
}

async function manualReconciles(daemon: DaemonHandle): Promise<number> {
  return ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> }).byTrigger.manual ?? 0;
}

interface Answer {
  status: number;
  body: {
    reconcile: { id: number; ok: boolean; requests: number } | null;
    writeSecrets?: { written: string[]; notWritten: string[] };
  };
}

async function post(daemon: DaemonHandle, path: '/reconcile' | '/webhook', body: unknown): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (path === '/reconcile') headers.authorization = `Bearer ${HOOK}`;
  else headers['x-gitlab-token'] = HOOK;
  const response = await fetch(`${daemon.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** A loopback proxy to the emulator that, while held, keeps every listing's first page waiting until released. */
async function listingGate(
  t: TestContext,
  target: string,
): Promise<{ url: string; hold: () => void; release: () => void; held: () => number }> {
  let holding = false;
  let waiting: Array<() => void> = [];
  const server = createServer((req, res) => {
    const forward = (): void => {
      const upstream = request(
        new URL(req.url ?? '/', target),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    const url = new URL(req.url ?? '/', 'http://gate');
    const listing =
      req.method === 'GET' && url.pathname === '/v2/deployments' && (url.searchParams.get('offset') ?? '0') === '0';
    if (holding && listing) waiting.push(forward);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  atEnd(
    t,
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      const held = waiting;
      waiting = [];
      for (const forward of held) forward();
    },
    held: () => waiting.length,
  };
}

describe('reconcile requests coalesced', () => {
  it(
    '300 concurrent authorised requests: at most two reconciles, every one answered, the secret writes merged',
    { timeout: 120_000 },
    async (t) => {
      const names = ['burst-0', 'burst-1', 'burst-2'];
      const e = await emulator(t, names);
      const dir = await tempDir('bursts');
      atEnd(t, () => rm(dir, { recursive: true, force: true }));
      await writeFiles(
        dir,
        Object.fromEntries(
          names.map((name) => [
            `${name}.yaml`,
            dockerDeploymentYaml(name, { maxScale: 2, secrets: [['TOKEN', 'BURST_TOKEN']] }),
          ]),
        ),
      );
      // A resync of an hour: no reconcile but the first and the requested ones runs during the test.
      // By order, not by speed: the daemon reaches the emulator through a gate that can hold its listings, so the burst's
      // first reconcile is still running when the last of the 300 requests has arrived (each is logged at debug).
      const gate = await listingGate(t, e.url);
      const daemon = await daemonOf(
        t,
        dir,
        [
          '--api-url',
          gate.url,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefixOf(t, 'bursts'),
          '--resync',
          '1h',
          '--log-level',
          'debug',
        ],
        ENV,
      );
      await until(
        'every resource held as SecretsUnknown',
        async () => {
          const rows = (await daemon.status()).resources;
          return (
            rows.length === 3 &&
            rows.every((r) => (r as unknown as { syncReason?: string }).syncReason === 'SecretsUnknown')
          );
        },
        30_000,
        100,
      );
      const listedBefore = listings(e);
      const manualBefore = await manualReconciles(daemon);

      // 300 at once: most plain, a few asking to write burst-0's or burst-1's secrets, some through /webhook.
      const asks = Array.from({ length: 300 }, (_, i) =>
        i === 7 ? { writeSecrets: ['burst-0'] } : i === 211 ? { writeSecrets: ['Deployment/burst-1'] } : {},
      );
      const requested = (): number => daemon.lines.filter((l) => l.msg === 'reconcile requested').length;
      gate.hold();
      const answering = Promise.all(
        asks.map((body, i) => post(daemon, i % 10 === 3 ? '/webhook' : '/reconcile', body)),
      );
      await until(
        'all 300 requests received while the first reconcile waits on its listing',
        () => requested() >= 300 && gate.held() >= 1,
        60_000,
        20,
      );
      gate.release();
      const answers = await answering;

      expect(answers.map((a) => a.status)).toEqual(asks.map(() => 200));
      const ids = new Set(answers.map((a) => a.body.reconcile!.id));
      expect(ids.size).toBeLessThanOrEqual(2);
      // Each answer says how many requests its reconcile answered; together they are the 300.
      const perReconcile = new Map(answers.map((a) => [a.body.reconcile!.id, a.body.reconcile!.requests]));
      expect([...perReconcile.values()].reduce((a, b) => a + b, 0)).toBe(300);
      expect((await manualReconciles(daemon)) - manualBefore).toBeLessThanOrEqual(2);
      // Should a third listing appear, the message says which reconciles ran and what the service was asked.
      const asked = e.requestLog
        .filter((r) => r.method === 'GET')
        .map((r) => `${r.path}?${new URLSearchParams(r.query).toString()}`);
      const ran = JSON.stringify((await daemon.status()).reconciles);
      expect(listings(e) - listedBefore, `reconciles: ${ran}; GETs: ${asked.join(' ')}`).toBeLessThanOrEqual(2);

      // Merged, not lost: both named resources were written, once each, and each asker was told of its own.
      expect(answers[7]!.body.writeSecrets).toMatchObject({ written: ['Deployment/burst-0'], notWritten: [] });
      expect(answers[211]!.body.writeSecrets).toMatchObject({ written: ['Deployment/burst-1'], notWritten: [] });
      expect(answers[0]!.body.writeSecrets).toBeUndefined();
      await until(
        'burst-0 and burst-1 written',
        () => patchesOf(e, 'burst-0') === 1 && patchesOf(e, 'burst-1') === 1,
        20_000,
        50,
      );
      expect(patchesOf(e, 'burst-2')).toBe(0);
      const coalesced = daemon.lines.filter(
        (l) => l.msg === 'reconcile requests coalesced: one reconcile answered them',
      );
      expect(coalesced.reduce((n, l) => n + Number(l.requests), 0)).toBeGreaterThanOrEqual(299);
    },
  );
});

describe('refusals that will not change', () => {
  it(
    'a write refused 413 is sent once, the resource held (WriteRefused) until its manifest changes, then written',
    { timeout: 120_000 },
    async (t) => {
      // The emulator's --max-body: bodies over 4 KiB answer 413; the big deployment's secret makes its create body larger.
      const e = await startEmulator({ buildMs: 0, maxBodyBytes: 4096 });
      atEnd(t, () => e.close());
      const dir = await tempDir('refused');
      atEnd(t, () => rm(dir, { recursive: true, force: true }));
      const big = dockerDeploymentYaml('too-big', { maxScale: 2, secrets: [['BLOB', 'BIG_VALUE']] });
      await writeFiles(dir, { 'too-big.yaml': big, 'fine.yaml': dockerDeploymentYaml('fine', { maxScale: 2 }) });
      const env = { BIG_VALUE: 'b'.repeat(6000), SMALL_VALUE: 's'.repeat(40) };
      const daemon = await daemonOf(
        t,
        dir,
        [
          '--api-url',
          e.url,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefixOf(t, 'refused'),
          '--resync',
          '1s',
          '--backoff',
          '50ms',
          '--log-level',
          'info',
        ],
        env,
      );
      const refusals = () =>
        e.requestLog.filter((r) => r.method === 'POST' && r.path === '/v2/deployments' && r.status === 413).length;
      const rowOf = async (name: string) =>
        (await daemon.status()).resources.find((r) => r.name === name) as unknown as
          | { state: string; sync: { reason: string }; drift: unknown; hold?: { reason: string; message: string } }
          | undefined;
      await until(
        'too-big held as WriteRefused',
        async () => (await rowOf('too-big'))?.sync.reason === 'WriteRefused',
        30_000,
        100,
      );
      const row = (await rowOf('too-big'))!;
      expect(row.state).toBe('out_of_sync');
      expect(row.hold).toMatchObject({ reason: 'WriteRefused' });
      expect(row.drift).toBeNull();
      // The service's own message is what the job failed with and what the hold says.
      expect(row.hold!.message).toContain('answered 413: Request body too large: at most 4096 bytes are accepted');
      expect(
        daemon.lines.some(
          (l) =>
            String(l.msg).startsWith('job failed: the service refused this write for good') &&
            String(l.error).includes('413'),
        ),
      ).toBe(true);
      expect(e.store.allDeployments().map((d) => d.name)).toEqual(['fine']);

      // Three more resyncs: the refused write is not sent again.
      const count = async (): Promise<number> =>
        ((await daemon.status()).reconciles as unknown as { byTrigger: Record<string, number> }).byTrigger.resync ?? 0;
      const target = (await count()) + 3;
      await until('3 more resync reconciles', async () => (await count()) >= target, 30_000, 100);
      expect(refusals()).toBe(1);
      expect(daemon.stdout()).not.toContain(env.BIG_VALUE.slice(0, 64));

      // A changed manifest (a smaller secret) is another desired state: written at once, the hold gone.
      await writeFiles(dir, {
        'too-big.yaml': dockerDeploymentYaml('too-big', { maxScale: 2, secrets: [['BLOB', 'SMALL_VALUE']] }),
      });
      await until('too-big created', () => e.store.allDeployments().some((d) => d.name === 'too-big'), 30_000, 100);
      await until('too-big synced', async () => (await rowOf('too-big'))?.state === 'synced', 30_000, 100);
      expect((await rowOf('too-big'))?.hold).toBeUndefined();
      expect(refusals()).toBe(1);
    },
  );
});
