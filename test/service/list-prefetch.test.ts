// listDeploymentPages with prefetch: pages read ahead are used only at the offsets the service returned.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/service/client.js';
import { ServiceError } from '../../src/service/errors.js';
import { startEmulator } from '../../src/emulator/server.js';
import { deployment, json, startServer, type Handler, type ScriptedServer } from './scripted-server.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function serve(handler: Handler): Promise<ScriptedServer> {
  const server = await startServer(handler);
  cleanups.push(() => server.close());
  return server;
}

function clientFor(url: string): ServiceClient {
  const client = new ServiceClient({ baseUrl: url, retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 } });
  cleanups.push(() => client.close());
  return client;
}

const names = (count: number): string[] => Array.from({ length: count }, (_, i) => `d-${String(i).padStart(5, '0')}`);

/**
 * A list service over `count` deployments. `size(offset)` is how many items the page at `offset` holds (at most the
 * limit); the returned offset is offset + items. Each answer waits `delayMs`, so requests overlap.
 */
function listService(count: number, size: (offset: number) => number = () => 100, delayMs = 5): Handler {
  const all = names(count).map((name) => deployment(name));
  return async (request, response) => {
    const offset = Number(request.url.searchParams.get('offset'));
    const limit = Number(request.url.searchParams.get('limit'));
    await sleep(delayMs);
    const page = all.slice(offset, offset + Math.min(limit, size(offset)));
    json(response, 200, { resources: page, offset: offset + page.length });
  };
}

async function read(client: ServiceClient, prefetch: number): Promise<string[][]> {
  const pages: string[][] = [];
  for await (const page of client.listDeploymentPages({}, { prefetch })) pages.push(page.map((d) => d.name));
  return pages;
}

/** The offsets a sequential reader requests: 0, then each returned offset, up to the empty page. */
function chain(count: number, size: (offset: number) => number): number[] {
  const out = [0];
  for (let offset = 0; offset < count;) {
    offset += Math.min(100, size(offset), count - offset);
    out.push(offset);
  }
  return out;
}

describe('listDeploymentPages with pages read ahead', () => {
  it('reads full pages with up to 4 requests in flight, the same pages as page after page, at most 3 past the end', async () => {
    const server = await serve(listService(1050));
    const client = clientFor(server.url);
    const pages = await read(client, 4);
    expect(pages.flat()).toEqual(names(1050));
    expect(pages.map((p) => p.length)).toEqual([...Array(10).fill(100), 50]);
    const floor = Math.ceil(1050 / 100) + 1;
    expect(server.received.length).toBeGreaterThanOrEqual(floor);
    expect(server.received.length).toBeLessThanOrEqual(floor + 3);
    expect(server.maxInFlight).toBeGreaterThan(1);
    expect(server.maxInFlight).toBeLessThanOrEqual(4);
  });

  it('with prefetch 1 sends exactly the sequential requests', async () => {
    const server = await serve(listService(250));
    const client = clientFor(server.url);
    expect((await read(client, 1)).flat()).toEqual(names(250));
    expect(server.received.map((r) => Number(r.url.searchParams.get('offset')))).toEqual([0, 100, 200, 250]);
    expect(server.maxInFlight).toBe(1);
  });

  it('short pages of a constant size: learns the step, every item once and in order', async () => {
    const size = (): number => 30;
    const server = await serve(listService(400, size));
    const client = clientFor(server.url);
    const pages = await read(client, 4);
    expect(pages.flat()).toEqual(names(400));
    const sequential = chain(400, size);
    // Every offset the service returned was requested; read-ahead adds at most 3 past the end.
    const requested = new Set(server.received.map((r) => Number(r.url.searchParams.get('offset'))));
    for (const offset of sequential) expect(requested.has(offset)).toBe(true);
    expect(server.received.length).toBeLessThanOrEqual(sequential.length + 3);
  });

  it('pages of varying sizes: only pages requested at returned offsets are used, nothing twice, nothing missed', async () => {
    const sizes = [100, 100, 37, 100, 1, 100, 100, 100, 64, 100];
    const size = (offset: number): number => sizes[Math.floor(offset / 7) % sizes.length]!;
    const server = await serve(listService(900, size, 2));
    const client = clientFor(server.url);
    const pages = await read(client, 4);
    expect(pages.flat()).toEqual(names(900));
    const expected = chain(900, size);
    const sequentialPages: number[] = [];
    for (let i = 0; i + 1 < expected.length; i++) sequentialPages.push(expected[i + 1]! - expected[i]!);
    expect(pages.map((p) => p.length)).toEqual(sequentialPages);
  });

  it('a failing page that was needed fails the listing; failing pages read past the end are dropped unread', async () => {
    const all = names(300).map((name) => deployment(name));
    const server = await serve(async (request, response) => {
      const offset = Number(request.url.searchParams.get('offset'));
      // The empty page that ends the list answers last, so the pages read ahead past it reach the server first.
      await sleep(offset === 300 ? 80 : 3);
      if (offset > 300) return json(response, 400, { detail: `offset ${offset} is past the end` });
      const page = all.slice(offset, offset + 100);
      json(response, 200, { resources: page, offset: offset + page.length });
    });
    const client = clientFor(server.url);
    expect((await read(client, 4)).flat()).toEqual(names(300));
    expect(server.received.some((r) => Number(r.url.searchParams.get('offset')) > 300)).toBe(true);

    const broken = await serve(async (request, response) => {
      const offset = Number(request.url.searchParams.get('offset'));
      if (offset === 200) return json(response, 400, { detail: 'bad offset' });
      const page = all.slice(offset, offset + 100);
      json(response, 200, { resources: page, offset: offset + page.length });
    });
    const failing = clientFor(broken.url);
    const error = await read(failing, 4).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).status).toBe(400);
  });

  it('a consumer that stops early leaves nothing unhandled and the client closes', async () => {
    const server = await serve(listService(1000, () => 100, 10));
    const client = new ServiceClient({ baseUrl: server.url });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      let seen = 0;
      for await (const page of client.listDeploymentPages({}, { prefetch: 4 })) {
        seen += page.length;
        if (seen >= 300) break;
      }
      expect(seen).toBe(300);
      await server.close();
      await client.close();
      await sleep(20);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('against the emulator capping pages at 30: the same deployments as a sequential listing', async () => {
    const seed = {
      deployments: names(250).map((name, i) => ({
        name,
        source: 'internal_template' as const,
        created_at: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
      })),
    };
    const emulator = await startEmulator({ seed, pageCap: 30, latencyMs: 2 });
    cleanups.push(() => emulator.close());
    const client = clientFor(emulator.url);
    const ahead: string[] = [];
    for await (const page of client.listDeploymentPages({}, { prefetch: 4 })) ahead.push(...page.map((d) => d.name));
    const listed = emulator.requestLog.length;
    expect(ahead).toEqual(names(250));
    expect((await client.listDeployments()).map((d) => d.name)).toEqual(ahead);
    // Sequential: ceil(250 / 30) + 1 = 10 requests; read-ahead may add at most 3.
    expect(listed).toBeLessThanOrEqual(13);
  });
});
