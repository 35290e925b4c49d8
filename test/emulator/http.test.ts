// The HTTP layer through real loopback requests: body limits, content types, routing errors, auth, tenants, faults, request log.
import { afterEach, describe, expect, test } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/emulator/handler.js';
import { sha256Hex } from '../../src/emulator/records.js';
import type { EmulatorOptions, RequestLogEntry, RunningEmulator } from '../../src/emulator/server.js';
import { dockerBody, OTHER_TENANT, start, TENANT, templateBody, type Client } from './helpers.js';

let running: RunningEmulator | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function open(options: EmulatorOptions = {}): Promise<Client> {
  const { emulator, api } = await start(options);
  running = emulator;
  return api;
}

/** An RNG that replays the given numbers, then fails the test if asked for more. */
function scripted(values: number[]): () => number {
  const queue = [...values];
  return () => {
    const next = queue.shift();
    if (next === undefined) throw new Error('the RNG was asked for more numbers than scripted');
    return next;
  };
}

describe('request bodies', () => {
  test('a body over 1 MiB answers 413; one just under is read', async () => {
    const api = await open();
    const big = JSON.stringify(templateBody('big', { source_config: { custom_url: 'x'.repeat(MAX_BODY_BYTES) } }));
    const tooBig = await api.raw('POST', '/v2/deployments', big, { 'content-type': 'application/json' });
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.detail).toMatch(/too large: at most 1048576 bytes/);
    const fits = JSON.stringify(
      templateBody('fits', { source_config: { custom_url: 'x'.repeat(MAX_BODY_BYTES - 200) } }),
    );
    const ok = await api.raw('POST', '/v2/deployments', fits, { 'content-type': 'application/json' });
    expect(ok.status).toBe(201);
    // The emulator still answers afterwards.
    expect((await api.call('GET', '/v2/deployments')).status).toBe(200);
  });

  test('malformed JSON answers 400 naming the place, never echoing the body', async () => {
    const api = await open();
    const answer = await api.raw(
      'POST',
      '/v2/deployments',
      '{"name": "a",\n "secrets": [{"name": "K", "value": "hunter2-secret"}',
      { 'content-type': 'application/json' },
    );
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toMatch(/^Malformed JSON body: /);
    expect(answer.body.detail).not.toContain('hunter2');
    const garbage = await api.raw('PATCH', '/v2/deployments/00000000-0000-4000-8000-000000000001', 'not json at all', {
      'content-type': 'application/json',
    });
    expect(garbage.status).toBe(400);
    expect(garbage.body.detail).not.toContain('not json');
  });

  test('a body that is not JSON by content type answers 415', async () => {
    const api = await open();
    const text = await api.raw('POST', '/v2/deployments', JSON.stringify(dockerBody('a')), {
      'content-type': 'text/plain',
    });
    expect(text.status).toBe(415);
    expect(text.body.detail).toMatch(/Unsupported media type "text\/plain"/);
    const form = await api.raw('POST', '/v2/auth/providers', 'a=b', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status).toBe(415);
    const charset = await api.raw('POST', '/v2/deployments', JSON.stringify(dockerBody('b')), {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(charset.status).toBe(201);
  });
});

describe('routing', () => {
  test('spec-only: unknown routes answer 404, known paths with another method 405 with Allow', async () => {
    const api = await open({ specOnly: true });
    for (const path of ['/', '/v2/deployment', '/v2/deployments/x/y', '/v3/deployments', '/v2/auth/providers/x']) {
      const answer = await api.call('GET', path);
      expect(answer.status, path).toBe(404);
      expect(answer.body).toEqual({ detail: 'Not Found' });
    }
    const read = await api.call('GET', '/v2/deployments/00000000-0000-4000-8000-000000000001');
    expect(read.status).toBe(405);
    expect(read.headers.get('allow')).toBe('PATCH');
    const del = await api.call('DELETE', '/v2/deployments');
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('POST, GET');
    expect(running!.requestLog.map((e) => e.route)).toEqual([
      ...Array(5).fill('(unmatched)'),
      '/v2/deployments/{deployment_id}',
      '/v2/deployments',
    ]);
  });
});

describe('routing beyond the spec', () => {
  test('by default GET and DELETE of one deployment and the provider paths are routed; other methods 405 with Allow', async () => {
    const api = await open();
    const read = await api.call('GET', '/v2/deployments/00000000-0000-4000-8000-000000000001');
    expect(read.status).toBe(404);
    expect(read.body.detail).toBe('Deployment ID 00000000-0000-4000-8000-000000000001 not found.');
    const post = await api.call('POST', '/v2/deployments/00000000-0000-4000-8000-000000000001', {});
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('PATCH, GET, DELETE');
    const provider = await api.call('PUT', '/v2/auth/providers/x', {});
    expect(provider.status).toBe(405);
    expect(provider.headers.get('allow')).toBe('GET, PATCH, DELETE');
    expect((await api.call('GET', '/v2/auth/providers/x')).body.detail).toBe('OAuth provider x not found.');
  });
});

describe('auth and tenants', () => {
  test('with an API key: 401 without X-Api-Key, 403 with a wrong one, 200 with it', async () => {
    const api = await open({ apiKey: 'emulator-key-123' });
    const missing = await api.call('GET', '/v2/deployments');
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ detail: 'Missing API key' });
    const wrong = await api.call('GET', '/v2/deployments', undefined, { 'x-api-key': 'emulator-key-12' });
    expect(wrong.status).toBe(403);
    expect(wrong.body.detail).not.toContain('emulator-key');
    const right = await api.call('GET', '/v2/deployments', undefined, { 'x-api-key': 'emulator-key-123' });
    expect(right.status).toBe(200);
    const write = await api.call('POST', '/v2/deployments', dockerBody('a'));
    expect(write.status).toBe(401);
    expect(running!.store.allDeployments()).toHaveLength(0);
  });

  test('without an API key configured, no key is needed', async () => {
    const api = await open();
    expect((await api.call('GET', '/v1/integrations/forge/codehost/install')).status).toBe(200);
  });

  test('X-Tenant-Id must name a known tenant (403 otherwise) and scopes the request', async () => {
    const api = await open();
    await api.call('POST', '/v2/deployments', dockerBody('mine'), { 'x-tenant-id': OTHER_TENANT });
    for (const value of ['not-a-uuid', 'cccccccc-cccc-4ccc-8ccc-cccccccccccc']) {
      const answer = await api.call('GET', '/v2/deployments', undefined, { 'x-tenant-id': value });
      expect(answer.status).toBe(403);
      expect(answer.body.detail).toMatch(/not accessible/);
    }
    const other = await api.call('GET', '/v2/deployments', undefined, { 'x-tenant-id': OTHER_TENANT.toUpperCase() });
    expect(other.body.resources.map((d: { name: string }) => d.name)).toEqual(['mine']);
    const first = await api.call('GET', '/v2/deployments', undefined, { 'x-tenant-id': TENANT });
    expect(first.body.resources).toEqual([]);
  });
});

