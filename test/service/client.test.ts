// ServiceClient against real HTTP servers on loopback: paging, retries, timeouts, errors, limits, headers, secrecy.
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ServiceClient, type ClientOptions, type RequestInfo } from '../../src/service/client.js';
import { BadResponseError, classifyFailure, NetworkError, ServiceError } from '../../src/service/errors.js';
import { sendingOnce } from '../../src/service/call-scope.js';
import { ConvergeError } from '../../src/core/errors.js';
import { deployment, json, provider, startServer, type Handler, type ScriptedServer } from './scripted-server.js';

const API_KEY = 'ck-test-7f3a9c1e5b2d4f60';
const TENANT = '44444444-4444-4444-8444-444444444444';

// Servers and clients are closed when the file ends, not after each test: the retry and timeout tests run
// concurrently (they mostly wait out timeouts), and an afterEach would close another test's server mid-way.
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function serve(handler: Handler): Promise<ScriptedServer> {
  const server = await startServer(handler);
  cleanups.push(() => server.close());
  return server;
}

function clientFor(
  server: { url: string },
  options: Partial<ClientOptions> = {},
): { client: ServiceClient; infos: RequestInfo[] } {
  const infos: RequestInfo[] = [];
  const client = new ServiceClient({
    baseUrl: server.url,
    apiKey: API_KEY,
    retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    onRequest: (info) => infos.push(info),
    ...options,
  });
  cleanups.push(() => client.close());
  return { client, infos };
}

