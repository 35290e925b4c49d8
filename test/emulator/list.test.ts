// GET /v2/deployments through real HTTP: paging with the next offset, page caps, every filter, query validation.
import { afterEach, describe, expect, test } from 'vitest';
import type { EmulatorSeed, RunningEmulator } from '../../src/emulator/server.js';
import { baseSeed, dockerBody, OTHER_TENANT, start, type Client } from './helpers.js';

let running: RunningEmulator | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const STATUSES = ['READY', 'READY', 'UNUSED', 'UNKNOWN', 'AWAITING_DELETE'] as const;
const TYPES = ['prod', 'dev', 'dev_free'] as const;

function id(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

/** 250 deployments in the first tenant (every 10th shares a created_at with its neighbour) and 5 in the other. */
function bigSeed(): EmulatorSeed {
  const seed = baseSeed();
  const deployments: NonNullable<EmulatorSeed['deployments']> = [];
  for (let n = 0; n < 250; n += 1) {
    const minute = n % 10 === 1 ? n - 1 : n;
    deployments.push({
      // Ids descend while times ascend, so ordering by id alone would be wrong.
      id: id(1000 - n),
      name: `${n % 2 === 0 ? 'alpha' : 'beta'}-${n}`,
      source: 'external_docker',
      source_revision_config: { image_uri: `registry.example.com/app:${n % 3}` },
      image_version: `v${n % 3}`,
      status: STATUSES[n % STATUSES.length],
      created_at: new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString(),
      deployment_type: TYPES[n % TYPES.length],
      remote_reconciled: n % 4 === 0,
      tag_value_ids: n % 5 === 0 ? ['red', 'blue'] : n % 5 === 1 ? ['red'] : [],
    });
  }
  for (let n = 0; n < 5; n += 1) {
    deployments.push({ id: id(5000 + n), tenant_id: OTHER_TENANT, name: `alpha-${n}`, source: 'internal_template' });
  }
  return { ...seed, deployments };
}

async function open(options: Parameters<typeof start>[0] = {}): Promise<Client> {
  const { emulator, api } = await start({ seed: bigSeed(), ...options });
  running = emulator;
  return api;
}

/** Follows the offsets the emulator answers until the first empty page; returns names and the pages' sizes. */
async function listAll(
  api: Client,
  query: string,
  headers: Record<string, string> = {},
): Promise<{ names: string[]; sizes: number[]; offsets: number[] }> {
  const names: string[] = [];
  const sizes: number[] = [];
  const offsets: number[] = [];
  let offset = 0;
  for (let i = 0; i < 1000; i += 1) {
    const page = await api.call(
      'GET',
      `/v2/deployments?limit=100&offset=${offset}${query ? `&${query}` : ''}`,
      undefined,
      headers,
    );
    expect(page.status).toBe(200);
    sizes.push(page.body.resources.length);
    offsets.push(page.body.offset);
    if (page.body.resources.length === 0) {
      expect(page.body.offset).toBe(offset);
      return { names, sizes, offsets };
    }
    names.push(...page.body.resources.map((d: { name: string }) => d.name));
    offset = page.body.offset;
  }
  throw new Error('paging did not end');
}

function expectedNames(keep: (n: number) => boolean): string[] {
  const out: Array<{ n: number; minute: number; id: string }> = [];
  for (let n = 0; n < 250; n += 1) if (keep(n)) out.push({ n, minute: n % 10 === 1 ? n - 1 : n, id: id(1000 - n) });
  out.sort((a, b) => a.minute - b.minute || (a.id < b.id ? -1 : 1));
  return out.map(({ n }) => `${n % 2 === 0 ? 'alpha' : 'beta'}-${n}`);
}

describe('paging', () => {
  test('pages of 100 answer the next offset; the list ends at the first empty page; order is created_at then id', async () => {
    const api = await open();
    const { names, sizes, offsets } = await listAll(api, '');
    expect(sizes).toEqual([100, 100, 50, 0]);
    expect(offsets).toEqual([100, 200, 250, 250]);
    expect(names).toEqual(expectedNames(() => true));
    // Same created_at: the smaller id first (beta-1 has a smaller id than alpha-0).
    expect(names.slice(0, 2)).toEqual(['beta-1', 'alpha-0']);
  });

  test('limit defaults to 20 and offset to 0', async () => {
    const api = await open();
    const page = await api.call('GET', '/v2/deployments');
    expect(page.body.resources).toHaveLength(20);
    expect(page.body.offset).toBe(20);
  });

  test('pageCap serves fewer than the limit; following the offsets still reaches everything', async () => {
    const api = await open({ pageCap: 7 });
    const first = await api.call('GET', '/v2/deployments?limit=100');
    expect(first.body.resources).toHaveLength(7);
    expect(first.body.offset).toBe(7);
    const { names, sizes } = await listAll(api, '');
    expect(sizes.slice(0, -1).every((s) => s <= 7)).toBe(true);
    expect(sizes).toHaveLength(Math.ceil(250 / 7) + 1);
    expect(names).toEqual(expectedNames(() => true));
  });

  test('a created deployment appears at the end; other tenants are separate', async () => {
    const api = await open();
    await api.call('POST', '/v2/deployments', dockerBody('zeta'));
    const last = await api.call('GET', '/v2/deployments?limit=1&offset=250');
    expect(last.body.resources.map((d: { name: string }) => d.name)).toEqual(['zeta']);
    const other = await listAll(api, '', { 'x-tenant-id': OTHER_TENANT });
    expect(other.names).toEqual(['alpha-0', 'alpha-1', 'alpha-2', 'alpha-3', 'alpha-4']);
  });
});

describe('filters', () => {
  const cases: Array<[string, string, (n: number) => boolean]> = [
    ['name_contains', 'name_contains=beta-1', (n) => n % 2 === 1 && String(n).startsWith('1')],
    ['name_contains is case-insensitive', 'name_contains=ALPHA-2', (n) => n % 2 === 0 && String(n).startsWith('2')],
    ['status', 'status=UNUSED', (n) => STATUSES[n % 5] === 'UNUSED'],
    ['image_version', 'image_version=v1', (n) => n % 3 === 1],
    ['deployment_type', 'deployment_type=dev_free', (n) => TYPES[n % 3] === 'dev_free'],
    ['remote_reconciled=true', 'remote_reconciled=true', (n) => n % 4 === 0],
    ['remote_reconciled=false', 'remote_reconciled=false', (n) => n % 4 !== 0],
    ['tag_value_ids: every given tag', 'tag_value_ids=red,blue', (n) => n % 5 === 0],
    ['tag_value_ids: one tag', 'tag_value_ids=red', (n) => n % 5 <= 1],
    [
      'combined',
      'status=READY&deployment_type=prod&name_contains=alpha',
      (n) => STATUSES[n % 5] === 'READY' && TYPES[n % 3] === 'prod' && n % 2 === 0,
    ],
    ['status nobody has', 'status=AWAITING_DATABASE', () => false],
  ];
  test.each(cases)('%s', async (_label, query, keep) => {
    const api = await open({ pageCap: 30 });
    const { names } = await listAll(api, query);
    expect(names).toEqual(expectedNames(keep));
  });

  test('deployment_ids: listed ids of this tenant only, in list order, unknown ids ignored', async () => {
    const api = await open();
    const ids = [
      id(1000 - 7),
      id(1000 - 3),
      id(5000),
      'ffffffff-ffff-4fff-8fff-ffffffffffff',
      id(1000 - 7).toUpperCase(),
    ];
    const page = await api.call('GET', `/v2/deployments?deployment_ids=${ids.join(',')}`);
    expect(page.body.resources.map((d: { name: string }) => d.name)).toEqual(['beta-3', 'beta-7']);
    expect(page.body.offset).toBe(2);
    const second = await api.call('GET', `/v2/deployments?deployment_ids=${ids.join(',')}&offset=1&limit=1`);
    expect(second.body.resources.map((d: { name: string }) => d.name)).toEqual(['beta-7']);
    const filtered = await api.call('GET', `/v2/deployments?deployment_ids=${ids.join(',')}&status=UNKNOWN`);
    expect(filtered.body.resources.map((d: { name: string }) => d.name)).toEqual(['beta-3']);
  });
});

describe('query validation', () => {
  const cases: Array<[string, Array<string | number>, string]> = [
    ['limit=0', ['query', 'limit'], 'greater_than_equal'],
    ['limit=101', ['query', 'limit'], 'less_than_equal'],
    ['limit=ten', ['query', 'limit'], 'int_parsing'],
    ['limit=', ['query', 'limit'], 'int_parsing'],
    ['offset=-1', ['query', 'offset'], 'greater_than_equal'],
    ['offset=1.5', ['query', 'offset'], 'int_parsing'],
    ['remote_reconciled=maybe', ['query', 'remote_reconciled'], 'bool_parsing'],
    ['deployment_type=staging', ['query', 'deployment_type'], 'enum'],
    ['deployment_ids=abc', ['query', 'deployment_ids', 0], 'uuid_parsing'],
  ];
  test.each(cases)('%s answers 422', async (query, loc, type) => {
    const api = await open();
    const answer = await api.call('GET', `/v2/deployments?${query}`);
    expect(answer.status).toBe(422);
    expect(answer.body.detail).toEqual([expect.objectContaining({ loc, type })]);
  });

  test('limit=100 and boolean spellings are accepted; unknown parameters are ignored', async () => {
    const api = await open();
    expect((await api.call('GET', '/v2/deployments?limit=100')).body.resources).toHaveLength(100);
    for (const value of ['1', 'yes', 'True', 'on']) {
      const page = await api.call('GET', `/v2/deployments?limit=100&remote_reconciled=${value}`);
      expect(page.status).toBe(200);
      expect(page.body.resources).toHaveLength(63);
    }
    expect((await api.call('GET', '/v2/deployments?sort=name')).status).toBe(200);
  });
});
