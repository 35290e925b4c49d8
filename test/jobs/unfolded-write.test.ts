// A former leader's write recorded in the applied state and never folded: the worker that drops its job folds it once.
import type { Job } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { fieldHash } from '../../src/core/kinds/deployment/three-way.js';
import { stateOfJob } from '../../src/core/resource-state.js';
import type { Redis } from 'ioredis';
import type { DeploymentResource, LiveDeployment } from '../../src/core/model.js';
import { buildJobData } from '../../src/jobs/queue/jobs.js';
import { JobAppliedState } from '../../src/jobs/runner/job-applied-state.js';
import { createProcessor } from '../../src/jobs/runner/processor.js';
import { UNFOLDED_WRITE } from '../../src/jobs/runner/unfolded-write.js';
import { leaseKey } from '../../src/leader/lease.js';
import { parseHistoryEntry, recordKeys } from '../../src/store/event-log.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
import { data, decidedWrite, deployment } from '../helpers/job-fixtures.js';
import { seededApi, seededProcessor } from '../helpers/seeded-api.js';
import { SLACK_SECRET_VALUE, slackProvider } from '../plan/fixtures.js';

const KEY = 'Deployment/api';
const IMAGE = 'source_revision_config.image_uri';
const VERSION = { kind: 'content' as const, id: 'abcdef012345', readAt: '2026-01-01T00:00:00.000Z' };
const DROPPED = 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent';
const QUIET = { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined };

