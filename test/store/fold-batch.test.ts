// The batched fold on the real Redis (src/store/fold-script.ts): one script call per 250 resources, one pipeline per 1,000; a lost race on one resource of a batch folds that one alone again; a fenced batch writes nothing; removals, new states and unchanged ones mixed in one batch. And the projection read from the folds' one copy: only the states that moved are read and parsed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applying, decide, type Outcome } from '../../src/core/decide.js';
import type { LiveDeployment, PlanChange } from '../../src/core/model.js';
import type { ResourceEvent, ResourceState } from '../../src/core/resource-state-model.js';
import { ProjectionReader } from '../../src/daemon/status/projection.js';
import { leaseKey } from '../../src/leader/lease.js';
import { recordKeys } from '../../src/store/event-log.js';
import { FOLD_BATCH, stateVersionsKey } from '../../src/store/fold-script.js';
import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { FOLD_PIPELINE, type FoldRequest, ResourceFolds } from '../../src/store/resource-folds.js';
import { closedPort, keysUnder, monitorPrefix, testPrefix } from '../helpers/redis.js';

const FP = 'a'.repeat(64);
const N = 300;

function outcomeOf(name: string, action: PlanChange['action']): Outcome {
  const change: PlanChange = { kind: 'Deployment', name, action, new_revision: false, fields: [], reason: null };
  const live = {
    id: `d-${name}`,
    name,
    status: 'READY',
    latest_revision_id: 'r1',
    active_revision_id: 'r1',
    created_at: '2026-01-01T00:00:00Z',
  } as LiveDeployment;
  const settings = { mode: 'daemon' as const, driftPolicy: 'heal' as const };
  return decide({ change, desired: { suspend: false }, fingerprint: FP, live, settings, remembered: FP });
}

function decided(outcome: Outcome): ResourceEvent {
  const context = {
    file: 'f.yaml',
    planReason: null,
    drift: null,
    heldAtLastGood: false,
    deploymentId: 'd',
    desired: FP,
  };
  return { type: 'decided', outcome, context };
}

const meta = (by: string) => ({ at: new Date().toISOString(), by });
const names = (label: string, n = N): string[] => Array.from({ length: n }, (_, i) => `${label}-${i}`);
const noop = (name: string): FoldRequest => ({
  key: `Deployment/${name}`,
  events: [decided(outcomeOf(name, 'noop'))],
  meta: meta('leader'),
});
const queued = (name: string, jobId: string): FoldRequest => ({
  key: `Deployment/${name}`,
  events: [decided(applying(outcomeOf(name, 'update'), { jobId, operation: 'patch-deployment' }))],
  meta: meta('leader'),
});
/** The fold script calls among commands seen (EVAL on a first use, EVALSHA after). */
const scriptCalls = (commands: string[][], prefix: string): number =>
  commands.filter(([command, , , first]) => /^eval(sha)?$/i.test(command ?? '') && first === recordKeys(prefix).state)
    .length;

/**
 * Two connections on a prefix of their own and a MONITOR of it, opened before the block's tests and closed after them;
 * each test takes `redis` apart once they are open.
 */