/** A paging service over `count` deployments that returns at most `cap` per page. */
function pagingHandler(count: number, cap = 100): Handler {
  const all = Array.from({ length: count }, (_, i) => deployment(`d-${String(i).padStart(4, '0')}`));
  return (request, response) => {
    const offset = Number(request.url.searchParams.get('offset') ?? 0);
    const limit = Number(request.url.searchParams.get('limit') ?? 20);
    const page = all.slice(offset, offset + Math.min(limit, cap));
    json(response, 200, { resources: page, offset: offset + page.length });
  };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

function offsets(server: ScriptedServer): number[] {
  return server.received.map((r) => Number(r.url.searchParams.get('offset')));
}

describe('listing deployments page by page', () => {
  it('reads 250 deployments as 3 pages of limit=100 and stops at the empty 4th page', async () => {
    const server = await serve(pagingHandler(250));
    const { client } = clientFor(server);
    const sizes: number[] = [];
    for await (const page of client.listDeploymentPages()) sizes.push(page.length);
    expect(sizes).toEqual([100, 100, 50]);
    expect(offsets(server)).toEqual([0, 100, 200, 250]);
    expect(
      server.received.every((r) => r.url.searchParams.get('limit') === '100' && r.url.pathname === '/v2/deployments'),
    ).toBe(true);
  });

  it('reuses kept-alive connections across pages', async () => {
    const server = await serve(pagingHandler(250));
    const { client } = clientFor(server);
    await client.listDeployments();
    await client.listDeployments();
    expect(server.received).toHaveLength(8);
    // undici may open a second socket while the first is being released; without keep-alive there would be 8.
    expect(new Set(server.received.map((r) => r.remotePort)).size).toBeLessThanOrEqual(2);
  });

  it('keeps going after short pages: a server capping pages at 37 still yields every deployment once, in order', async () => {
    const server = await serve(pagingHandler(250, 37));
    const { client } = clientFor(server);
    const names = (await client.listDeployments()).map((d) => d.name);
    expect(names).toHaveLength(250);
    expect(names[0]).toBe('d-0000');
    expect(names[249]).toBe('d-0249');
    expect(new Set(names).size).toBe(250);
    expect(offsets(server)).toEqual([0, 37, 74, 111, 148, 185, 222, 250]);
  });

  it('sends the offset the service returned, not one it computed', async () => {
    const script = [
      { resources: [deployment('a'), deployment('b')], offset: 7 },
      { resources: [deployment('c')], offset: 19 },
      { resources: [], offset: 19 },
    ];
    const server = await serve((request, response) => json(response, 200, script[request.index]));
    const { client } = clientFor(server);
    expect((await client.listDeployments()).map((d) => d.name)).toEqual(['a', 'b', 'c']);
    expect(offsets(server)).toEqual([0, 7, 19]);
  });

  it('an empty service is one request and no pages', async () => {
    const server = await serve(pagingHandler(0));
    const { client } = clientFor(server);
    const pages: unknown[] = [];
    for await (const page of client.listDeploymentPages()) pages.push(page);
    expect(pages).toEqual([]);
    expect(server.received).toHaveLength(1);
  });

  it('fails with E_PAGING, after one request, when a full page returns the offset it was asked for', async () => {
    const server = await serve((_request, response) =>
      json(response, 200, { resources: [deployment('a')], offset: 0 }),
    );
    const { client } = clientFor(server);
    const error = await failure(client.listDeployments());
    expect(error).toBeInstanceOf(ConvergeError);
    expect((error as ConvergeError).code).toBe('E_PAGING');
    expect((error as Error).message).toContain('offset 0');
    expect(server.received).toHaveLength(1);
  });

  it('fails with E_PAGING when the returned offset goes backwards', async () => {
    const script = [
      { resources: [deployment('a')], offset: 50 },
      { resources: [deployment('b')], offset: 10 },
    ];
    const server = await serve((request, response) =>
      json(response, 200, script[request.index] ?? { resources: [], offset: 0 }),
    );
    const { client } = clientFor(server);
    const error = await failure(client.listDeployments());
    expect((error as ConvergeError).code).toBe('E_PAGING');
    expect(offsets(server)).toEqual([0, 50]);
  });

  it('sends every filter of the spec, lists comma-separated', async () => {
    const server = await serve(pagingHandler(0));
    const { client } = clientFor(server);
    await client.listDeployments({
      name_contains: 'agent',
      status: 'READY',
      remote_reconciled: false,
      tag_value_ids: ['t1', 't2'],
      image_version: '1.2.3',
      deployment_type: 'prod',
      deployment_ids: ['id-1', 'id-2', 'id-3'],
    });
    const params = Object.fromEntries(server.received[0]!.url.searchParams);
    expect(params).toEqual({
      name_contains: 'agent',
      status: 'READY',
      remote_reconciled: 'false',
      tag_value_ids: 't1,t2',
      image_version: '1.2.3',
      deployment_type: 'prod',
      deployment_ids: 'id-1,id-2,id-3',
      limit: '100',
      offset: '0',
    });
  });

  it('an empty id filter matches nothing and sends no request', async () => {
    const server = await serve(pagingHandler(5));
    const { client } = clientFor(server);
    expect(await client.listDeployments({ deployment_ids: [] })).toEqual([]);
    expect(server.received).toHaveLength(0);
  });

  it('tolerates unknown status and source values and unknown fields', async () => {
    const server = await serve((request, response) =>
      json(response, 200, {
        resources:
          request.index === 0
            ? [deployment('a', { status: 'HIBERNATING', source: 'future_source', shiny_new_field: { x: 1 } })]
            : [],
        offset: 1,
        total: 99,
      }),
    );
    const { client } = clientFor(server);
    const [only] = await client.listDeployments();
    expect(only!.status).toBe('HIBERNATING');
    expect(only!.source).toBe('future_source');
  });
});

describe.concurrent('retries of GET requests', () => {
  it('waits out Retry-After: 1 on a 429, then succeeds', async () => {
    const server = await serve((request, response) => {
      if (request.index === 0) return json(response, 429, { detail: 'slow down' }, { 'retry-after': '1' });
      json(response, 200, []);
    });
    const { client, infos } = clientFor(server, { retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    expect(await client.listIntegrations()).toEqual([]);
    expect(server.received).toHaveLength(2);
    expect(server.received[1]!.at - server.received[0]!.at).toBeGreaterThanOrEqual(995);
    expect(infos.map((i) => [i.status, i.attempt])).toEqual([
      [429, 1],
      [200, 2],
    ]);
  });

  it('retries a 503 and succeeds, reporting each attempt with its templated route', async () => {
    const server = await serve((request, response) => {
      if (request.index === 0) return json(response, 503, { detail: 'overloaded' });
      json(response, 200, []);
    });
    const { client, infos } = clientFor(server);
    expect(await client.listRepositories('55555555-5555-4555-8555-555555555555')).toEqual([]);
    expect(server.received.map((r) => r.url.pathname)).toEqual([
      '/v1/integrations/forge/codehost/55555555-5555-4555-8555-555555555555/repos',
      '/v1/integrations/forge/codehost/55555555-5555-4555-8555-555555555555/repos',
    ]);
    expect(infos.map((i) => ({ method: i.method, route: i.route, status: i.status, attempt: i.attempt }))).toEqual([
      { method: 'GET', route: '/v1/integrations/forge/codehost/{integration_id}/repos', status: 503, attempt: 1 },
      { method: 'GET', route: '/v1/integrations/forge/codehost/{integration_id}/repos', status: 200, attempt: 2 },
    ]);
    expect(infos.every((i) => i.durationMs >= 0)).toBe(true);
  });

  it('gives up after the configured attempts with a ServiceError carrying status and detail', async () => {
    const server = await serve((_request, response) => json(response, 502, { detail: 'bad gateway' }));
    const { client } = clientFor(server, { retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 2 } });
    const error = await failure(client.listIntegrations());
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe('E_SERVICE_502');
    expect((error as ServiceError).detail).toBe('bad gateway');
    expect(server.received).toHaveLength(4);
  });

  it('does not wait out a Retry-After longer than maxRetryAfterMs: it throws for the caller to schedule', async () => {
    const server = await serve((_request, response) =>
      json(response, 429, { detail: 'quota' }, { 'retry-after': '120' }),
    );
    const { client } = clientFor(server);
    const error = (await failure(client.listIntegrations())) as ServiceError;
    expect(error.status).toBe(429);
    expect(error.retryAfterMs).toBe(120_000);
    expect(classifyFailure(error)).toMatchObject({ kind: 'rate_limited', retryAfterMs: 120_000 });
    expect(server.received).toHaveLength(1);
  });

  it('close() ends a pending retry wait instead of hanging', async () => {
    const server = await serve((_request, response) =>
      json(response, 503, { detail: 'later' }, { 'retry-after': '30' }),
    );
    const { client } = clientFor(server);
    const pending = failure(client.listIntegrations());
    while (server.received.length === 0) await new Promise((r) => setTimeout(r, 5));
    await client.close();
    const error = (await pending) as ServiceError;
    expect(error.status).toBe(503);
    expect(server.received).toHaveLength(1);
  });

  it('inside sendingOnce (a job) a GET is sent once and a failure goes straight to the caller; the delete probe is retried like a read outside it', async () => {
    const server = await serve((request, response) => {
      if (request.method === 'DELETE' && request.index < 3) return json(response, 503, { detail: 'later' });
      if (request.method === 'DELETE')
        return json(response, 404, { detail: `Deployment ID ${request.url.pathname.split('/').pop()} not found.` });
      json(response, 503, { detail: 'later' });
    });
    const { client } = clientFor(server, { retry: { attempts: 5, baseDelayMs: 1, maxDelayMs: 2 } });
    const error = (await failure(sendingOnce(() => client.listIntegrations()))) as ServiceError;
    expect(error.status).toBe(503);
    expect(server.received).toHaveLength(1);
    expect(await client.deploymentDeletes()).toEqual({ deletes: true });
    expect(server.received.map((r) => r.method)).toEqual(['GET', 'DELETE', 'DELETE', 'DELETE']);
  });

  it('does not retry a 4xx', async () => {
    const server = await serve((_request, response) => json(response, 403, { detail: 'forbidden for this workspace' }));
    const { client } = clientFor(server);
    const error = (await failure(client.listIntegrations())) as ServiceError;
    expect(error.code).toBe('E_SERVICE_403');
    expect(error.message).toBe(
      'GET /v1/integrations/forge/codehost/install answered 403: forbidden for this workspace',
    );
    expect(server.received).toHaveLength(1);
  });
});

describe.concurrent('timeouts and network failures', () => {
  it('a GET whose headers never come times out, is retried, and succeeds once the server answers', async () => {
    const server = await serve((request, response) => {
      if (request.index < 2) return; // stall: never answer
      json(response, 200, []);
    });
    const { client, infos } = clientFor(server, { headersTimeoutMs: 200 });
    expect(await client.listIntegrations()).toEqual([]);
    expect(server.received).toHaveLength(3);
    expect(infos.map((i) => i.status)).toEqual(['network', 'network', 200]);
  });

  it('a GET that always stalls ends in a NetworkError (headers_timeout) after every attempt', async () => {
    const server = await serve(() => undefined);
    const { client } = clientFor(server, {
      headersTimeoutMs: 150,
      retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    const error = await failure(client.listIntegrations());
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).code).toBe('E_NETWORK');
    expect((error as NetworkError).reason).toBe('headers_timeout');
    expect((error as Error).message).toBe(
      `GET /v1/integrations/forge/codehost/install to ${new URL(server.url).host}: no response headers before the headers timeout (150 ms)`,
    );
    expect(server.received).toHaveLength(2);
  });

  it('a POST that stalls is sent once', async () => {
    const server = await serve(() => undefined);
    const { client } = clientFor(server, { headersTimeoutMs: 150 });
    const error = await failure(
      client.createDeployment({
        name: 'a',
        source: 'codehost',
        source_config: {},
        source_revision_config: {},
        secrets: [],
      }),
    );
    expect((error as NetworkError).reason).toBe('headers_timeout');
    expect(classifyFailure(error).kind).toBe('retry');
    expect(server.received).toHaveLength(1);
  });

  it('a body that stalls mid-way is a body_timeout NetworkError; GETs retry it', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('[{"id":"x",');
    });
    const { client } = clientFor(server, { bodyTimeoutMs: 150, retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 } });
    const error = await failure(client.listIntegrations());
    expect((error as NetworkError).reason).toBe('body_timeout');
    expect(server.received).toHaveLength(2);
  });

  it('a PATCH whose body stalls is sent once', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"id":');
    });
    const { client } = clientFor(server, { bodyTimeoutMs: 150 });
    const error = await failure(client.patchDeployment('id-1', { source_config: { build_on_push: true } }));
    expect((error as NetworkError).reason).toBe('body_timeout');
    expect(server.received).toHaveLength(1);
  });

  it('a refused connection is a NetworkError (refused), retried, and reported as status "network"', async () => {
    const server = await startServer(() => undefined);
    await server.close();
    const { client, infos } = clientFor(server);
    const error = await failure(client.listIntegrations());
    expect((error as NetworkError).reason).toBe('refused');
    expect(infos.map((i) => [i.status, i.attempt])).toEqual([
      ['network', 1],
      ['network', 2],
      ['network', 3],
    ]);
  });

  it('a connection the server drops before answering is a retried NetworkError', async () => {
    const server = await serve((request, response) => {
      if (request.index === 0) return void response.socket?.destroy();
      json(response, 200, []);
    });
    const { client, infos } = clientFor(server);
    expect(await client.listIntegrations()).toEqual([]);
    expect(infos.map((i) => i.status)).toEqual(['network', 200]);
  });
});

