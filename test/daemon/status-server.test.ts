// The status server over real loopback HTTP: routes, readiness codes, timeouts, errors without detail.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  startStatusServer,
  type ReadinessCheck,
  type StatusHandlers,
  type StatusServer,
} from '../../src/daemon/server/status-server.js';

let server: StatusServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function handlers(overrides: Partial<StatusHandlers> = {}): StatusHandlers {
  return {
    readiness: async () => [{ name: 'redis', ok: true }],
    status: () => ({ lastReconcile: { ok: true } }),
    metrics: async () => '# HELP x y\n# TYPE x counter\nx 1\n',
    ...overrides,
  };
}

describe('startStatusServer', () => {
  it('serves /healthz, /metrics and /status on a free port', async () => {
    server = await startStatusServer({ host: '127.0.0.1', port: 0, handlers: handlers() });
    expect(server.port).toBeGreaterThan(0);
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('ok\n');
    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect(await metrics.text()).toContain('x 1');
    const status = await fetch(`${server.url}/status`);
    expect(await status.json()).toEqual({ lastReconcile: { ok: true } });
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    expect((await fetch(`${server.url}/status`, { method: 'POST' })).status).toBe(405);
    const head = await fetch(`${server.url}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });

  it('answers /readyz 200 when every check passes and 503 with the reasons otherwise', async () => {
    let checks: ReadinessCheck[] = [
      { name: 'redis', ok: true },
      { name: 'service', ok: true },
    ];
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: handlers({ readiness: async () => checks }),
    });
    const ok = await fetch(`${server.url}/readyz`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ ready: true });
    checks = [
      { name: 'redis', ok: true },
      { name: 'service', ok: false, detail: 'last list failed: 503' },
    ];
    const bad = await fetch(`${server.url}/readyz`);
    expect(bad.status).toBe(503);
    expect(await bad.json()).toEqual({ ready: false, checks });
  });

  it('fails /readyz when a check hangs, instead of hanging the probe', async () => {
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: handlers({ readiness: () => new Promise(() => undefined) }),
    });
    const res = await fetch(`${server.url}/readyz`);
    expect(res.status).toBe(503);
    expect(JSON.stringify(await res.json())).toContain('did not answer');
  });

  it('answers 500 without the error text when a handler throws', async () => {
    const seen: unknown[] = [];
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: handlers({
        metrics: async () => {
          throw new Error('internal detail');
        },
      }),
      onError: (e) => seen.push(e),
    });
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain('internal detail');
    expect(seen).toHaveLength(1);
  });

  it('reports a port in use as one clear error', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      await expect(startStatusServer({ host: '127.0.0.1', port, handlers: handlers() })).rejects.toThrow(
        /port is in use.*--http-port/,
      );
    } finally {
      blocker.close();
    }
  });
});

describe('POST /reconcile', () => {
  const TOKEN = 'a-webhook-token-of-some-length';

  it('is off (404, saying how to turn it on) without a token', async () => {
    const seen: unknown[] = [];
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: handlers({ reconcile: async (r) => (seen.push(r), { status: 200, body: {} }) }),
    });
    const res = await fetch(`${server.url}/reconcile`, {
      method: 'POST',
      headers: { authorization: 'Bearer x' },
      body: '{}',
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: string }).error).toContain('CONVERGE_WEBHOOK_TOKEN');
    expect(seen).toEqual([]);
  });

  it('needs the bearer token, a POST and a known body; hands the checked request on', async () => {
    const seen: unknown[] = [];
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      webhookToken: TOKEN,
      handlers: handlers({ reconcile: async (r) => (seen.push(r), { status: 200, body: { ok: 1 } }) }),
    });
    const post = (body: string, authorization?: string) =>
      fetch(`${server!.url}/reconcile`, { method: 'POST', headers: authorization ? { authorization } : {}, body });
    expect((await post('{}')).status).toBe(401);
    expect((await post('{}', `Bearer ${TOKEN}x`)).status).toBe(401);
    expect((await post('{}', `Basic ${TOKEN}`)).status).toBe(401);
    expect((await fetch(`${server.url}/reconcile`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(
      405,
    );
    expect((await post('not json', `Bearer ${TOKEN}`)).status).toBe(400);
    expect((await post('{"retryFailed": [1]}', `Bearer ${TOKEN}`)).status).toBe(400);
    expect((await post('{"nope": true}', `Bearer ${TOKEN}`)).status).toBe(400);
    expect((await post('{"writeSecrets": []}', `Bearer ${TOKEN}`)).status).toBe(400);
    expect((await post('x'.repeat(70_000), `Bearer ${TOKEN}`)).status).toBe(413);
    expect(seen).toEqual([]);
    const ok = await post('{}', `Bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ ok: 1 });
    await post('{"writeSecrets": true}', `bearer ${TOKEN}`);
    await post('{"writeSecrets": ["web", "Deployment/api", "web"]}', `Bearer ${TOKEN}`);
    await post('{"retryFailed": ["web", "web"], "writeSecrets": false}', `Bearer ${TOKEN}`);
    expect(seen).toEqual([
      {},
      { writeSecrets: true },
      { writeSecrets: ['web', 'Deployment/api'] },
      { retryFailed: ['web'] },
    ]);
  });
});