function redisPair(label: string): {
  prefix: string;
  redis: { a: Redis; b: Redis; monitor: Awaited<ReturnType<typeof monitorPrefix>> };
} {
  const prefix = testPrefix(label);
  const redis = {} as { a: Redis; b: Redis; monitor: Awaited<ReturnType<typeof monitorPrefix>> };
  // A redis-server of the block's own: MONITOR on the shared one sees every other test's commands, and ioredis fails
  // ("Command queue state error") when a monitored line arrives with the reply to MONITOR itself.
  let server: ChildProcess | undefined;
  let url = '';
  beforeAll(async () => {
    const port = await closedPort();
    server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    url = `redis://127.0.0.1:${port}`;
    for (let ready = false; !ready;) {
      const ping = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      ping.on('error', () => undefined);
      ready = await ping.connect().then(
        () => true,
        () => false,
      );
      ping.disconnect();
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    redis.a = await connectProducer({ redisUrl: url, redisPrefix: prefix });
    redis.b = await connectProducer({ redisUrl: url, redisPrefix: prefix });
    redis.monitor = await monitorPrefix(prefix, url);
  });
  afterAll(async () => {
    redis.monitor?.stop();
    if (redis.a) await closeRedis(redis.a);
    if (redis.b) await closeRedis(redis.b);
    server?.kill('SIGKILL');
  });
  return { prefix, redis };
}

describe('the batched fold', () => {
  const { prefix, redis } = redisPair('fold-batch');
  const keys = recordKeys(prefix);

  it('one script call per 250 resources; a lost race on one resource reads and folds that one alone again', async () => {
    const { a, b, monitor } = redis;
    // Once `race` is set, another writer folds a job's queueing into resource 7 between the leader's read and write.
    const racer = new ResourceFolds(b, prefix, leaseKey(prefix));
    let race = false;
    let attempts = 0;
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix), async () => {
      attempts += 1;
      if (race) expect((await racer.fold([queued('race-7', 'j-racer')]))[0]!.status).toBe('written');
      race = false;
      return Date.now();
    });
    const all = names('race');
    await monitor.take(a);
    expect((await folds.fold(all.map(noop))).every((o) => o.status === 'written')).toBe(true);
    const first = await monitor.take(a);
    expect(scriptCalls(first, prefix)).toBe(Math.ceil(N / FOLD_BATCH));
    // Every key a call touches is in its KEYS (a Redis Cluster routes by them): the prefix's 7, then each history.
    const calls = first.filter(([command, , , key]) => /^eval(sha)?$/i.test(command ?? '') && key === keys.state);
    const declared = calls.flatMap((call) => call.slice(3, 3 + Number(call[2])));
    for (const name of all) expect(declared).toContain(keys.history(`Deployment/${name}`));
    expect(declared).toContain(keys.log);
    expect(declared).toContain(leaseKey(prefix));

    const counter = Number(await a.get(keys.stateVersion));
    const parsed = folds.parsed;
    race = true;
    attempts = 0;
    const outcomes = await folds.fold(all.map((name) => queued(name, `j-${name}`)));
    expect(attempts).toBe(2);
    expect(outcomes.every((o) => o.status === 'written')).toBe(true);
    // Only resource 7 was read again (and parsed: it moved), and folded again over the racer's state.
    expect(folds.parsed - parsed).toBe(1);
    // Each write moved the counter (by one at least: it also keeps up with Redis' clock in microseconds).
    expect(Number(await a.get(keys.stateVersion))).toBeGreaterThanOrEqual(counter + N + 1);
    const commands = await monitor.take(a);
    expect(scriptCalls(commands, prefix)).toBe(Math.ceil(N / FOLD_BATCH) + 1 + 1);
    const history = async (name: string): Promise<string[]> =>
      (await a.xrange(keys.history(`Deployment/${name}`), '-', '+')).map(
        ([, f]) => (JSON.parse(f[1]!) as { type: string; by: string }).type,
      );
    expect(await history('race-8')).toEqual(['decided', 'decided', 'write_enqueued']);
    // The racer's job, then the leader's over it: each written once.
    expect(await history('race-7')).toEqual(['decided', 'decided', 'write_enqueued', 'write_enqueued']);
    expect((await folds.read(['Deployment/race-7'])).get('Deployment/race-7')!.state?.job).toMatchObject({
      id: 'j-race-7',
    });
  });

  it('more than FOLD_PIPELINE resources: read and written FOLD_PIPELINE at a time, the outcomes in their order', async () => {
    const { a, monitor } = redis;
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const many = names('many', 2 * FOLD_PIPELINE + 100);
    await monitor.take(a);
    const outcomes = await folds.fold(many.map(noop));
    expect(outcomes.map((o) => `${o.key} ${o.status}`)).toEqual(many.map((name) => `Deployment/${name} written`));
    // Each part's read of the versions (R), then its script calls (F), before the next part is read.
    const seen = (await monitor.take(a)).map(([command, key, , first]) => {
      if (command?.toLowerCase() === 'hmget' && key === stateVersionsKey(prefix)) return 'R';
      return /^eval(sha)?$/i.test(command ?? '') && first === keys.state ? 'F' : '';
    });
    const perPart = FOLD_PIPELINE / FOLD_BATCH;
    expect(seen.join('').split(/R+/).filter(Boolean)).toEqual(['F'.repeat(perPart), 'F'.repeat(perPart), 'F']);
  });

  it('a fenced batch writes nothing: no state, version, hold, log or history entry', async () => {
    const { a, monitor } = redis;
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    await a.set(leaseKey(prefix), 'replica-b|1700000000000006|2026-01-01T00:01:00Z');
    const fresh = names('fenced');
    const before = {
      states: await a.hlen(keys.state),
      versions: await a.hgetall(stateVersionsKey(prefix)),
      counter: await a.get(keys.stateVersion),
      log: await a.xlen(keys.log),
    };
    await monitor.take(a);
    const outcomes = await folds.fold(
      [...fresh.map(noop), ...names('race', 20).map((name) => queued(name, `j2-${name}`))],
      { fence: 1700000000000005 },
    );
    expect(outcomes.map((o) => o.status)).toEqual(Array.from({ length: N + 20 }, () => 'fenced'));
    expect(scriptCalls(await monitor.take(a), prefix)).toBe(Math.ceil((N + 20) / FOLD_BATCH));
    expect(await a.hlen(keys.state)).toBe(before.states);
    expect(await a.hgetall(stateVersionsKey(prefix))).toEqual(before.versions);
    expect(await a.get(keys.stateVersion)).toBe(before.counter);
    expect(await a.xlen(keys.log)).toBe(before.log);
    expect(await a.exists(keys.history('Deployment/fenced-0'))).toBe(0);
    await a.del(leaseKey(prefix));
  });

  it('removals, new states and unchanged ones in one batch: each as its own fold', async () => {
    const { a, monitor } = redis;
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const kept = names('mixed-kept', 100);
    const gone = names('mixed-gone', 100);
    await folds.fold([...kept, ...gone].map(noop));
    for (const name of gone) await a.hset(keys.buildLogs, `Deployment/${name}`, '{"revisionId":"r1","lines":[]}');
    const fresh = names('mixed-new', 100);
    await monitor.take(a);
    const requests: FoldRequest[] = [
      ...kept.map(noop),
      ...gone.map((name) => ({ key: `Deployment/${name}`, events: [], meta: meta('leader'), remove: true as const })),
      ...fresh.map(noop),
      { key: 'Deployment/never-was', events: [], meta: meta('leader'), remove: true as const },
    ];
    const outcomes = await folds.fold(requests);
    expect(outcomes.map((o) => `${o.key.split('-')[1]} ${o.status}`)).toEqual([
      ...kept.map(() => 'kept unchanged'),
      ...gone.map(() => 'gone written'),
      ...fresh.map(() => 'new written'),
      // nothing to remove: the call answers its version (none), nothing written
      'was written',
    ]);
    // The removals and the new states in one script call (the unchanged and the never-was send nothing).
    expect(scriptCalls(await monitor.take(a), prefix)).toBe(1);
    for (const name of gone) {
      expect(await a.hexists(keys.state, `Deployment/${name}`)).toBe(0);
      expect(await a.hexists(stateVersionsKey(prefix), `Deployment/${name}`)).toBe(0);
      expect(await a.hexists(keys.buildLogs, `Deployment/${name}`)).toBe(0);
    }
    for (const name of [...kept, ...fresh]) expect(await a.hexists(keys.state, `Deployment/${name}`)).toBe(1);
    const news = outcomes.slice(200, 300).map((o) => ('version' in o ? o.version : 0));
    expect(new Set(news).size).toBe(100);
  });
});

