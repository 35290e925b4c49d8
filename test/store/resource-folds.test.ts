// The fold in Redis on the real Redis: two folders racing on one resource both land, in one order; a fold fenced by an old token writes nothing while a job's result is folded whoever ran it; a fold that changes nothing writes nothing; a job result with no state writes only its entry, a leader's job that ends before its decision is folded starts the state; a refusal's hold reaches the holds.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applying, decide, type Outcome } from '../../src/core/decide.js';
import type { LiveDeployment, PlanChange } from '../../src/core/model.js';
import { jobRecord } from '../../src/core/resource-record.js';
import { stateOfJob } from '../../src/core/resource-state.js';
import type { ResourceEvent } from '../../src/core/resource-state-model.js';
import { leaseKey } from '../../src/leader/lease.js';
import { EventLogStore, LOG_MAX_AGE_MS, recordKeys } from '../../src/store/event-log.js';
import { RedisHoldStore } from '../../src/store/holds-store.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { ResourceFolds, stateVersionsKey } from '../../src/store/resource-folds.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const FP = 'a'.repeat(64);
const KEY = 'Deployment/web';
const V1 = { kind: 'git' as const, id: 'c1'.repeat(20), readAt: '2026-01-01T00:00:00.000Z' };

function outcome(action: PlanChange['action']): Outcome {
  const change: PlanChange = {
    kind: 'Deployment',
    name: 'web',
    action,
    new_revision: false,
    fields: action === 'update' ? [{ path: 'x', before: 1, after: 2, sensitive: false }] : [],
    reason: null,
  };
  const live = {
    id: 'd1',
    name: 'web',
    status: 'READY',
    latest_revision_id: 'r1',
    active_revision_id: 'r1',
    created_at: '2026-01-01T00:00:00Z',
  } as LiveDeployment;
  return decide({
    change,
    desired: { suspend: false },
    fingerprint: FP,
    live,
    settings: { mode: 'daemon', driftPolicy: 'heal' },
    remembered: 'b'.repeat(64),
  });
}

function decided(o: Outcome): Extract<ResourceEvent, { type: 'decided' }> {
  return {
    type: 'decided',
    outcome: o,
    context: {
      file: 'web.yaml',
      planReason: null,
      drift: null,
      heldAtLastGood: false,
      deploymentId: 'd1',
      desired: FP,
    },
  };
}

const meta = (by: string) => ({ at: new Date().toISOString(), by });

