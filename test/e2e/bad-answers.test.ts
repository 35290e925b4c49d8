// Bad answers from the service, through `converge plan` and the daemon: invalid JSON, wrong shapes, huge bodies, a
// paging offset that does not advance, 401/403, and values from a newer service. One clear line each, bounded requests,
// no hang, no crash; unknown enum values are tolerated.
import { rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { deployment, json, startServer, type Received, type ScriptedServer } from '../service/scripted-server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  runConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';

const MODES = [
  'garbage',
  'truncated',
  'shape',
  'huge',
  'huge-declared',
  'stuck-offset',
  'repeating',
  'unauthorized',
  'forbidden',
  'newer',
] as const;
type Mode = (typeof MODES)[number];

const CAP = 32 * 1024 * 1024;
/** The live deployment the manifest `known` matches exactly. */
const KNOWN = {
  source: 'external_docker',
  source_config: { resource_spec: { max_scale: 2 } },
  source_revision_config: { image_uri: 'docker.io/acme/known:1' },
};

/** A deployment list as a newer service might answer it: unknown status and source, fields converge has never seen. */
function newerPage(created: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return [
    deployment('known', { ...KNOWN, status: 'MIGRATING', rollout: { phase: 'canary', weight: 10 } }),
    deployment('from-the-future', {
      source: 'serverless_function',
      status: 'HIBERNATING',
      source_config: { region: 'mars-1' },
      deployment_type: 'enterprise',
    }),
    ...created,
  ];
}

function streamHuge(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"resources":[');
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  let sent = 0;
  const pump = (): void => {
    while (sent <= CAP + chunk.length) {
      sent += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(']}');
  };
  res.on('close', () => res.removeAllListeners('drain'));
  pump();
}

function listAnswer(mode: Mode, req: Received, res: ServerResponse, created: Array<Record<string, unknown>>): unknown {
  const offset = Number(req.url.searchParams.get('offset') ?? 0);
  switch (mode) {
    case 'garbage':
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end('<html><body>502 Bad Gateway (but answered 200)</body></html>');
    case 'truncated':
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"resources":[{"id":"00000000-0000-4000-8000-0000000');
    case 'shape':
      return json(res, 200, { resources: [{ id: 5, name: ['known'] }], offset: 1 });
    case 'huge':
      return streamHuge(res);
    case 'huge-declared':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024) });
      return res.end();
    case 'stuck-offset':
      return json(res, 200, { resources: [deployment('known', KNOWN)], offset: 0 });
    case 'repeating':
      // the offset moves on, the page never does: the same deployment forever
      return json(res, 200, { resources: [deployment('known', KNOWN)], offset: offset + 1 });
    case 'unauthorized':
      return json(res, 401, { detail: 'Missing API key' });
    case 'forbidden':
      return json(res, 403, { detail: 'Invalid API key' });
    case 'newer': {
      const all = newerPage(created);
      const ids = req.url.searchParams.get('deployment_ids')?.split(',');
      const name = req.url.searchParams.get('name_contains');
      const matching = all.filter(
        (d) => (!ids || ids.includes(String(d.id))) && (!name || String(d.name).includes(name)),
      );
      const page = matching.slice(offset, offset + 100);
      return json(res, 200, { resources: page, offset: offset + page.length });
    }
  }
}

describe('bad answers from the service', () => {
  let server: ScriptedServer;
  let dir: string;
  let mode: Mode = 'newer';
  const created: Array<Record<string, unknown>> = [];
  const prefix = testPrefix('answers');

  beforeAll(async () => {
    server = await startServer((req, res) => {
      // a base URL of http://host/<mode> fixes the answers of that client (plan cases run side by side)
      const [, first, ...rest] = req.url.pathname.split('/');
      const fixed = MODES.includes(first as Mode) ? (first as Mode) : undefined;
      const path = fixed ? `/${rest.join('/')}` : req.url.pathname;
      if (req.method === 'GET' && path === '/v2/deployments') return listAnswer(fixed ?? mode, req, res, created);
      if (req.method === 'POST' && path === '/v2/deployments') {
        // the write lands, its answer is a shape converge does not know
        const body = JSON.parse(req.body) as Record<string, unknown>;
        created.push(deployment(String(body.name), { ...body, secrets: [] }));
        return json(res, 201, { ok: true, deployment: String(body.name) });
      }
      return json(res, 404, { detail: 'Not Found' });
    });
    dir = await tempDir('answers');
    await writeFiles(dir, { 'known.yaml': dockerDeploymentYaml('known', { maxScale: 2 }) });
  }, 120_000);

  afterAll(async () => {
    await killAllConverge();
    await server?.close();
    await dropPrefix(prefix);
    await dropPrefix(`${prefix}-fresh`);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const PLAN_CASES: Array<{ mode: Mode; message: RegExp; requests: [min: number, max: number] }> = [
    {
      mode: 'garbage',
      message: /GET \/v2\/deployments: the response is not valid JSON \(\d+ bytes, content-type text\/html\)$/,
      requests: [1, 1],
    },
    // cut off in transit: worth a few more tries, then given up
    {
      mode: 'truncated',
      message: /the response is not valid JSON \(\d+ bytes, content-type application\/json, cut off\)$/,
      requests: [5, 5],
    },
    {
      mode: 'shape',
      message: /GET \/v2\/deployments: unexpected response shape: resources\.0\.id: .*; resources\.0\.(name|tenant_id)/,
      requests: [1, 1],
    },
    { mode: 'huge', message: new RegExp(`the response is larger than the ${CAP}-byte limit`), requests: [1, 1] },
    {
      mode: 'huge-declared',
      message: new RegExp(`the response is larger than the ${CAP}-byte limit`),
      requests: [1, 1],
    },
    {
      mode: 'stuck-offset',
      message: /the page at offset 0 held 1 deployments but the service returned next offset 0; stopping/,
      requests: [1, 4],
    },
    {
      mode: 'repeating',
      message: /the page at offset 1 held only deployments already listed \(next offset 2\); stopping/,
      requests: [2, 6],
    },
    {
      mode: 'unauthorized',
      message:
        /GET \/v2\/deployments answered 401: Missing API key(; check the API key in CONVERGE_API_KEY .* CONVERGE_TENANT_ID \(--tenant-id\))?$/,
      requests: [1, 1],
    },
    {
      mode: 'forbidden',
      message:
        /GET \/v2\/deployments answered 403: Invalid API key(; check the API key in CONVERGE_API_KEY .* CONVERGE_TENANT_ID \(--tenant-id\))?$/,
      requests: [1, 1],
    },
  ];

  // the plan cases run side by side, each against its own base URL
  describe.concurrent('converge plan', () => {
    for (const c of PLAN_CASES) {
      it(`${c.mode}: one line, exit 1, ${c.requests[0]}..${c.requests[1]} requests, no hang`, async ({ expect }) => {
        const r = await runConverge(
          [
            'plan',
            dir,
            '--api-url',
            `${server.url}/${c.mode}`,
            '--redis-url',
            REDIS_URL,
            '--redis-prefix',
            prefix,
            '--request-timeout',
            '5s',
          ],
          {},
          20_000,
        );
        expect(r.signal, 'plan was killed: it hung').toBeNull();
        expect(r.code).toBe(1);
        // Retries of the read are shown as they happen; the failure itself is one line.
        const lines = r.stderr
          .trim()
          .split('\n')
          .filter((line) => !/, retrying \(\d+\/\d+\) in /.test(line));
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^converge plan: /);
        expect(lines[0]).toMatch(c.message);
        expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
        const requests = server.received.filter((x) => x.url.pathname.startsWith(`/${c.mode}/`)).length;
        expect(requests).toBeGreaterThanOrEqual(c.requests[0]);
        expect(requests).toBeLessThanOrEqual(c.requests[1]);
      }, 30_000);
    }

    it('values from a newer service (unknown status, source, fields): tolerated, exit 0', async ({ expect }) => {
      const r = await runConverge(
        [
          'plan',
          dir,
          '--api-url',
          `${server.url}/newer`,
          '--redis-url',
          REDIS_URL,
          '--redis-prefix',
          prefix,
          '--output',
          'json',
        ],
        {},
        20_000,
      );
      expect(r.code, r.stderr).toBe(0);
      const planned = JSON.parse(r.stdout) as { changes: Array<{ name: string; action: string }> };
      expect(planned.changes.map((c) => `${c.name}:${c.action}`).sort()).toEqual([
        'from-the-future:orphan',
        'known:noop',
      ]);
    }, 30_000);
  });

  it('the daemon: reports each bad answer, stays up, does not storm, and recovers', async () => {
    mode = 'newer';
    const daemon: DaemonHandle = await startDaemon(dir, [
      '--api-url',
      server.url,
      '--redis-prefix',
      prefix,
      '--resync',
      '1s',
      '--request-timeout',
      '5s',
      '--log-level',
      'info',
    ]);
    onTestFinished(() => daemon.kill());
    const ok = async () => {
      const s = await daemon.status();
      return s.lastReconcile?.ok && s.resources.find((x) => x.name === 'known')?.state === 'synced' ? s : undefined;
    };
    const first = await until('a first successful reconcile', ok, 15_000, 100);
    expect(first.resources.map((x) => x.name)).toEqual(['known']);
    expect((first as unknown as { orphans: string[] }).orphans).toEqual(['Deployment/from-the-future']);
    expect(server.received.filter((x) => x.method !== 'GET')).toEqual([]);

    for (const c of PLAN_CASES) {
      mode = c.mode;
      const from = server.received.length;
      const before = (await daemon.status()).reconciles!.total;
      // a reconcile begun before the switch may still end with the previous answer's error: wait for this one's
      const expected = new RegExp(c.message.source.replace(/^\^|\$$/g, ''), c.message.flags);
      const failed = await until(
        `a reconcile failing on ${c.mode}`,
        async () => {
          const s = await daemon.status();
          return s.reconciles!.total > before &&
            s.lastReconcile &&
            !s.lastReconcile.ok &&
            expected.test(s.lastReconcile.error ?? '')
            ? s
            : undefined;
        },
        15_000,
        100,
      );
      expect(failed.lastReconcile!.error).not.toContain('\n');
      expect(await daemon.healthz()).toBe(200);
      if (c.mode === 'unauthorized' || c.mode === 'forbidden') {
        expect((await daemon.readyz()).status).toBe(503);
        // stop and report: one request per reconcile, never retried within it
        const reconciles = (await daemon.status()).reconciles!.total - before;
        const lists = server.received.slice(from).filter((x) => x.method === 'GET').length;
        expect(lists).toBeLessThanOrEqual(reconciles + 1);
      }
    }

    mode = 'newer';
    await until(
      'recovery once the answers are good again',
      async () => (await ok()) && (await daemon.readyz()).status === 200,
      15_000,
      100,
    );
    expect(daemon.alive()).toBe(true);
    expect(daemon.stdout() + daemon.stderr()).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
    await daemon.kill('SIGTERM');
  }, 120_000);

  it('the daemon: a create whose answer has the wrong shape fails its job once, with the reason, and nothing is sent twice', async () => {
    mode = 'newer';
    await writeFiles(dir, { 'fresh.yaml': dockerDeploymentYaml('fresh', { maxScale: 1 }) });
    const daemon = await startDaemon(dir, [
      '--api-url',
      server.url,
      '--redis-prefix',
      `${prefix}-fresh`,
      '--resync',
      '1s',
      '--log-level',
      'info',
    ]);
    onTestFinished(() => daemon.kill());
    // the job fails at once (the next reconcile, a second later, then finds the deployment in sync)
    const failedLine = await daemon.waitForLine((l) => l.msg === 'job failed' && l.key === 'Deployment/fresh', 15_000);
    expect(String(failedLine.error)).toMatch(/^POST \/v2\/deployments: unexpected response shape: /);
    // the write had landed: the next reconciles see it, and nothing is posted again
    await until(
      'the created deployment to show as synced',
      async () => (await daemon.status()).resources.find((x) => x.name === 'fresh')?.state === 'synced',
      15_000,
      100,
    );
    const before = (await daemon.status()).reconciles!.total;
    await until(
      'two more reconciles',
      async () => (await daemon.status()).reconciles!.total >= before + 2,
      10_000,
      100,
    );
    expect(server.received.filter((x) => x.method === 'POST')).toHaveLength(1);
    expect(daemon.alive()).toBe(true);
    await daemon.kill('SIGTERM');
  }, 60_000);
});
