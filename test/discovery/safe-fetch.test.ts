// The SSRF-safe fetch against real loopback servers: vetting, pinning, redirects, body cap and timeouts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyAddress } from '../../src/discovery/address.js';
import { DiscoveryFetchError } from '../../src/discovery/errors.js';
import { createSafeFetch, vetUrl, type Resolver, type SafeFetchOptions } from '../../src/discovery/safe-fetch.js';
import { listen, type Listening } from './mcp-oauth-fixture.js';

const open: Listening[] = [];

/** One request through the fetch discovery uses (createSafeFetch, as handed to the SDK). */
function safeFetch(url: string | URL, init: RequestInit = {}, options: SafeFetchOptions = {}): Promise<Response> {
  return createSafeFetch(options)(url, init);
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function serve(handler: Handler): Promise<Listening & { hits: string[] }> {
  const listening = await listen();
  const hits: string[] = [];
  listening.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    hits.push(`${req.method} ${req.url} host=${req.headers.host} auth=${req.headers.authorization ?? '-'}`);
    handler(req, res);
  });
  open.push(listening);
  return { ...listening, hits };
}

async function failure(promise: Promise<unknown>): Promise<DiscoveryFetchError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DiscoveryFetchError);
  return error as DiscoveryFetchError;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

describe('address classification', () => {
  it('sorts addresses into public, local and never-fetched', () => {
    expect(classifyAddress('93.184.216.34')).toBe('public');
    expect(classifyAddress('2606:4700::1111')).toBe('public');
    for (const local of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fd12::1',
      '::',
    ]) {
      expect(classifyAddress(local), local).toBe('local');
    }
    for (const never of ['169.254.169.254', '169.254.0.1', 'fe80::1', 'fd00:ec2::254', '100.100.100.200']) {
      expect(classifyAddress(never), never).toBe('link-local');
    }
  });

  it('sees IPv4 addresses hidden inside IPv6 ones', () => {
    expect(classifyAddress('::ffff:7f00:1')).toBe('local');
    expect(classifyAddress('2002:a00:1::1')).toBe('local');
    expect(classifyAddress('::ffff:169.254.169.254')).toBe('link-local');
    expect(classifyAddress('::ffff:a00:1')).toBe('local');
    expect(classifyAddress('64:ff9b::a9fe:a9fe')).toBe('link-local');
    expect(classifyAddress('2002:c0a8:101::1')).toBe('local');
    expect(classifyAddress('::ffff:5db8:d822')).toBe('public');
  });
});