describe('POST /webhook (a git host push event)', () => {
  const TOKEN = 'a-webhook-secret-of-some-length';
  const BODY = JSON.stringify({ ref: 'refs/heads/main', after: '3f2a9c1' });
  const signed = (body: string, secret: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

  it('is off (404) without a token', async () => {
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: handlers({ reconcile: async () => ({ status: 200, body: {} }) }),
    });
    const res = await fetch(`${server.url}/webhook`, {
      method: 'POST',
      headers: { 'x-gitlab-token': TOKEN },
      body: BODY,
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: string }).error).toContain('CONVERGE_WEBHOOK_TOKEN');
  });

  it('reconciles now on a GitHub/Gitea signature or a GitLab token that match; refuses anything else', async () => {
    const seen: unknown[] = [];
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      webhookToken: TOKEN,
      handlers: handlers({ reconcile: async (r) => (seen.push(r), { status: 202, body: { reconcile: 'queued' } }) }),
    });
    const post = (headers: Record<string, string>, body = BODY) =>
      fetch(`${server!.url}/webhook`, { method: 'POST', headers, body });
    expect((await post({})).status).toBe(401);
    expect((await post({ 'x-hub-signature-256': signed(BODY, `${TOKEN}x`) })).status).toBe(401);
    expect((await post({ 'x-hub-signature-256': signed(BODY, TOKEN) }, `${BODY} `)).status).toBe(401);
    expect((await post({ 'x-gitlab-token': `${TOKEN}x` })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${TOKEN}` })).status).toBe(401);
    expect((await fetch(`${server.url}/webhook`, { headers: { 'x-gitlab-token': TOKEN } })).status).toBe(405);
    expect(seen).toEqual([]);
    const github = await post({ 'x-hub-signature-256': signed(BODY, TOKEN) });
    expect(github.status).toBe(202);
    expect((await post({ 'x-gitlab-token': TOKEN })).status).toBe(202);
    expect(seen).toEqual([{}, {}]);
  });
});

describe('GET /applied-state', () => {
  const STATE = 'state-token-read-only-7c1';
  const HOOK = 'webhook-token-writes-9d2';
  const document = { format: 'converge-applied-state', format_version: 1, records: {}, holds: {} };

  it('is not enabled (404, one line) without a state token, even with the webhook token set', async () => {
    let reads = 0;
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      webhookToken: HOOK,
      handlers: handlers({ appliedState: async () => (reads++, document) }),
    });
    const answer = await fetch(`${server.url}/applied-state`, { headers: { authorization: `Bearer ${HOOK}` } });
    expect(answer.status).toBe(404);
    const { error } = (await answer.json()) as { error: string };
    expect(error).toMatch(/^GET \/applied-state is not enabled; set CONVERGE_STATE_TOKEN/);
    expect(error).not.toContain('\n');
    expect(reads).toBe(0);
  });

  it('answers 401 without the token, with a wrong one and with the webhook token; 200 and the document with it; never writes', async () => {
    let reads = 0;
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      webhookToken: HOOK,
      stateToken: STATE,
      handlers: handlers({
        appliedState: async () => (reads++, document),
        reconcile: async () => ({ status: 202, body: {} }),
      }),
    });
    for (const authorization of [undefined, 'Bearer wrong', `Bearer ${HOOK}`, STATE]) {
      const answer = await fetch(`${server.url}/applied-state`, {
        headers: authorization === undefined ? {} : { authorization },
      });
      expect(answer.status, String(authorization)).toBe(401);
      const { error } = (await answer.json()) as { error: string };
      expect(error).toBe(
        'missing or wrong token; send the daemon\'s CONVERGE_STATE_TOKEN as "Authorization: Bearer TOKEN"',
      );
    }
    expect(reads).toBe(0);
    const ok = await fetch(`${server.url}/applied-state`, { headers: { authorization: `Bearer ${STATE}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    expect(await ok.json()).toEqual(document);
    expect(
      (await fetch(`${server.url}/applied-state`, { method: 'POST', headers: { authorization: `Bearer ${STATE}` } }))
        .status,
    ).toBe(405);
    // The state token is read-only: it does not open POST /reconcile.
    expect(
      (
        await fetch(`${server.url}/reconcile`, {
          method: 'POST',
          headers: { authorization: `Bearer ${STATE}` },
          body: '{}',
        })
      ).status,
    ).toBe(401);
    expect(reads).toBe(1);
  });

  it('GET /history: a malformed percent-encoding is a 400 that says how to ask, not a 500; an unknown kind a 404', async () => {
    const asked: string[] = [];
    const errors: unknown[] = [];
    const history = async (key: string) => (asked.push(key), []);
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: handlers({ history }),
      onError: (error) => errors.push(error),
    });
    for (const path of ['/history/Deployment/%E0%A4%A', '/history/%ZZ/web', '/history/Deployment/web%']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(
        /is not valid percent-encoding .*\/history\/KIND\/NAME/,
      );
    }
    expect((await fetch(`${server.url}/history/Nope/web`)).status).toBe(404);
    const ok = await fetch(`${server.url}/history/Deployment/caf%C3%A9`);
    expect(ok.status).toBe(200);
    expect(asked).toEqual(['Deployment/café']);
    expect(errors).toEqual([]);
  });
});
