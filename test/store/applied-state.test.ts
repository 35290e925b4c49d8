// Applied-state store on the real Redis: hashes only, merged writes, one-round-trip reads, pending markers cleared, plans without Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { secretHash } from '../../src/core/hash.js';
import { dropPrefix, REDIS_URL, testPrefix, closedPort } from '../helpers/redis.js';
import { AppliedStateStore, appliedKey, readAppliedState } from '../../src/store/applied-state.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { LUA_ISO_TIME } from '../../src/store/applied-state-scripts.js';
import { redisNow } from '../../src/store/clock.js';

describe('AppliedStateStore', () => {
  const prefix = testPrefix('applied');
  let redis: Redis;
  let store: AppliedStateStore;

  beforeAll(async () => {
    redis = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    store = new AppliedStateStore(redis, prefix);
  });
  afterAll(async () => {
    await closeRedis(redis);
    await dropPrefix(prefix);
  });

  it('keeps the file that declared each resource apart, read into its record; a deleted resource forgets it', async () => {
    await store.set('Deployment/f', { secrets: {}, appliedAt: '2024-01-01T00:00:00.000Z' });
    await store.recordFiles(
      new Map([
        ['Deployment/f', 'team/f.yaml'],
        ['Deployment/not-applied', 'x.yaml'],
      ]),
    );
    const records = await store.getAll();
    expect(records.get('Deployment/f')?.file).toBe('team/f.yaml');
    expect(records.has('Deployment/not-applied')).toBe(false);
    // Unchanged: nothing written again (the hash field keeps its value).
    await store.recordFiles(new Map([['Deployment/f', 'team/f.yaml']]), records);
    await store.recordFiles(new Map([['Deployment/f', 'moved/f.yaml']]), records);
    expect((await store.get('Deployment/f'))?.file).toBeUndefined();
    expect((await store.getAll()).get('Deployment/f')?.file).toBe('moved/f.yaml');
    await store.forget('Deployment/f');
    expect(await redis.hget(`${prefix}:declared-in`, 'Deployment/f')).toBeNull();
  });

  it('keeps the wave that declared each resource (not 0) apart, read into its record; back to 0 or deleted, it goes', async () => {
    await store.set('Deployment/w', { secrets: {}, appliedAt: '2024-01-01T00:00:00.000Z' });
    await store.set('Deployment/z', { secrets: {}, appliedAt: '2024-01-01T00:00:00.000Z' });
    await store.recordWaves(
      new Map([
        ['Deployment/w', 2],
        ['Deployment/z', 0],
      ]),
      await store.getAll(),
    );
    expect(await redis.hgetall(`${prefix}:declared-wave`)).toEqual({ 'Deployment/w': '2' });
    const records = await store.getAll();
    expect(records.get('Deployment/w')?.wave).toBe(2);
    expect(records.get('Deployment/z')?.wave).toBeUndefined();
    await store.recordWaves(new Map([['Deployment/w', 0]]), records);
    expect(await redis.hget(`${prefix}:declared-wave`, 'Deployment/w')).toBeNull();
    await store.recordWaves(new Map([['Deployment/w', -1]]), await store.getAll());
    expect((await store.getAll()).get('Deployment/w')?.wave).toBe(-1);
    await store.forget('Deployment/w');
    await store.forget('Deployment/z');
    expect(await redis.hget(`${prefix}:declared-wave`, 'Deployment/w')).toBeNull();
  });

  it('keeps the prune absences (no secret: times, a content id, a live id), replaced as the daemon decides', async () => {
    const a = { since: 1_000, manifests: 'sha256:abc', seen: 1, id: 'id-a' };
    await store.recordAbsences(
      new Map(),
      new Map([
        ['Deployment/a', a],
        ['Deployment/b', { ...a, id: 'id-b' }],
      ]),
    );
    const read = await store.absences();
    expect(read.get('Deployment/a')).toEqual(a);
    await store.recordAbsences(read, new Map([['Deployment/a', { ...a, seen: 2 }]]));
    expect([...(await store.absences())]).toEqual([['Deployment/a', { ...a, seen: 2 }]]);
    // An entry that is not ours to read is left out: its grace starts again.
    await redis.hset(`${prefix}:prune-absent`, 'Deployment/c', '{"since":"yesterday"}');
    expect([...(await store.absences()).keys()]).toEqual(['Deployment/a']);
  });

  it('keeps a confirmation of a pending delete for its absence only: gone when declared again, when the absence starts again, when deleted', async () => {
    const p = `${prefix}:confirm`;
    const own = new AppliedStateStore(redis, p);
    const a = { since: 1_000, manifests: 'sha256:abc', seen: 2, id: 'id-a' };
    const absent = new Map([
      ['Deployment/a', a],
      ['Deployment/b', { ...a, id: 'id-b' }],
      ['Deployment/c', { ...a, id: 'id-c' }],
    ]);
    await own.recordAbsences(new Map(), absent);
    // Only resources with an absence (a pending delete) are confirmed; a name nothing waits for stores nothing.
    expect(
      await own.confirmDeletes((key) => ['Deployment/a', 'Deployment/b', 'Deployment/c', 'Deployment/z'].includes(key)),
    ).toEqual(['Deployment/a', 'Deployment/b', 'Deployment/c']);
    expect([...(await own.confirmations())]).toEqual([
      ['Deployment/a', { id: 'id-a', since: 1_000 }],
      ['Deployment/b', { id: 'id-b', since: 1_000 }],
      ['Deployment/c', { id: 'id-c', since: 1_000 }],
    ]);
    // a: seen once more (the same absence) keeps it; b: declared again; c: its absence started again (other manifests).
    await own.recordAbsences(
      absent,
      new Map([
        ['Deployment/a', { ...a, seen: 3 }],
        ['Deployment/c', { ...a, id: 'id-c', since: 5_000, manifests: 'sha256:def', seen: 1 }],
      ]),
    );
    expect([...(await own.confirmations()).keys()]).toEqual(['Deployment/a']);
    // Deleted: the record goes, and the confirmation with it.
    await own.forget('Deployment/a');
    expect(await own.confirmations()).toEqual(new Map());
    await dropPrefix(p);
  });

  it('keeps one hash field per resource, JSON of hashes only', async () => {
    const h = secretHash('Deployment/a', 'KEY', 'value-1');
    await store.set('Deployment/a', { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    expect(await redis.type(appliedKey(prefix))).toBe('hash');
    expect(JSON.parse((await redis.hget(appliedKey(prefix), 'Deployment/a'))!)).toEqual({
      secrets: { KEY: h },
      appliedAt: '2024-01-01T00:00:00.000Z',
    });
    expect(await store.get('Deployment/a')).toEqual({ secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    expect([...(await store.getAll()).keys()]).toEqual(['Deployment/a']);
  });

  it("stamps each record with Redis' time, written as toISOString writes it (leap days, centuries, the epoch)", async () => {
    const times = [
      0,
      951_782_400_999,
      951_868_799_000,
      1_709_164_800_123,
      4_107_542_400_000,
      4_107_456_000_500,
      253_402_300_799_999,
      ...Array.from({ length: 200 }, (_, i) => Math.floor(i * 37_813_411_917.3)),
    ];
    for (const ms of times) {
      const lua = `${LUA_ISO_TIME} return iso_of(tonumber(ARGV[1]), tonumber(ARGV[2]))`;
      expect(await redis.eval(lua, 0, String(Math.floor(ms / 1000)), String(ms % 1000))).toBe(
        new Date(ms).toISOString(),
      );
    }
    const before = await redisNow(redis);
    const written = await store.recordWrite('Deployment/t', { secrets: {} }, null);
    const after = await redisNow(redis);
    expect(Date.parse(written.appliedAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(written.appliedAt)).toBeLessThanOrEqual(after);
    expect(await store.get('Deployment/t')).toEqual(written);
  });

  it('refuses to store anything that is not a hash', async () => {
    await expect(store.set('Deployment/b', { secrets: { KEY: 'plain-value' }, appliedAt: 'now' })).rejects.toThrow();
    expect(await redis.hexists(appliedKey(prefix), 'Deployment/b')).toBe(0);
  });

  it('merges a write over the previous record and clears the pending write', async () => {
    const one = secretHash('Deployment/c', 'ONE', '1');
    const two = secretHash('Deployment/c', 'TWO', '2');
    const twoNew = secretHash('Deployment/c', 'TWO', '22');
    await store.recordWrite('Deployment/c', { secrets: { ONE: one, TWO: two } });
    await store.setPending('Deployment/c', {
      op: 'patch',
      secrets: { TWO: twoNew },
      sentAt: new Date().toISOString(),
      revisionBefore: 'r1',
      startsRevision: true,
    });
    expect(await store.getPending('Deployment/c')).toMatchObject({ op: 'patch', secrets: { TWO: twoNew } });
    const merged = await store.recordWrite('Deployment/c', { secrets: { TWO: twoNew } });
    expect(merged.secrets).toEqual({ ONE: one, TWO: twoNew });
    expect(await store.getPending('Deployment/c')).toBeUndefined();
  });

  it('keeps a provider definition hash until a new one is written', async () => {
    const def = 'a'.repeat(64);
    await store.recordWrite('OAuthProvider/slack', { secrets: {}, definitionHash: def });
    const again = await store.recordWrite('OAuthProvider/slack', { secrets: { client_secret: 'b'.repeat(64) } });
    expect(again.definitionHash).toBe(def);
  });

  it('leaves out unreadable entries instead of failing the plan', async () => {
    await redis.hset(appliedKey(prefix), 'Deployment/broken', '{not json');
    const all = await store.getAll();
    expect(all.has('Deployment/broken')).toBe(false);
    expect(all.has('Deployment/a')).toBe(true);
  });

  it('read() returns the record and the pending write together, undefined where there is none', async () => {
    expect(await store.read('Deployment/none')).toEqual({ applied: undefined, pending: undefined });
    const h = secretHash('Deployment/a', 'KEY', 'v1');
    await store.set('Deployment/a', { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' });
    const pending = {
      op: 'patch' as const,
      secrets: { KEY: h },
      sentAt: '2024-01-02T00:00:00.000Z',
      revisionBefore: null,
      startsRevision: true,
    };
    await store.setPending('Deployment/a', pending);
    expect(await store.read('Deployment/a')).toEqual({
      applied: { secrets: { KEY: h }, appliedAt: '2024-01-01T00:00:00.000Z' },
      pending,
    });
    await redis.hset(`${prefix}:pending`, 'Deployment/b', '{not json');
    expect((await store.read('Deployment/b')).pending).toBeUndefined();
  });

  it('recordWrite over a known record merges into it without reading; null means none; undefined reads', async () => {
    const one = secretHash('Deployment/c', 'ONE', 'v1');
    const two = secretHash('Deployment/c', 'TWO', 'v2');
    await store.set('Deployment/c', { secrets: { STORED: one }, appliedAt: '2024-01-01T00:00:00.000Z' });
    const at = new Date('2024-02-01T00:00:00.000Z');
    // The caller's record wins over what is stored (it was read during the same job, nobody else writes meanwhile).
    const merged = await store.recordWrite(
      'Deployment/c',
      { secrets: { TWO: two } },
      {
        secrets: { ONE: one },
        appliedAt: 'x',
      },
    );
    expect(merged.secrets).toEqual({ ONE: one, TWO: two });
    const fresh = await store.recordWrite('Deployment/c', { secrets: { TWO: two } }, null);
    expect(fresh.secrets).toEqual({ TWO: two });
    await store.setPending('Deployment/c', { op: 'patch', secrets: {}, sentAt: at.toISOString() });
    const read = await store.recordWrite('Deployment/c', { secrets: { ONE: one } });
    expect(read.secrets).toEqual({ ONE: one, TWO: two });
    expect(await store.read('Deployment/c')).toEqual({ applied: read, pending: undefined });
  });
  it('records field hashes sent and answered, merged by path over the previous ones, in one command', async () => {
    const a = { sent: '1'.repeat(64), answered: '2'.repeat(64) };
    const b = { sent: '3'.repeat(64), answered: '3'.repeat(64) };
    const b2 = { sent: '4'.repeat(64), answered: '5'.repeat(64) };
    const first = await store.recordWrite(
      'Deployment/f',
      { secrets: {}, fields: { 'source_config.listener_config': a, 'source_config.build_command': b } },
      null,
    );
    // Every command the store sends goes through its client's sendCommand: count them there (MONITOR on the shared
    // Redis also carried other tests' traffic, and ioredis failed with "Command queue state error" under that load).
    const sends: string[] = [];
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = (command: Parameters<Redis['sendCommand']>[0]) => {
      sends.push(command.name.toLowerCase());
      return send(command);
    };
    let second: Awaited<ReturnType<AppliedStateStore['recordWrite']>>;
    try {
      second = await store.recordWrite(
        'Deployment/f',
        { secrets: {}, fields: { 'source_config.build_command': b2 } },
        first,
      );
    } finally {
      redis.sendCommand = send;
    }
    expect(second.fields).toEqual({ 'source_config.listener_config': a, 'source_config.build_command': b2 });
    expect(await store.get('Deployment/f')).toEqual(second);
    expect(sends).toEqual([expect.stringMatching(/^eval/)]);
  });

  it('a write that carried the complete set of secrets replaces the recorded hashes; one without secrets keeps them', async () => {
    const one = secretHash('Deployment/g', 'ONE', '1');
    const gone = secretHash('Deployment/g', 'GONE', 'x');
    await store.recordWrite('Deployment/g', { secrets: { ONE: one, GONE: gone } }, null);
    const complete = await store.recordWrite('Deployment/g', { secrets: { ONE: one }, replaceSecrets: true });
    expect(complete.secrets).toEqual({ ONE: one });
    const none = await store.recordWrite('Deployment/g', {
      secrets: {},
      fields: { 'source_config.build_on_push': { sent: 'a'.repeat(64), answered: 'a'.repeat(64) } },
    });
    expect(none.secrets).toEqual({ ONE: one });
  });

  it('reads records written before field hashes existed (no three-way knowledge), and refuses field values that are not hashes', async () => {
    await redis.hset(
      appliedKey(prefix),
      'Deployment/old',
      JSON.stringify({ secrets: {}, appliedAt: '2024-01-01T00:00:00.000Z' }),
    );
    expect(await store.get('Deployment/old')).toEqual({ secrets: {}, appliedAt: '2024-01-01T00:00:00.000Z' });
    const plain = {
      secrets: {},
      appliedAt: 'now',
      fields: { 'source_config.install_command': { sent: 'pip install .', answered: 'a'.repeat(64) } },
    };
    await expect(store.set('Deployment/h', plain)).rejects.toThrow();
    expect(await redis.hexists(appliedKey(prefix), 'Deployment/h')).toBe(0);
  });

  it('readAppliedState: plans without Redis get an empty map and one warning line', async () => {
    const port = await closedPort();
    const read = await readAppliedState({ redisUrl: `redis://127.0.0.1:${port}`, redisPrefix: prefix });
    expect(read.records.size).toBe(0);
    expect(read.warning).toBe(
      `Redis at redis://127.0.0.1:${port} is unreachable (ECONNREFUSED): start redis-server, or set --redis-url or REDIS_URL; planning without applied state`,
    );
    const live = await readAppliedState({ redisUrl: REDIS_URL, redisPrefix: prefix });
    expect(live.warning).toBeUndefined();
    expect(live.records.get('Deployment/a')?.secrets.KEY).toMatch(/^[0-9a-f]{64}$/);
  });
});