describe('service errors', () => {
  it('carries the detail text of a 404, the method and the templated route; a write is not retried', async () => {
    const server = await serve((_request, response) => json(response, 404, { detail: 'Deployment not found' }));
    const { client } = clientFor(server);
    const error = (await failure(
      client.patchDeployment('abc', { source_config: { build_on_push: false } }),
    )) as ServiceError;
    expect(error).toBeInstanceOf(ServiceError);
    expect({
      code: error.code,
      status: error.status,
      detail: error.detail,
      method: error.method,
      route: error.route,
    }).toEqual({
      code: 'E_SERVICE_404',
      status: 404,
      detail: 'Deployment not found',
      method: 'PATCH',
      route: '/v2/deployments/{deployment_id}',
    });
    expect(server.received[0]!.url.pathname).toBe('/v2/deployments/abc');
    expect(server.received).toHaveLength(1);
  });

  it('joins a 422 list detail into readable "loc: msg" text', async () => {
    const server = await serve((_request, response) =>
      json(response, 422, {
        detail: [
          {
            loc: ['body', 'name'],
            msg: 'String should match pattern',
            type: 'string_pattern_mismatch',
            input: 'Bad Name',
          },
          { loc: ['body', 'secrets', 0, 'value'], msg: 'Field required', type: 'missing' },
        ],
      }),
    );
    const { client } = clientFor(server);
    const error = (await failure(
      client.createDeployment({
        name: 'Bad Name',
        source: 'codehost',
        source_config: {},
        source_revision_config: {},
        secrets: [],
      }),
    )) as ServiceError;
    expect(error.code).toBe('E_SERVICE_422');
    expect(error.detail).toBe('body.name: String should match pattern; body.secrets.0.value: Field required');
    expect(classifyFailure(error).kind).toBe('fatal');
  });

  it('a 409 is a fatal ServiceError for the create worker to handle', async () => {
    const server = await serve((_request, response) =>
      json(response, 409, { detail: 'Deployment name already exists' }),
    );
    const { client } = clientFor(server);
    const error = (await failure(
      client.createProvider({ provider_id: 'p', name: 'P', client_id: 'c', auth_url: 'a', token_url: 't' }),
    )) as ServiceError;
    expect(error.status).toBe(409);
    expect(classifyFailure(error)).toEqual({
      kind: 'fatal',
      message: 'POST /v2/auth/providers answered 409: Deployment name already exists',
    });
  });

  it('an error body that is not JSON gives the status text', async () => {
    const server = await serve((_request, response) =>
      response.writeHead(401, { 'content-type': 'text/html' }).end('<html>nope</html>'),
    );
    const { client } = clientFor(server);
    const error = (await failure(client.listIntegrations())) as ServiceError;
    expect(error.detail).toBe('Unauthorized');
  });
});