describe('the projection from the folds’ one copy', () => {
  const { prefix, redis } = redisPair('projection-copy');

  const reader = (folds: ResourceFolds, order: () => string[]) =>
    new ProjectionReader(folds, {
      written: async () => undefined,
      order,
      fallback: () => [],
      onError: (error) => {
        throw error;
      },
    });
  /** The state keys HMGET asked of the states hash in `commands`. */
  const statesAsked = (commands: string[][]): number =>
    commands
      .filter(([command, key]) => command?.toLowerCase() === 'hmget' && key === recordKeys(prefix).state)
      .reduce((sum, c) => sum + c.length - 2, 0);

  it('the leader after its fold parses nothing and shows its own objects; a standby parses only what moved', async () => {
    const { a, b, monitor } = redis;
    const leaderFolds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const all = names('row', 50);
    const outcomes = await leaderFolds.fold(all.map(noop));
    const order = all.map((name) => `Deployment/${name}`).reverse();
    const leader = reader(leaderFolds, () => order);
    await monitor.take(a);
    const rows = await leader.rows();
    expect(rows.map((r) => r.key)).toEqual(order);
    expect(leaderFolds.parsed).toBe(0);
    const commands = await monitor.take(a);
    expect(statesAsked(commands)).toBe(0);
    expect(commands.filter(([command]) => command?.toLowerCase() === 'hgetall').map((c) => c[1])).toEqual([
      stateVersionsKey(prefix),
    ]);
    // The rows are the objects the fold answered (one copy).
    const byKey = new Map(outcomes.map((o) => [o.key, 'state' in o ? o.state : undefined]));
    for (const row of rows) expect(row).toBe(byKey.get(row.key));

    // A standby reads everything once, then only what moved: a worker folds two resources.
    const standbyFolds = new ResourceFolds(b, prefix, leaseKey(prefix));
    const standby = reader(standbyFolds, () => []);
    expect((await standby.rows()).map((r) => r.key)).toEqual([...order].sort());
    expect(standbyFolds.parsed).toBe(50);
    const worker = new ResourceFolds(b, prefix, leaseKey(prefix));
    await worker.fold([queued('row-3', 'j3'), queued('row-4', 'j4')]);
    await monitor.take(b);
    const moved = await standby.rows();
    expect(standbyFolds.parsed).toBe(52);
    expect(statesAsked(await monitor.take(b))).toBe(2);
    expect(moved.find((r) => r.key === 'Deployment/row-3')?.job).toMatchObject({ id: 'j3' });
    // The leader reads the two that moved, and nothing else.
    expect((await leader.rows()).find((r) => r.key === 'Deployment/row-4')?.job).toMatchObject({ id: 'j4' });
    expect(leaderFolds.parsed).toBe(2);

    // A resource removed by another writer leaves the rows and the reader's cache.
    await worker.fold([{ key: 'Deployment/row-5', events: [], meta: meta('leader'), remove: true }]);
    expect((await standby.rows()).some((r) => r.key === 'Deployment/row-5')).toBe(false);
    expect((await standbyFolds.read(['Deployment/row-5'])).get('Deployment/row-5')).toEqual({
      state: undefined,
      version: 0,
    });
  });

  it('states lost (a FLUSHALL) and rebuilt, with no read between: no version repeats, so no cache hands back what it read before', async () => {
    const { a, b } = redis;
    const flush = async (): Promise<void> => {
      const keys = await keysUnder(a, prefix);
      if (keys.length > 0) await a.del(...keys);
    };
    await flush();
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const lost = names('lost', 3);
    const keys = lost.map((name) => `Deployment/${name}`);
    await folds.fold(lost.map(noop));
    let shown: ResourceState[] = [];
    const projection = new ProjectionReader(folds, {
      written: async () => undefined,
      order: () => keys,
      fallback: () => shown,
      onError: (error) => {
        throw error;
      },
    });
    shown = await projection.rows();
    const version = Number(await folds.stateVersion());
    // A standby's cache holds every state as read before the loss.
    const standby = new ResourceFolds(b, prefix, leaseKey(prefix));
    const before = await standby.read(keys);
    expect(projection.fromMemory).toBe(false);

    // Redis loses every key, and the next decisions write the states again before anyone reads.
    await flush();
    await folds.fold(lost.map((name) => queued(name, `j-${name}`)));
    expect(Number(await folds.stateVersion())).toBeGreaterThan(version);
    const rows = await projection.rows();
    expect(projection.fromMemory).toBe(false);
    expect(rows.map((row) => row.job?.id)).toEqual(lost.map((name) => `j-${name}`));
    const after = await standby.read(keys);
    for (const key of keys) expect(after.get(key)!.version).toBeGreaterThan(before.get(key)!.version);
    expect([...after.values()].map((read) => read.state?.job?.id)).toEqual(lost.map((name) => `j-${name}`));

    // A counter set back (a Redis restored from an older snapshot) still gives a version above every one before.
    await a.set(recordKeys(prefix).stateVersion, '1');
    const [again] = await folds.fold([queued(lost[0]!, 'j-again')]);
    expect(again).toMatchObject({ status: 'written' });
    const newest = (await standby.read([keys[0]!])).get(keys[0]!)!;
    expect(newest.version).toBeGreaterThan(after.get(keys[0]!)!.version);
    expect(newest.state?.job?.id).toBe('j-again');
  });
});