describe('safeFetch', () => {
  it('fetches from loopback over http when allowLocal is set', async () => {
    const server = await serve((_req, res) => json(res, 200, { hello: 'world' }));
    const response = await safeFetch(`${server.origin}/x`, {}, { allowLocal: true });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ hello: 'world' });
    expect(response.url).toBe(`${server.origin}/x`);
  });

  it('refuses plain http without allowLocal, before any connection', async () => {
    const server = await serve((_req, res) => json(res, 200, {}));
    const error = await failure(safeFetch(`${server.origin}/x`));
    expect(error.code).toBe('E_DISCOVERY_BLOCKED_URL');
    expect(error.message).toContain('--allow-local-discovery');
    expect(server.hits).toEqual([]);
  });

  it('refuses loopback and private addresses over https without allowLocal', async () => {
    for (const url of [
      'https://127.0.0.1/mcp',
      'https://10.0.0.8/mcp',
      'https://192.168.0.10/',
      'https://[::1]/mcp',
      'https://[fd00::5]/',
    ]) {
      const error = await failure(safeFetch(url));
      expect(error.code, url).toBe('E_DISCOVERY_BLOCKED_ADDRESS');
    }
  });

  it('refuses a host name that resolves to a private address without allowLocal', async () => {
    const resolve: Resolver = async () => [{ address: '10.20.30.40', family: 4 }];
    const error = await failure(safeFetch('https://internal.example.com/mcp', {}, { resolve }));
    expect(error.code).toBe('E_DISCOVERY_BLOCKED_ADDRESS');
    expect(error.message).toContain('10.20.30.40');
  });

  it('refuses a host if any of its addresses is private', async () => {
    const resolve: Resolver = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    expect((await failure(safeFetch('https://mixed.example.com/', {}, { resolve }))).code).toBe(
      'E_DISCOVERY_BLOCKED_ADDRESS',
    );
  });

  it('never fetches link-local or metadata addresses, even with allowLocal', async () => {
    const urls = [
      'http://169.254.169.254/latest/meta-data/',
      'https://[fe80::1]/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fd00:ec2::254]/',
    ];
    for (const url of urls) {
      const error = await failure(safeFetch(url, {}, { allowLocal: true }));
      expect(error.code, url).toBe('E_DISCOVERY_BLOCKED_ADDRESS');
      expect(error.message).toContain('never fetched');
    }
    const resolve: Resolver = async () => [{ address: '169.254.169.254', family: 4 }];
    expect((await failure(safeFetch('http://metadata.google.internal/', {}, { allowLocal: true, resolve }))).code).toBe(
      'E_DISCOVERY_BLOCKED_ADDRESS',
    );
  });

  it('refuses plain http to a public address even with allowLocal', async () => {
    const resolve: Resolver = async () => [{ address: '93.184.216.34', family: 4 }];
    const error = await failure(safeFetch('http://mcp.example.com/mcp', {}, { allowLocal: true, resolve }));
    expect(error.code).toBe('E_DISCOVERY_BLOCKED_URL');
  });

  it('refuses other schemes and URLs with credentials', async () => {
    expect((await failure(safeFetch('file:///etc/passwd', {}, { allowLocal: true }))).code).toBe(
      'E_DISCOVERY_BLOCKED_URL',
    );
    const error = await failure(safeFetch('https://user:hunter2@mcp.example.com/', {}, { allowLocal: true }));
    expect(error.code).toBe('E_DISCOVERY_BLOCKED_URL');
    expect(error.message).not.toContain('hunter2');
  });

  it('connects to the vetted address only: the connection is pinned to what was resolved and checked', async () => {
    const server = await serve((_req, res) => json(res, 200, { pinned: true }));
    const port = new URL(server.origin).port;
    const answers = [
      [{ address: '127.0.0.1', family: 4 as const }],
      [{ address: '169.254.169.254', family: 4 as const }],
    ];
    let calls = 0;
    const resolve: Resolver = async () => answers[Math.min(calls++, 1)]!;
    const response = await safeFetch(`http://mcp.rebind.test:${port}/x`, {}, { allowLocal: true, resolve });
    expect(await response.json()).toEqual({ pinned: true });
    // one resolution per request; the host header keeps the name, the socket went to the vetted address
    expect(calls).toBe(1);
    expect(server.hits).toEqual([`GET /x host=mcp.rebind.test:${port} auth=-`]);
    // a later request re-resolves and is refused when the name now points at a metadata address
    expect((await failure(safeFetch(`http://mcp.rebind.test:${port}/x`, {}, { allowLocal: true, resolve }))).code).toBe(
      'E_DISCOVERY_BLOCKED_ADDRESS',
    );
  });

  it('follows at most 3 redirects, then fails', async () => {
    const server = await serve((req, res) => {
      const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n') ?? '0');
      res.writeHead(302, { location: `/loop?n=${n + 1}` });
      res.end();
    });
    const error = await failure(safeFetch(`${server.origin}/loop?n=0`, {}, { allowLocal: true }));
    expect(error.code).toBe('E_DISCOVERY_TOO_MANY_REDIRECTS');
    expect(server.hits.map((hit) => hit.split(' ')[1])).toEqual(['/loop?n=0', '/loop?n=1', '/loop?n=2', '/loop?n=3']);
  });

  it('follows a redirect chain within the limit and reports the final URL', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/a') return void res.writeHead(301, { location: '/b' }).end();
      if (req.url === '/b') return void res.writeHead(307, { location: '/c' }).end();
      json(res, 200, { at: req.url });
    });
    const response = await safeFetch(`${server.origin}/a`, {}, { allowLocal: true });
    expect(await response.json()).toEqual({ at: '/c' });
    expect(response.url).toBe(`${server.origin}/c`);
  });

  it("returns a redirect as it is with redirect: 'manual'", async () => {
    const server = await serve((_req, res) => void res.writeHead(302, { location: '/elsewhere' }).end());
    const response = await safeFetch(`${server.origin}/a`, { redirect: 'manual' }, { allowLocal: true });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/elsewhere');
    expect(server.hits).toHaveLength(1);
  });

  it('re-vets every redirect hop: a redirect to a metadata address is refused', async () => {
    const server = await serve(
      (_req, res) => void res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    );
    const error = await failure(safeFetch(`${server.origin}/x`, {}, { allowLocal: true }));
    expect(error.code).toBe('E_DISCOVERY_BLOCKED_ADDRESS');
    expect(error.url).toBe('http://169.254.169.254/latest/meta-data/');
  });

  it('drops the Authorization header on a redirect to another origin, and turns a POST into a GET on 303', async () => {
    const target = await serve((req, res) => json(res, 200, { method: req.method }));
    const source = await serve((_req, res) => void res.writeHead(303, { location: `${target.origin}/landed` }).end());
    const response = await safeFetch(
      `${source.origin}/start`,
      { method: 'POST', headers: { authorization: 'Bearer abc', 'content-type': 'application/json' }, body: '{}' },
      { allowLocal: true },
    );
    expect(await response.json()).toEqual({ method: 'GET' });
    expect(source.hits[0]).toContain('auth=Bearer abc');
    expect(target.hits).toEqual([`GET /landed host=${new URL(target.origin).host} auth=-`]);
  });

  it('caps the body: a declared Content-Length over the cap fails at once', async () => {
    const server = await serve((_req, res) => {
      const body = Buffer.alloc(300 * 1024, 'a');
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      res.end(body);
    });
    const error = await failure(safeFetch(`${server.origin}/big`, {}, { allowLocal: true }));
    expect(error.code).toBe('E_DISCOVERY_TOO_LARGE');
    expect(error.message).toContain(String(256 * 1024));
  });

  it('caps the body: a chunked body growing past the cap fails', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 'b');
      let sent = 0;
      const write = (): void => {
        if (sent >= 10 || res.destroyed) return void res.end();
        sent += 1;
        res.write(chunk, () => setImmediate(write));
      };
      write();
    });
    const error = await failure(
      safeFetch(`${server.origin}/stream`, {}, { allowLocal: true, maxBodyBytes: 100 * 1024 }),
    );
    expect(error.code).toBe('E_DISCOVERY_TOO_LARGE');
  });

  it('times out when the server does not answer', async () => {
    const server = await serve(() => undefined);
    const error = await failure(safeFetch(`${server.origin}/slow`, {}, { allowLocal: true, timeoutMs: 200 }));
    expect(error.code).toBe('E_DISCOVERY_TIMEOUT');
    expect(error.message).toContain('200 ms');
  });

  it('times out when the body trickles in too slowly', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":');
    });
    const error = await failure(safeFetch(`${server.origin}/trickle`, {}, { allowLocal: true, timeoutMs: 200 }));
    expect(error.code).toBe('E_DISCOVERY_TIMEOUT');
  });

  it('reports an unreachable server and a host that does not resolve', async () => {
    const closed = await listen();
    await closed.close();
    const error = await failure(safeFetch(`${closed.origin}/x`, {}, { allowLocal: true }));
    expect(error.code).toBe('E_DISCOVERY_UNREACHABLE');
    expect(error.message).toContain('ECONNREFUSED');
    const resolve: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
    };
    const dns = await failure(safeFetch('https://nowhere.invalid/', {}, { resolve }));
    expect(dns.code).toBe('E_DISCOVERY_UNREACHABLE');
    expect(dns.message).toContain('ENOTFOUND');
  });

  it('honours the caller signal', async () => {
    const server = await serve(() => undefined);
    const controller = new AbortController();
    const pending = safeFetch(`${server.origin}/x`, { signal: controller.signal }, { allowLocal: true });
    setTimeout(() => controller.abort(), 50);
    expect((await failure(pending)).code).toBe('E_DISCOVERY_ABORTED');
  });

  it('createSafeFetch and vetUrl apply the same rules', async () => {
    const server = await serve((_req, res) => json(res, 200, { ok: 1 }));
    const fetchFn = createSafeFetch({ allowLocal: true });
    expect((await fetchFn(new URL(`${server.origin}/x`))).status).toBe(200);
    await expect(vetUrl(`${server.origin}/token`, { allowLocal: true })).resolves.toBeUndefined();
    expect((await failure(vetUrl(`${server.origin}/token`))).code).toBe('E_DISCOVERY_BLOCKED_URL');
    expect((await failure(vetUrl('http://169.254.169.254/token', { allowLocal: true }))).code).toBe(
      'E_DISCOVERY_BLOCKED_ADDRESS',
    );
  });
});
