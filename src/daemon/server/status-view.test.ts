// Unit tests of the /status query: filters, the cursor, and deltas over the change sequence.
import { describe, expect, it } from 'vitest';
import { parseStatusQuery, RowSequence, selectRows, type ViewRow } from './status-view.js';

function row(
  kind: string,
  name: string,
  sync = 'Synced',
  health = 'healthy',
  extra: Record<string, unknown> = {},
): ViewRow & Record<string, unknown> {
  return { key: `${kind}/${name}`, kind, name, sync: { status: sync }, health: { status: health }, ...extra };
}

function query(text: string) {
  const parsed = parseStatusQuery(new URLSearchParams(text));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.query!;
}

const ROWS = [
  row('Deployment', 'web'),
  row('Deployment', 'api', 'OutOfSync', 'progressing'),
  row('OAuthProvider', 'web-login', 'Synced', 'degraded'),
  row('Deployment', 'worker', 'Unknown', 'unknown'),
];

describe('parseStatusQuery', () => {
  it('no parameter is the whole body of today', () => {
    expect(parseStatusQuery(new URLSearchParams(''))).toEqual({ ok: true, query: undefined });
  });
  it('reads lists, name, limit, cursor and since', () => {
    expect(
      query('kind=Deployment,OAuthProvider&sync=OutOfSync&sync=Unknown&name=Web&limit=2&cursor=Deployment/a&since=x.3'),
    ).toEqual({
      kind: ['Deployment', 'OAuthProvider'],
      sync: ['OutOfSync', 'Unknown'],
      name: 'web',
      limit: 2,
      cursor: 'Deployment/a',
      since: 'x.3',
    });
  });
  it('a bad limit or an unknown parameter is one clear message', () => {
    const bad = parseStatusQuery(new URLSearchParams('limit=0'));
    expect(bad).toEqual({ ok: false, error: expect.stringContaining('limit must be a whole number from 1 to 10000') });
    expect(query('since=x.3&plan=delta')).toEqual({ since: 'x.3', plan: 'delta' });
    expect(parseStatusQuery(new URLSearchParams('plan=whole'))).toEqual({
      ok: false,
      error: expect.stringContaining('plan must be "delta"'),
    });
    const unknown = parseStatusQuery(new URLSearchParams('colour=red'));
    expect(unknown).toEqual({ ok: false, error: expect.stringContaining('unknown /status parameter "colour"') });
  });
});

describe('selectRows', () => {
  it('filters by kind, sync, health and name', () => {
    const seq = new RowSequence('e');
    seq.observe(ROWS);
    expect(selectRows(ROWS, query('kind=Deployment'), seq).rows.map((r) => r.name)).toEqual(['web', 'api', 'worker']);
    expect(selectRows(ROWS, query('sync=OutOfSync,Unknown'), seq).rows.map((r) => r.name)).toEqual(['api', 'worker']);
    expect(selectRows(ROWS, query('health=degraded'), seq).rows.map((r) => r.name)).toEqual(['web-login']);
    const byName = selectRows(ROWS, query('name=WEB'), seq);
    expect(byName.rows.map((r) => r.name)).toEqual(['web', 'web-login']);
    expect(byName.view).toMatchObject({ total: 4, matched: 2, delta: false, nextCursor: null });
  });

  it('pages by key with a cursor until the last page', () => {
    const seq = new RowSequence('e');
    seq.observe(ROWS);
    const first = selectRows(ROWS, query('limit=3'), seq);
    expect(first.rows.map((r) => r.key)).toEqual(['Deployment/api', 'Deployment/web', 'Deployment/worker']);
    expect(first.view.nextCursor).toBe('Deployment/worker');
    const second = selectRows(ROWS, query(`limit=3&cursor=${first.view.nextCursor}`), seq);
    expect(second.rows.map((r) => r.key)).toEqual(['OAuthProvider/web-login']);
    expect(second.view.nextCursor).toBeNull();
  });

  it('a delta holds only the rows whose content changed and the keys removed', () => {
    const seq = new RowSequence('e');
    const token = seq.observe(ROWS);
    expect(selectRows(ROWS, query(`since=${token}`), seq).rows).toEqual([]);
    const next = [row('Deployment', 'web', 'OutOfSync'), ROWS[1]!, ROWS[2]!, row('Deployment', 'new')];
    seq.observe(next);
    const delta = selectRows(next, query(`since=${token}`), seq);
    expect(delta.view.delta).toBe(true);
    expect(delta.rows.map((r) => r.key)).toEqual(['Deployment/web', 'Deployment/new']);
    expect(delta.view.removed).toEqual(['Deployment/worker']);
    // Observing the same rows again bumps nothing: the token stays.
    expect(seq.observe(next)).toBe(delta.view.sequence);
    expect(selectRows(next, query(`since=${delta.view.sequence}`), seq).rows).toEqual([]);
  });

  it('serializes a row object once: a new list holding the same row objects compares only the new ones', () => {
    // Each row counts its serializations (JSON.stringify calls toJSON).
    const counted = (r: ViewRow & Record<string, unknown>) => {
      const serialized = { count: 0 };
      const copy = { ...r };
      return { row: { ...copy, toJSON: () => (serialized.count++, copy) }, serialized };
    };
    const [web, api, worker] = [counted(ROWS[0]!), counted(ROWS[1]!), counted(ROWS[3]!)];
    const seq = new RowSequence('e');
    const token = seq.observe([web.row, api.row, worker.row]);
    // The next read of the projection: a new list, api's state moved (a new object), the others the same objects.
    const apiAfter = counted(row('Deployment', 'api', 'Synced', 'healthy'));
    // worker's state read again as a new object with the same content: serialized, and not a change.
    const workerAgain = counted(ROWS[3]!);
    const next = [web.row, apiAfter.row, workerAgain.row];
    seq.observe(next);
    expect([web, api, worker, apiAfter, workerAgain].map((r) => r.serialized.count)).toEqual([1, 1, 1, 1, 1]);
    expect(selectRows(next, query(`since=${token}`), seq).rows.map((r) => r.key)).toEqual(['Deployment/api']);
  });

  it('a row that comes back after removal is a change, not a removal', () => {
    const seq = new RowSequence('e');
    const token = seq.observe(ROWS);
    seq.observe(ROWS.slice(1));
    seq.observe(ROWS);
    const delta = selectRows(ROWS, query(`since=${token}`), seq);
    expect(delta.rows.map((r) => r.key)).toEqual(['Deployment/web']);
    expect(delta.view.removed).toEqual([]);
  });

  it('a token of another epoch, from the future or before the dropped tombstones is a full answer', () => {
    const seq = new RowSequence('e', 1);
    const token = seq.observe(ROWS);
    expect(selectRows(ROWS, query('since=other.1'), seq).view.delta).toBe(false);
    expect(selectRows(ROWS, query('since=e.99'), seq).view.delta).toBe(false);
    expect(selectRows(ROWS, query('since=0'), seq).view.delta).toBe(false);
    seq.observe(ROWS.slice(2));
    const full = selectRows(ROWS.slice(2), query(`since=${token}`), seq);
    expect(full.view.delta).toBe(false);
    expect(full.rows).toHaveLength(2);
  });
});