describe('ResourceFolds', () => {
  const prefix = testPrefix('folds');
  let a: Redis;
  let b: Redis;

  beforeAll(async () => {
    a = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
    b = await connectProducer({ redisUrl: REDIS_URL, redisPrefix: prefix });
  });
  afterAll(async () => {
    await closeRedis(a);
    await closeRedis(b);
    await dropPrefix(prefix);
  });

  it('two folders racing on one resource: the one that lost reads again and folds again, so both events land', async () => {
    const key = 'Deployment/race';
    const racer = new ResourceFolds(b, prefix, leaseKey(prefix));
    const first = new ResourceFolds(a, prefix, leaseKey(prefix));
    const queued = applying(outcome('update'), { jobId: 'j1', operation: 'patch-deployment' });
    await first.fold([
      { key, events: [{ ...decided(queued), outcome: { ...queued, key, name: 'race' } }], meta: meta('leader') },
    ]);
    const { version: before } = (await first.read([key])).get(key)!;

    // The leader folds a revision reading; between its read and its write, a worker folds the job's result.
    let raced = false;
    const leader = new ResourceFolds(a, prefix, leaseKey(prefix), async () => {
      if (!raced) {
        raced = true;
        const result = { outcome: 'updated' as const, new_revision: true, latestRevisionId: 'r2' };
        const job: ResourceEvent = {
          type: 'job-completed',
          jobId: 'j1',
          at: new Date().toISOString(),
          result,
          version: V1,
          desired: FP,
          operation: 'patch-deployment',
        };
        const entry = jobRecord({ key, jobId: 'j1', meta: { ...meta('worker'), manifests: V1 }, answer: result });
        const [won] = await racer.fold([{ key, events: [job], entries: [entry], meta: meta('worker') }]);
        expect(won).toMatchObject({ status: 'written' });
      }
      return Date.now();
    });
    await leader.read([key]);
    const reading: ResourceEvent = {
      type: 'revision',
      health: {
        status: 'healthy',
        reason: 'RevisionDeployed',
        message: 'revision r2 is active',
        revisionId: 'r2',
        revisionStatus: 'DEPLOYED',
      },
    };
    const [outcomeOfLeader] = await leader.fold([{ key, events: [reading], meta: meta('leader') }]);
    expect(raced).toBe(true);
    expect(outcomeOfLeader).toMatchObject({ status: 'written' });

    // Both landed, in one order: the worker's result (job completed, appliedFrom), then the reading over it.
    const state = (await new ResourceFolds(b, prefix, leaseKey(prefix)).read([key])).get(key)!;
    expect(state.version).toBeGreaterThan(before + 1);
    expect(state.state).toMatchObject({
      job: { id: 'j1', state: 'completed', outcome: 'updated' },
      appliedFrom: { id: V1.id },
      health: { status: 'healthy', revisionId: 'r2' },
    });
    // The history stream in the order the folds wrote it (history() sorts by each entry's time: the leader's reading
    // took its time before the worker's fold, so it sorts before the worker's entries there).
    const order = [
      'decided leader',
      'write_enqueued leader',
      'write_done worker',
      'revision worker',
      'revision leader',
    ];
    const written = await a.xrange(recordKeys(prefix).history(key), '-', '+');
    const entries = written.map(([, fields]) => JSON.parse(fields[1]!) as { type: string; by: string });
    expect(entries.map((e) => `${e.type} ${e.by}`)).toEqual(order);
    const history = await new EventLogStore(a, prefix).history(key);
    expect(history.map((e) => `${e.type} ${e.by}`).sort()).toEqual([...order].sort());
  });

  it('a decision fenced by a token that no longer holds the lease writes nothing; a job result is folded whoever ran it', async () => {
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    await a.set(leaseKey(prefix), 'replica-a|1700000000000005|2026-01-01T00:00:00Z');
    const [first] = await folds.fold([{ key: KEY, events: [decided(outcome('noop'))], meta: meta('replica-a') }], {
      fence: 1700000000000005,
    });
    expect(first).toMatchObject({ status: 'written' });
    const written = await a.hget(recordKeys(prefix).state, KEY);
    const entries = await a.xlen(recordKeys(prefix).log);

    // Replica B takes the lease with a newer token: A's decision (a hold) is refused, inside the same script.
    await a.set(leaseKey(prefix), 'replica-b|1700000000000006|2026-01-01T00:01:00Z');
    const hold = {
      reason: 'RevisionFailed' as const,
      desired: FP,
      message: 'held by A',
      since: '2026-01-01T00:00:00Z',
      revisionId: 'r9',
      revisionStatus: 'BUILD_FAILED',
    };
    const [stale] = await folds.fold([{ key: KEY, events: [{ type: 'hold', hold }], meta: meta('replica-a') }], {
      fence: 1700000000000005,
    });
    expect(stale).toEqual({ key: KEY, status: 'fenced' });
    expect(await a.hget(recordKeys(prefix).state, KEY)).toBe(written);
    expect(await a.xlen(recordKeys(prefix).log)).toBe(entries);
    expect(await new RedisHoldStore(a, prefix).getAll()).toEqual(new Map());
    // No lease at all (it lapsed): fenced too.
    await a.del(leaseKey(prefix));
    expect(
      (
        await folds.fold([{ key: KEY, events: [{ type: 'hold', hold }], meta: meta('replica-a') }], {
          fence: 1700000000000005,
        })
      )[0]!.status,
    ).toBe('fenced');

    // The new leader's token writes; a job's result (unfenced) is folded by any replica.
    await a.set(leaseKey(prefix), 'replica-b|1700000000000006|2026-01-01T00:01:00Z');
    expect(
      (
        await folds.fold([{ key: KEY, events: [{ type: 'hold', hold }], meta: meta('replica-b') }], {
          fence: 1700000000000006,
        })
      )[0]!.status,
    ).toBe('written');
    const failed: ResourceEvent = {
      type: 'job-failed',
      jobId: 'j7',
      at: new Date().toISOString(),
      message: 'PATCH /v2/deployments/{deployment_id} answered 413: too large',
      failure: { status: 413 },
      desired: 'c'.repeat(64),
      operation: 'patch-deployment',
    };
    expect((await folds.fold([{ key: KEY, events: [failed], meta: meta('worker-a') }]))[0]!.status).toBe('written');
    // The refusal became the hold in the fold (and the holds the reconcile reads), from the job's data.
    expect((await folds.read([KEY])).get(KEY)!.state).toMatchObject({
      job: { id: 'j7', state: 'failed' },
      hold: { reason: 'WriteRefused', desired: 'c'.repeat(64) },
    });
    expect((await new RedisHoldStore(a, prefix).getAll()).get(KEY)).toMatchObject({ reason: 'WriteRefused' });
  });

  it('a fold that changes nothing writes nothing (a resync of 10,000 unchanged resources moves no version)', async () => {
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const keys = Array.from({ length: 200 }, (_, i) => `Deployment/quiet-${i}`);
    const requests = keys.map((key, i) => ({
      key,
      events: [{ ...decided(outcome('noop')), outcome: { ...outcome('noop'), key, name: `quiet-${i}` } }],
      meta: meta('leader'),
    }));
    expect((await folds.fold(requests)).every((o) => o.status === 'written')).toBe(true);
    const counter = await a.get(recordKeys(prefix).stateVersion);
    const versions = await a.hgetall(stateVersionsKey(prefix));
    const again = await folds.fold(requests);
    expect(again.every((o) => o.status === 'unchanged')).toBe(true);
    expect(await a.get(recordKeys(prefix).stateVersion)).toBe(counter);
    expect(await a.hgetall(stateVersionsKey(prefix))).toEqual(versions);
  });

  it("a leader's job that ends before its decision is folded: its result starts the state, and the decision keeps it", async () => {
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const key = 'Deployment/fast';
    const result = { outcome: 'created' as const, new_revision: true, latestRevisionId: 'r1' };
    const entry = jobRecord({ key, jobId: 'j5', meta: meta('worker'), answer: result });
    const job: ResourceEvent = {
      type: 'job-completed',
      jobId: 'j5',
      at: entry.at,
      result,
      version: V1,
      desired: FP,
      operation: 'create-deployment',
    };
    const [done] = await folds.fold([
      { key, events: [job], entries: [entry], meta: meta('worker'), seed: stateOfJob(key, 'create-deployment') },
    ]);
    expect(done).toMatchObject({
      status: 'written',
      state: { job: { id: 'j5', state: 'completed' }, appliedFrom: { id: V1.id } },
    });
    // The leader's decision that enqueued j5, folded after the job's result: what the job did stays.
    const queued = applying(outcome('create'), { jobId: 'j5', operation: 'create-deployment' });
    const [after] = await folds.fold([
      { key, events: [{ ...decided(queued), outcome: { ...queued, key, name: 'fast' } }], meta: meta('leader') },
    ]);
    expect(after).toMatchObject({
      status: 'written',
      state: {
        file: 'web.yaml',
        job: { id: 'j5', state: 'completed' },
        health: { status: 'progressing', revisionId: 'r1' },
        appliedFrom: { id: V1.id },
      },
    });
    expect((await new EventLogStore(a, prefix).history(key)).filter((e) => e.type === 'write_done')).toHaveLength(1);
  });

  it('a job result on a resource with no state (an empty Redis) writes only its entry: no state is made up', async () => {
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const key = 'Deployment/nostate';
    const result = { outcome: 'updated' as const, new_revision: false };
    const entry = jobRecord({ key, jobId: 'j9', meta: meta('worker'), answer: result });
    const [done] = await folds.fold([
      {
        key,
        events: [{ type: 'job-completed', jobId: 'j9', at: entry.at, result }],
        entries: [entry],
        meta: meta('worker'),
      },
    ]);
    expect(done).toMatchObject({ status: 'no-state', state: undefined });
    expect(await a.hexists(recordKeys(prefix).state, key)).toBe(0);
    expect((await new EventLogStore(a, prefix).history(key)).map((e) => e.type)).toEqual(['write_done']);
  });

  it('a decision that makes a state where there was none shows the last job its record lists (converge apply wrote it first)', async () => {
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const key = 'Deployment/applied-first';
    const result = { outcome: 'created' as const, new_revision: true, latestRevisionId: 'r7' };
    const entry = jobRecord({
      key,
      jobId: 'j-apply',
      meta: meta('apply@host:1'),
      operation: 'create-deployment',
      answer: result,
    });
    const job: ResourceEvent = {
      type: 'job-completed',
      jobId: 'j-apply',
      at: entry.at,
      result,
      operation: 'create-deployment',
    };
    expect((await folds.fold([{ key, events: [job], entries: [entry], meta: meta('apply@host:1') }]))[0]).toMatchObject(
      { status: 'no-state' },
    );
    const noop = outcome('noop');
    const [made] = await folds.fold([
      { key, events: [{ ...decided(noop), outcome: { ...noop, key, name: 'applied-first' } }], meta: meta('leader') },
    ]);
    expect(made).toMatchObject({ status: 'written' });
    const state = (await new ResourceFolds(b, prefix, leaseKey(prefix)).read([key])).get(key)!.state;
    expect(state?.job).toEqual({
      id: 'j-apply',
      state: 'completed',
      operation: 'create-deployment',
      outcome: 'created',
      new_revision: true,
      finishedAt: entry.at,
    });
    // A resource whose record lists no job's end gets none.
    const [fresh] = await folds.fold([
      {
        key: 'Deployment/fresh',
        events: [{ ...decided(noop), outcome: { ...noop, key: 'Deployment/fresh', name: 'fresh' } }],
        meta: meta('leader'),
      },
    ]);
    expect(fresh).toMatchObject({ status: 'written', state: { job: null } });
  });

  it('a removed resource loses its failed build log lines in the same script; a history written expires', async () => {
    const folds = new ResourceFolds(a, prefix, leaseKey(prefix));
    const key = 'Deployment/gone';
    const queued = applying(outcome('update'), { jobId: 'j7', operation: 'patch-deployment' });
    await folds.fold([
      { key, events: [{ ...decided(queued), outcome: { ...queued, key, name: 'gone' } }], meta: meta('leader') },
    ]);
    const ttl = await a.pttl(recordKeys(prefix).history(key));
    expect(ttl).toBeGreaterThan(LOG_MAX_AGE_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(LOG_MAX_AGE_MS);
    await new EventLogStore(a, prefix).setBuildLog(key, { revisionId: 'r1', lines: ['error: build failed'] });
    expect(await a.hexists(recordKeys(prefix).buildLogs, key)).toBe(1);
    const [removed] = await folds.fold([{ key, events: [], meta: meta('leader'), remove: true }]);
    expect(removed).toMatchObject({ status: 'written' });
    expect(await a.hexists(recordKeys(prefix).state, key)).toBe(0);
    expect(await a.hexists(recordKeys(prefix).buildLogs, key)).toBe(0);
  });
});