describe('bad and oversized responses', () => {
  it('invalid JSON is E_BAD_RESPONSE naming the endpoint, never quoting the body', async () => {
    const server = await serve((_request, response) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end('hello PRIVATE-BODY-TEXT'),
    );
    const { client } = clientFor(server);
    const error = (await failure(client.listIntegrations())) as BadResponseError;
    expect(error).toBeInstanceOf(BadResponseError);
    expect(error.code).toBe('E_BAD_RESPONSE');
    expect(error.message).toContain('GET /v1/integrations/forge/codehost/install');
    expect(error.message).not.toContain('PRIVATE');
    expect(inspect(error, { depth: 10, showHidden: true })).not.toContain('PRIVATE');
    expect(error.truncated).toBe(false);
    expect(server.received).toHaveLength(1);
  });

  it('JSON cut off mid-way is a truncated E_BAD_RESPONSE that GETs retry', async () => {
    const server = await serve((request, response) => {
      if (request.index === 0)
        return response.writeHead(200, { 'content-type': 'application/json' }).end('[{"id": "a", "installa');
      json(response, 200, [{ id: 'a', installation_id: 1, name: 'acme' }]);
    });
    const { client } = clientFor(server);
    expect(await client.listIntegrations()).toEqual([{ id: 'a', installation_id: 1, name: 'acme' }]);
    expect(server.received).toHaveLength(2);
  });

  it('a wrong shape is E_BAD_RESPONSE with the zod path', async () => {
    const server = await serve((_request, response) =>
      json(response, 200, { resources: [deployment('a'), { ...deployment('b'), id: 42 }], offset: 2 }),
    );
    const { client } = clientFor(server);
    const error = (await failure(client.listDeployments())) as BadResponseError;
    expect(error.code).toBe('E_BAD_RESPONSE');
    expect(error.message).toMatch(/^GET \/v2\/deployments: unexpected response shape: resources\.1\.id: /);
    expect(classifyFailure(error).kind).toBe('fatal');
    expect(server.received).toHaveLength(1);
  });

  it('an empty 200 body is E_BAD_RESPONSE', async () => {
    const server = await serve((_request, response) => response.writeHead(200).end());
    const { client } = clientFor(server);
    const error = (await failure(
      client.discoverProvider({ provider_id: 'p', name: 'P', mcp_server_url: 'https://x' }),
    )) as BadResponseError;
    expect(error.message).toBe('POST /v2/auth/providers/mcp-discover: the response body is empty; expected JSON');
  });

  it.each([
    ['with content-length', true],
    ['chunked', false],
  ])('a body over maxResponseBytes (%s) is E_RESPONSE_TOO_LARGE and not retried', async (_label, withLength) => {
    const big = JSON.stringify(
      Array.from({ length: 200 }, (_, i) => ({ id: `i-${i}`, installation_id: i, name: `account-${i}` })),
    );
    const server = await serve((_request, response) => {
      response.writeHead(200, {
        'content-type': 'application/json',
        ...(withLength ? { 'content-length': Buffer.byteLength(big) } : {}),
      });
      response.end(big);
    });
    const { client } = clientFor(server, { maxResponseBytes: 1024 });
    const error = (await failure(client.listIntegrations())) as ConvergeError;
    expect(error.code).toBe('E_RESPONSE_TOO_LARGE');
    expect(classifyFailure(error).kind).toBe('fatal');
    expect(server.received).toHaveLength(1);
  });
});