describe("a former leader's write recorded and not folded, its job dropped by the new leader's worker", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup() {
    const api = await seededApi('unfolded-write', cleanups);
    const { emulator, redis, prefix, store, client, live } = api;
    const job = { ...data('api', 1), manifestVersion: VERSION, fence: 3 };
    // Each worker its own folds (no cache shared): a new leader's worker, or two of them.
    const worker = (by: string) =>
      seededProcessor(api, by, { stale: async () => ({ code: 'former_leader', message: DROPPED }) });
    const writesDone = async (jobId: string) => {
      const entries = await redis.xrange(recordKeys(prefix).history(KEY), '-', '+');
      return entries
        .map(([, fields]) => parseHistoryEntry(fields[1]))
        .filter((e) => e?.type === 'write_done' && e.job?.id === jobId);
    };
    const stateOf = async () => (await new ResourceFolds(redis, prefix, leaseKey(prefix)).read([KEY])).get(KEY)?.state;
    return { emulator, redis, prefix, store, client, live, job, worker, writesDone, stateOf };
  }

  /** The state before: an earlier job j0 folded, its revision the deployment's first. */
  async function foldedEarlier(redis: Redis, prefix: string, live: LiveDeployment): Promise<void> {
    const folds = new ResourceFolds(redis, prefix, leaseKey(prefix));
    const meta = { at: new Date().toISOString(), by: 'leader-a' };
    const earlier = {
      outcome: 'updated' as const,
      new_revision: true,
      deploymentId: live.id,
      latestRevisionId: live.latest_revision_id ?? null,
    };
    const j0 = {
      type: 'job-completed' as const,
      jobId: 'j0',
      at: meta.at,
      result: earlier,
      operation: 'patch-deployment',
    };
    await folds.fold([{ key: KEY, events: [j0], meta, seed: stateOfJob(KEY, 'patch-deployment') }]);
  }

  it('folds one write_done from the applied record its sync wrote (the answer recorded with it), sends nothing, never again', async () => {
    const { emulator, redis, prefix, store, client, live, worker, writesDone, stateOf } = await setup();
    await foldedEarlier(redis, prefix, live);
    // Job j1 of the former leader: its PATCH answered and recorded by its sync, the leader killed before the fold
    // (its processor folds nothing).
    const base = deployment('api', 1);
    const resource: DeploymentResource = {
      ...base,
      spec: { ...base.spec, source_revision_config: { image_uri: 'docker.io/acme/api:2' } },
    };
    const write = decidedWrite(resource, live);
    const job = {
      ...buildJobData(resource, 'patch-deployment', { origin: 'daemon', write, deploymentId: live.id }),
      manifestVersion: VERSION,
      fence: 3,
    };
    const formerLeader = createProcessor({ client, store, env: {}, log: QUIET, rateLimit: async () => undefined });
    const ran = await formerLeader({ id: 'j1', data: job, attemptsMade: 0, opts: {} } as unknown as Job);
    expect(ran).toMatchObject({ outcome: 'adopted', new_revision: true, deploymentId: live.id });
    expect(ran.latestRevisionId).not.toBe(live.latest_revision_id);
    const recorded = await store.read(KEY);
    expect(recorded).toMatchObject({ applied: { jobId: 'j1', manifestVersion: VERSION }, pending: undefined });
    // What the answer said, recorded with the write: the job's result but its message and fields.
    expect(recorded.applied?.answer).toEqual({
      outcome: ran.outcome,
      new_revision: ran.new_revision,
      deploymentId: ran.deploymentId,
      latestRevisionId: ran.latestRevisionId,
    });
    expect((await stateOf())?.job?.id).toBe('j0');
    emulator.resetLog();

    // Two workers drop the job at once (its lock expired while one ran it): one folds it.
    const drop = { id: 'j1', data: job, attemptsMade: 0 } as unknown as Job;
    const results = await Promise.all([worker('worker-b')(drop), worker('worker-c')(drop)]);
    for (const result of results) {
      expect(result).toEqual({ ...recorded.applied!.answer, message: UNFOLDED_WRITE });
    }
    const done = await writesDone('j1');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ reason: 'adopted', revision: { id: ran.latestRevisionId } });
    expect(done[0]!.message).toContain('recorded by the former leader');
    const state = await stateOf();
    expect(state?.job).toMatchObject({ id: 'j1', state: 'completed', outcome: 'adopted' });
    expect(state?.appliedFrom).toEqual({ ...VERSION, appliedAt: recorded.applied!.appliedAt });
    expect(state?.health.revisionId).toBe(ran.latestRevisionId);

    // A second drop of the same job (handed back once more) folds nothing more.
    const again = await worker('worker-d')(drop);
    expect(again).toMatchObject({ notRun: 'former_leader' });
    expect(await writesDone('j1')).toHaveLength(1);
    expect(emulator.requestLog).toEqual([]);
  });

  it("the record says no revision started while the service's latest moved since: no new revision, 0 requests", async () => {
    const { emulator, redis, prefix, store, client, live, job, worker, writesDone, stateOf } = await setup();
    await foldedEarlier(redis, prefix, live);
    // j1's write started no revision (its answer, recorded with it by its sync), and its leader died before the fold.
    const answer = {
      outcome: 'updated' as const,
      new_revision: false,
      deploymentId: live.id,
      latestRevisionId: live.latest_revision_id ?? null,
    };
    await new JobAppliedState(store, job, 'j1').recordWrite(KEY, {
      secrets: {},
      ownership: { origin: 'adopted', id: live.id },
      answer,
    });
    // Then a revision is started outside converge: the deployment's latest revision is no longer the one j1 saw.
    const outside = await client.patchDeployment(live.id, {
      source_revision_config: { image_uri: 'docker.io/acme/api:9' },
    });
    expect(outside.latest_revision_id).not.toBe(live.latest_revision_id);
    emulator.resetLog();

    const result = await worker('worker-b')({ id: 'j1', data: job, attemptsMade: 0 } as unknown as Job);
    expect(result).toEqual({ ...answer, message: UNFOLDED_WRITE });
    const done = await writesDone('j1');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ reason: 'updated' });
    expect(done[0]!.revision ?? null).toBeNull();
    const state = await stateOf();
    expect(state?.job).toMatchObject({ id: 'j1', state: 'completed', new_revision: false });
    expect(state?.health.revisionId).not.toBe(outside.latest_revision_id);
    expect(emulator.requestLog).toEqual([]);
  });

  it("folds nothing from a record that says nothing of the answer (an older converge's), and sends nothing", async () => {
    const { emulator, redis, prefix, store, live, job, worker, writesDone } = await setup();
    await foldedEarlier(redis, prefix, live);
    await new JobAppliedState(store, job, 'j1').recordWrite(KEY, { secrets: {} });
    emulator.resetLog();
    const result = await worker('worker-b')({ id: 'j1', data: job, attemptsMade: 0 } as unknown as Job);
    expect(result).toMatchObject({ outcome: 'unchanged', notRun: 'former_leader' });
    expect(await writesDone('j1')).toHaveLength(0);
    expect(emulator.requestLog).toEqual([]);
  });

  it("folds nothing for a job whose write the record does not name (another job's write, or none)", async () => {
    const { emulator, store, live, job, worker, writesDone } = await setup();
    const hash = fieldHash('docker.io/acme/api:1');
    await new JobAppliedState(store, job, 'j2').recordWrite(KEY, {
      secrets: {},
      fields: { [IMAGE]: { sent: hash, answered: hash } },
      ownership: { origin: 'adopted', id: live.id },
    });
    emulator.resetLog();
    const result = await worker('worker-b')({ id: 'j1', data: job, attemptsMade: 0 } as unknown as Job);
    expect(result).toMatchObject({ outcome: 'unchanged', notRun: 'former_leader' });
    expect(await writesDone('j1')).toHaveLength(0);
    expect(emulator.requestLog).toEqual([]);
  });

  it("an OAuth provider's create, recorded and not folded: folded once from its record, 0 requests", async () => {
    const { emulator, redis, prefix, store, client, worker } = await setup();
    const key = 'OAuthProvider/slack';
    const env = { SLACK_CLIENT_SECRET: SLACK_SECRET_VALUE };
    const provider = slackProvider();
    const job = {
      ...buildJobData(provider, 'create-provider', { origin: 'daemon', write: decidedWrite(provider, undefined, env) }),
      manifestVersion: VERSION,
      fence: 3,
    };
    // The former leader's worker creates it and records the write with its answer; its leader dies before the fold.
    const formerLeader = createProcessor({ client, store, env, log: QUIET, rateLimit: async () => undefined });
    const ran = await formerLeader({ id: 'p1', data: job, attemptsMade: 0, opts: {} } as unknown as Job);
    expect(ran).toMatchObject({ outcome: 'created', new_revision: false });
    const recorded = await store.read(key);
    expect(recorded.applied).toMatchObject({ jobId: 'p1', answer: { outcome: 'created', new_revision: false } });
    expect(JSON.stringify(recorded)).not.toContain(SLACK_SECRET_VALUE);
    emulator.resetLog();

    const drop = { id: 'p1', data: job, attemptsMade: 0 } as unknown as Job;
    expect(await worker('worker-b')(drop)).toEqual({ ...recorded.applied!.answer, message: UNFOLDED_WRITE });
    const history = await redis.xrange(recordKeys(prefix).history(key), '-', '+');
    const done = history.map(([, fields]) => parseHistoryEntry(fields[1])).filter((e) => e?.type === 'write_done');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ reason: 'created', job: { id: 'p1' } });
    const state = (await new ResourceFolds(redis, prefix, leaseKey(prefix)).read([key])).get(key)?.state;
    expect(state?.job).toMatchObject({ id: 'p1', state: 'completed', outcome: 'created' });
    expect(state?.appliedFrom).toEqual({ ...VERSION, appliedAt: recorded.applied!.appliedAt });
    expect(await worker('worker-c')(drop)).toMatchObject({ notRun: 'former_leader' });
    expect(emulator.requestLog).toEqual([]);
  });
});
