// /status queries over real loopback HTTP: filters, a cursor, deltas since a token, ETags, and the unchanged full body.
import { afterEach, describe, expect, it } from 'vitest';
import { startStatusServer, type StatusServer } from '../../src/daemon/server/status-server.js';

let server: StatusServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function row(name: string, sync = 'Synced', health = 'healthy', kind = 'Deployment') {
  return {
    key: `${kind}/${name}`,
    kind,
    name,
    file: `${name}.yaml`,
    sync: { status: sync, reason: 'x' },
    health: { status: health, reason: 'y' },
  };
}

interface View {
  resources: Array<{ key: string }>;
  view: {
    sequence: string;
    delta: boolean;
    removed: string[];
    removedFields: string[];
    total: number;
    matched: number;
    nextCursor: string | null;
  };
}

async function get(path: string): Promise<View> {
  const res = await fetch(`${server!.url}${path}`);
  expect(res.status).toBe(200);
  return (await res.json()) as View;
}

describe('/status queries', () => {
  it('filters, pages and sends only the rows changed since a token', async () => {
    let rows = Array.from({ length: 30 }, (_, i) =>
      row(
        `app-${String(i).padStart(2, '0')}`,
        i % 3 === 0 ? 'OutOfSync' : 'Synced',
        i % 5 === 0 ? 'degraded' : 'healthy',
      ),
    );
    rows.push(row('login', 'Synced', 'healthy', 'OAuthProvider'));
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: {
        readiness: async () => [],
        metrics: async () => '',
        status: () => ({ format_version: '1', resources: rows }),
      },
    });

    // Without a query the body is as before: every row, no view.
    const full = (await (await fetch(`${server.url}/status`)).json()) as { resources: unknown[]; view?: unknown };
    expect(full.resources).toHaveLength(31);
    expect(full.view).toBeUndefined();

    const outOfSyncDegraded = await get('/status?sync=OutOfSync&health=degraded');
    expect(outOfSyncDegraded.resources.map((r) => r.key)).toEqual(['Deployment/app-00', 'Deployment/app-15']);
    expect((await get('/status?kind=OAuthProvider')).resources.map((r) => r.key)).toEqual(['OAuthProvider/login']);
    expect((await get('/status?name=APP-2')).view.matched).toBe(10);

    const seen: string[] = [];
    let cursor = '';
    for (let pages = 0; pages < 10; pages++) {
      const page = await get(`/status?kind=Deployment&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...page.resources.map((r) => r.key));
      if (page.view.nextCursor === null) break;
      cursor = page.view.nextCursor;
    }
    expect(seen).toHaveLength(30);
    expect(new Set(seen).size).toBe(30);

    const first = await get('/status?since=');
    expect(first.view.delta).toBe(false);
    expect(first.resources).toHaveLength(31);
    const none = await get(`/status?since=${first.view.sequence}`);
    expect(none.view).toMatchObject({ delta: true, removed: [], sequence: first.view.sequence });
    expect(none.resources).toEqual([]);

    rows = rows.filter((r) => r.name !== 'app-01').map((r) => (r.name === 'app-02' ? row('app-02', 'OutOfSync') : r));
    const delta = await get(`/status?since=${first.view.sequence}`);
    expect(delta.view.delta).toBe(true);
    expect(delta.resources.map((r) => r.key)).toEqual(['Deployment/app-02']);
    expect(delta.view.removed).toEqual(['Deployment/app-01']);
    expect(delta.view.total).toBe(30);
  });

  it('carries in a delta only the top-level fields changed since the token, with format_version always', async () => {
    let doc: Record<string, unknown> = {
      format_version: '1',
      daemon: { pid: 1 },
      lastReconcile: { id: 1 },
      orphans: [],
      resources: [row('a'), row('b')],
    };
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: { readiness: async () => [], metrics: async () => '', status: () => doc },
    });
    const first = (await get('/status?since=')) as View & Record<string, unknown>;
    expect(Object.keys(first)).toEqual(['format_version', 'daemon', 'lastReconcile', 'orphans', 'resources', 'view']);
    expect(first.view).toMatchObject({ delta: false, removedFields: [] });

    const none = (await get(`/status?since=${first.view.sequence}`)) as View & Record<string, unknown>;
    expect(Object.keys(none)).toEqual(['format_version', 'resources', 'view']);
    expect(none.view).toMatchObject({ delta: true, removedFields: [] });

    const { orphans: _gone, ...rest } = doc;
    doc = { ...rest, lastReconcile: { id: 2 }, resources: [row('a'), row('b', 'OutOfSync')] };
    const changed = (await get(`/status?since=${first.view.sequence}`)) as View & Record<string, unknown>;
    expect(Object.keys(changed)).toEqual(['format_version', 'lastReconcile', 'resources', 'view']);
    expect(changed.lastReconcile).toEqual({ id: 2 });
    expect(changed.resources.map((r) => r.key)).toEqual(['Deployment/b']);
    expect(changed.view).toMatchObject({ delta: true, removedFields: ['orphans'] });
    // From the newer token, nothing has changed since.
    const after = (await get(`/status?since=${changed.view.sequence}`)) as View & Record<string, unknown>;
    expect(Object.keys(after)).toEqual(['format_version', 'resources', 'view']);
    expect(after.view.removedFields).toEqual([]);
  });

  it('answers an unchanged query with 304 and a bad one with 400', async () => {
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: { readiness: async () => [], metrics: async () => '', status: () => ({ resources: [row('a')] }) },
    });
    const first = await fetch(`${server.url}/status?kind=Deployment`);
    const etag = first.headers.get('etag')!;
    expect((await fetch(`${server.url}/status?kind=Deployment`, { headers: { 'if-none-match': etag } })).status).toBe(
      304,
    );
    const bad = await fetch(`${server.url}/status?limit=lots`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain('limit must be a whole number');
  });

  it("answers a first window of rows in the document's order without the plan, and says what is wrong with a bad one", async () => {
    const rows = ['zeta', 'alpha', 'mid'].map((name) => row(name));
    const plan = { changes: [], diagnostics: [] };
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: {
        readiness: async () => [],
        metrics: async () => '',
        status: () => ({ format_version: '1', plan, resources: rows, orphans: [] }),
      },
    });
    const window = (await get('/status?format=2&first=2')) as View & Record<string, unknown>;
    expect(window.resources.map((r) => r.key)).toEqual(['Deployment/zeta', 'Deployment/alpha']);
    expect(window).not.toHaveProperty('plan');
    expect(window).toMatchObject({ format_version: '2', orphans: [], view: { delta: false, total: 3, matched: 3 } });
    for (const [path, words] of [
      ['first=0', 'first must be a whole number'],
      ['first=2&since=x', 'send it without since'],
      ['format=3', 'format must be 1 or 2'],
    ]) {
      const bad = await fetch(`${server.url}/status?${path}`);
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toContain(words);
    }
  });
});