describe('headers and secrecy', () => {
  it('sends X-Api-Key, X-Tenant-Id, accept, user-agent, and content-type on bodies', async () => {
    const server = await serve((request, response) => {
      if (request.method === 'POST') return json(response, 200, provider('slack'));
      json(response, 200, []);
    });
    const { client } = clientFor(server, { tenantId: TENANT, userAgent: 'converge-test/1' });
    await client.listIntegrations();
    const created = await client.createProvider({
      provider_id: 'slack',
      name: 'Slack',
      client_id: 'c',
      auth_url: 'https://a',
      token_url: 'https://t',
      client_secret: 'shh',
    });
    expect(created.provider_id).toBe('slack');
    const [get, post] = server.received;
    expect(get!.headers['x-api-key']).toBe(API_KEY);
    expect(get!.headers['x-tenant-id']).toBe(TENANT);
    expect(get!.headers.accept).toBe('application/json');
    expect(get!.headers['user-agent']).toBe('converge-test/1');
    expect(get!.headers['content-type']).toBeUndefined();
    expect(post!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(post!.body)).toMatchObject({ provider_id: 'slack', client_secret: 'shh' });
  });

  it('sends no X-Tenant-Id and no X-Api-Key when they are not set', async () => {
    const server = await serve((_request, response) => json(response, 200, []));
    const { client } = clientFor(server, { apiKey: undefined });
    await client.listIntegrations();
    expect(server.received[0]!.headers['x-api-key']).toBeUndefined();
    expect(server.received[0]!.headers['x-tenant-id']).toBeUndefined();
  });

  it('keeps the API key and secret values out of every error and every metric', async () => {
    const secret = 'sk-live-SECRET-VALUE-123';
    const server = await serve((request, response) => {
      if (request.url.pathname === '/v1/integrations/forge/codehost/install') {
        return json(response, 401, { detail: `invalid api key ${String(request.headers['x-api-key'])}` });
      }
      if (request.method === 'POST') {
        return json(response, 422, {
          detail: [{ loc: ['body', 'secrets', 0], msg: `value ${secret} is too short`, type: 'x' }],
        });
      }
      if (request.url.pathname === '/v2/deployments')
        return json(response, 200, { resources: 'not a list', offset: 0 });
    });
    const { client, infos } = clientFor(server, { headersTimeoutMs: 150 });
    const errors = [
      await failure(client.listIntegrations()),
      await failure(
        client.createDeployment({
          name: 'a',
          source: 'codehost',
          source_config: {},
          source_revision_config: {},
          secrets: [{ name: 'OPENAI_API_KEY', value: secret }],
        }),
      ),
      await failure(client.listDeployments()),
      await failure(client.patchDeployment('stall', { secrets: [{ name: 'K', value: secret }] })),
    ];
    expect((errors[0] as ServiceError).detail).toBe('invalid api key [redacted]');
    expect((errors[1] as ServiceError).detail).toBe('body.secrets.0: value [redacted] is too short');
    expect((errors[2] as ConvergeError).code).toBe('E_BAD_RESPONSE');
    expect((errors[3] as ConvergeError).code).toBe('E_NETWORK');
    for (const error of errors) {
      const everything = `${(error as Error).message}\n${inspect(error, { depth: 20, showHidden: true })}\n${JSON.stringify(error)}`;
      expect(everything).not.toContain(API_KEY);
      expect(everything).not.toContain(secret);
      expect(classifyFailure(error).message).not.toContain(API_KEY);
    }
    expect(JSON.stringify(infos)).not.toContain(API_KEY);
  });

  it('masks a short secret value only where it stands as a value: "already exists" stays whole with the secret "x"', async () => {
    const server = await serve((request, response) => {
      if (request.method === 'POST') return json(response, 409, { detail: 'deployment a already exists' });
      return json(response, 422, {
        detail: [{ loc: ['body', 'secrets', 0], msg: 'value x is not allowed', type: 'x' }],
      });
    });
    const { client } = clientFor(server);
    const exists = await failure(
      client.createDeployment({
        name: 'a',
        source: 'codehost',
        source_config: {},
        source_revision_config: {},
        secrets: [{ name: 'K', value: 'x' }],
      }),
    );
    const invalid = await failure(client.patchDeployment('d-1', { secrets: [{ name: 'K', value: 'x' }] }));
    expect((exists as ServiceError).detail).toBe('deployment a already exists');
    expect((invalid as ServiceError).detail).toBe('body.secrets.0: value [redacted] is not allowed');
  });

  it('refuses an API key with a line break without echoing it', () => {
    const error = (() => {
      try {
        new ServiceClient({ baseUrl: 'http://127.0.0.1:1', apiKey: `${API_KEY}\n` });
      } catch (e) {
        return e as ConvergeError;
      }
      throw new Error('expected a UsageError');
    })();
    expect(error.code).toBe('E_USAGE');
    expect(error.message).not.toContain(API_KEY);
  });

  it('honours a path prefix in the base URL', async () => {
    const server = await serve((_request, response) => json(response, 200, []));
    const { client } = clientFor({ url: `${server.url}/api/` });
    await client.listIntegrations();
    expect(server.received[0]!.url.pathname).toBe('/api/v1/integrations/forge/codehost/install');
  });

  it('rejects a base URL that is not http(s)', () => {
    expect(() => new ServiceClient({ baseUrl: 'ftp://example.com' })).toThrow(/http or https/);
    expect(() => new ServiceClient({ baseUrl: 'not a url' })).toThrow(/not a URL/);
  });
});

describe('a record of every write', () => {
  it('collects each write sent within recordWrites with the request id the service answered with; reads are not writes', async () => {
    const listing = pagingHandler(2);
    const server = await serve((request, response) => {
      if (request.method === 'GET') return listing(request, response);
      json(response, 200, deployment('a'), { 'x-request-id': 'req-7f3a' });
    });
    const { client } = clientFor(server);
    const { recordWrites } = await import('../../src/service/call-scope.js');
    const { writes } = await recordWrites(async () => {
      await client.listDeployments();
      await client.patchDeployment('id-1', { source_config: { build_on_push: true } });
    });
    expect(writes).toEqual([
      { method: 'PATCH', route: '/v2/deployments/{deployment_id}', status: 200, requestId: 'req-7f3a' },
    ]);
    // Outside recordWrites nothing is collected, and nothing fails.
    await client.patchDeployment('id-1', { source_config: { build_on_push: true } });
  });
});