describe('fault knobs', () => {
  test('failRate answers 503 when the RNG draws below it, before anything is handled', async () => {
    const api = await open({ failRate: 0.5, random: scripted([0.1, 0.9, 0.49, 0.5]) });
    const statuses = [];
    for (const name of ['a', 'b', 'c', 'd'])
      statuses.push((await api.call('POST', '/v2/deployments', dockerBody(name))).status);
    expect(statuses).toEqual([503, 201, 503, 201]);
    expect(running!.store.allDeployments().map((d) => d.name)).toEqual(['b', 'd']);
    expect(running!.requestLog.map((e) => e.outcome)).toEqual(['fault-503', 'ok', 'fault-503', 'ok']);
  });

  test('failDeletesMs and failDeletes(ms): every DELETE is answered 503 until the outage ends, nothing deleted; other methods are served', async () => {
    let now = 1_700_000_000_000;
    const api = await open({ failDeletesMs: 10_000, clock: () => now });
    const id = (await api.call('POST', '/v2/deployments', dockerBody('outage'))).body.id as string;
    const refused = await api.call('DELETE', `/v2/deployments/${id}`);
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toMatch(/temporarily unavailable/);
    expect((await api.call('GET', `/v2/deployments/${id}`)).status).toBe(200);
    expect(
      (await api.call('PATCH', `/v2/deployments/${id}`, { source_config: { resource_spec: { max_scale: 3 } } })).status,
    ).toBe(200);
    now += 10_000;
    expect((await api.call('DELETE', `/v2/deployments/${id}`)).status).toBe(204);
    running!.failDeletes(5_000);
    expect((await api.call('DELETE', `/v2/deployments/${id}`)).status).toBe(503);
    running!.failDeletes(0);
    expect((await api.call('DELETE', `/v2/deployments/${id}`)).status).not.toBe(503);
    expect(running!.requestLog.filter((e) => e.method === 'DELETE').map((e) => e.outcome)).toEqual([
      'fault-503',
      'ok',
      'fault-503',
      expect.not.stringMatching(/^fault-/),
    ]);
    expect(() => running!.failDeletes(-1)).toThrow(/failDeletes: -1 must be a number of milliseconds >= 0/);
  });

  test('rateLimitRate answers 429 with Retry-After', async () => {
    const api = await open({ rateLimitRate: 0.3, retryAfterSeconds: 7, random: scripted([0.2, 0.3]) });
    const limited = await api.call('GET', '/v2/deployments');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(limited.body.detail).toMatch(/retry after 7 seconds/);
    expect((await api.call('GET', '/v2/deployments')).status).toBe(200);
    expect(running!.requestLog.map((e) => [e.status, e.outcome])).toEqual([
      [429, 'fault-429'],
      [200, 'ok'],
    ]);
  });

  test('resetRate drops the connection before handling', async () => {
    const api = await open({ resetRate: 0.5, random: scripted([0.1, 0.7]) });
    await expect(api.call('POST', '/v2/deployments', dockerBody('lost'))).rejects.toThrow();
    expect(running!.store.allDeployments()).toHaveLength(0);
    expect((await api.call('POST', '/v2/deployments', dockerBody('kept'))).status).toBe(201);
    expect(running!.requestLog.map((e) => [e.status, e.outcome])).toEqual([
      [0, 'fault-reset'],
      [201, 'ok'],
    ]);
  });

  test('lostResponseRate handles the request, then drops the answer', async () => {
    const api = await open({ lostResponseRate: 1, random: scripted([0.5]) });
    await expect(api.call('POST', '/v2/deployments', dockerBody('landed'))).rejects.toThrow();
    expect(running!.store.allDeployments().map((d) => d.name)).toEqual(['landed']);
    expect(running!.requestLog[0]).toMatchObject({ status: 201, outcome: 'fault-lost' });
  });

  test('knobs draw in a fixed order (reset, 503, 429), one number per knob that is set', async () => {
    const api = await open({
      resetRate: 0.1,
      failRate: 0.1,
      rateLimitRate: 0.1,
      // request 1: no reset, 503; request 2: none, none, 429; request 3: none of the three.
      random: scripted([0.5, 0.05, 0.5, 0.5, 0.05, 0.5, 0.5, 0.5]),
    });
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await api.call('GET', '/v2/deployments')).status);
    expect(statuses).toEqual([503, 429, 200]);
  });

  test('latency and jitter delay every request', async () => {
    const api = await open({ latencyMs: 60, jitterMs: 100, random: scripted([0.5]) });
    const began = Date.now();
    expect((await api.call('GET', '/v2/deployments')).status).toBe(200);
    expect(Date.now() - began).toBeGreaterThanOrEqual(105);
  });

  test('close() while a write waits out its latency drops it unhandled, and resolves once', async () => {
    const api = await open({ latencyMs: 300 });
    const pending = api.call('POST', '/v2/deployments', dockerBody('late'));
    await new Promise((r) => setTimeout(r, 50));
    const emulator = running!;
    running = undefined;
    const closing = emulator.close();
    expect(emulator.close()).toBe(closing);
    await closing;
    await expect(pending).rejects.toThrow();
    expect(emulator.store.allDeployments()).toHaveLength(0);
    expect(emulator.requestLog).toEqual([expect.objectContaining({ status: 0, outcome: 'error' })]);
  });

  test('rates outside 0..1 are refused at start', async () => {
    await expect(start({ failRate: 1.5 })).rejects.toThrow(/failRate: 1.5 is not a rate between 0 and 1/);
    await expect(start({ pageCap: 0 })).rejects.toThrow(/pageCap/);
  });
});

describe('request log', () => {
  test('records route templates, queries, statuses, ids and revisions, with secret values redacted', async () => {
    const seen: RequestLogEntry[] = [];
    const api = await open({ onRequest: (e) => seen.push(e), clock: () => 1_700_000_000_000 });
    const created = await api.call(
      'POST',
      '/v2/deployments',
      dockerBody('logged', { secrets: [{ name: 'TOKEN', value: 'tok-very-secret' }] }),
    );
    const id = created.body.id;
    await api.call('PATCH', `/v2/deployments/${id}`, { secrets: [{ name: 'TOKEN', value: 'tok-rotated' }] });
    await api.call('PATCH', `/v2/deployments/${id}`, { source_config: { custom_url: 'https://x' } });
    await api.call('GET', '/v2/deployments?limit=5&name_contains=log');
    const log = running!.requestLog;
    expect(log).toHaveLength(4);
    expect(seen).toEqual(log);
    expect(log[0]).toMatchObject({
      at: 1_700_000_000_000,
      method: 'POST',
      path: '/v2/deployments',
      route: '/v2/deployments',
      status: 201,
      deploymentId: id,
      newRevision: true,
      outcome: 'ok',
    });
    expect(log[0]!.body).toMatchObject({
      secrets: [{ name: 'TOKEN', value: `<redacted sha256:${sha256Hex('tok-very-secret').slice(0, 12)}>` }],
    });
    expect(log[1]).toMatchObject({
      method: 'PATCH',
      route: '/v2/deployments/{deployment_id}',
      path: `/v2/deployments/${id}`,
      deploymentId: id,
      newRevision: true,
    });
    expect(log[2]).toMatchObject({ newRevision: false });
    expect(log[3]).toMatchObject({ method: 'GET', query: { limit: '5', name_contains: 'log' }, status: 200 });
    expect(JSON.stringify(log)).not.toMatch(/tok-very-secret|tok-rotated/);
    const kept = running!.requestLog;
    running!.resetLog();
    expect(kept).toHaveLength(0);
    await api.call('GET', '/v2/deployments');
    expect(kept).toHaveLength(1);
  });

  test('requestLogLimit keeps the newest entries', async () => {
    const api = await open({ requestLogLimit: 10 });
    for (let i = 0; i < 30; i += 1) await api.call('GET', `/v2/deployments?offset=${i}`);
    const log = running!.requestLog;
    expect(log.length).toBeGreaterThanOrEqual(10);
    expect(log.length).toBeLessThanOrEqual(11);
    expect(log.at(-1)!.query.offset).toBe('29');
  });
});
