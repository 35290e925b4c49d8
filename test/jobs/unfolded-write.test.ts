// A former leader's write recorded in the applied state and never folded: the worker that drops its job folds it once.
import type { Job } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { fieldHash } from '../../src/core/kinds/deployment/three-way.js';
import { stateOfJob } from '../../src/core/resource-state.js';
import { JobAppliedState } from '../../src/jobs/runner/job-applied-state.js';
import { createProcessor } from '../../src/jobs/runner/processor.js';
import { leaseKey } from '../../src/leader/lease.js';
import { parseHistoryEntry, recordKeys } from '../../src/store/event-log.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
import { data } from '../helpers/job-fixtures.js';
import { seededApi } from '../helpers/seeded-api.js';

const KEY = 'Deployment/api';
const IMAGE = 'source_revision_config.image_uri';
const VERSION = { kind: 'content' as const, id: 'abcdef012345', readAt: '2026-01-01T00:00:00.000Z' };
const DROPPED = 'enqueued by a former leader (fencing token 3, current 4); dropped, nothing sent';

describe("a former leader's write recorded and not folded, its job dropped by the new leader's worker", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup() {
    const { emulator, redis, prefix, store, client, live } = await seededApi('unfolded-write', cleanups);
    const job = { ...data('api', 1), manifestVersion: VERSION, fence: 3 };
    // Each worker its own folds (no cache shared): a new leader's worker, or two of them.
    const worker = (by: string) =>
      createProcessor({
        client,
        store,
        env: {},
        log: { info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined },
        rateLimit: async () => undefined,
        stale: async () => ({ code: 'former_leader', message: DROPPED }),
        record: { folds: new ResourceFolds(redis, prefix, leaseKey(prefix)), by },
      });
    const writesDone = async (jobId: string) => {
      const entries = await redis.xrange(recordKeys(prefix).history(KEY), '-', '+');
      return entries
        .map(([, fields]) => parseHistoryEntry(fields[1]))
        .filter((e) => e?.type === 'write_done' && e.job?.id === jobId);
    };
    const stateOf = async () => (await new ResourceFolds(redis, prefix, leaseKey(prefix)).read([KEY])).get(KEY)?.state;
    return { emulator, redis, prefix, store, client, live, job, worker, writesDone, stateOf };
  }

  it('folds one write_done from the applied record (appliedFrom, its revision), GETs only, never again', async () => {
    const { emulator, redis, prefix, store, client, live, job, worker, writesDone, stateOf } = await setup();
    // The state before: an earlier job j0 folded, its revision the deployment's first.
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
    // Job j1 of the former leader: its PATCH answered, recorded (no pending left), the leader killed before the fold.
    const answered = await client.patchDeployment(live.id, {
      source_revision_config: { image_uri: 'docker.io/acme/api:2' },
    });
    expect(answered.latest_revision_id).not.toBe(live.latest_revision_id);
    const hash = fieldHash('docker.io/acme/api:2');
    await new JobAppliedState(store, job, 'j1').recordWrite(KEY, {
      secrets: {},
      fields: { [IMAGE]: { sent: hash, answered: hash } },
      ownership: { origin: 'adopted', id: live.id },
    });
    expect(await store.read(KEY)).toMatchObject({
      applied: { jobId: 'j1', manifestVersion: VERSION },
      pending: undefined,
    });
    expect((await stateOf())?.job?.id).toBe('j0');
    emulator.resetLog();

    // Two workers drop the job at once (its lock expired while one ran it): one folds it.
    const drop = { id: 'j1', data: job, attemptsMade: 0 } as unknown as Job;
    const results = await Promise.all([worker('worker-b')(drop), worker('worker-c')(drop)]);
    for (const result of results) {
      expect(result).toMatchObject({
        outcome: 'updated',
        new_revision: true,
        latestRevisionId: answered.latest_revision_id,
        deploymentId: live.id,
      });
      expect(result.notRun).toBeUndefined();
    }
    const done = await writesDone('j1');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ reason: 'updated', revision: { id: answered.latest_revision_id } });
    expect(done[0]!.message).toContain('recorded by the former leader');
    const state = await stateOf();
    expect(state?.job).toMatchObject({ id: 'j1', state: 'completed', outcome: 'updated' });
    expect(state?.appliedFrom).toMatchObject({ kind: 'content', id: VERSION.id });
    expect(state?.health.revisionId).toBe(answered.latest_revision_id);

    // A second drop of the same job (handed back once more) folds nothing more.
    const again = await worker('worker-d')(drop);
    expect(again).toMatchObject({ notRun: 'former_leader' });
    expect(await writesDone('j1')).toHaveLength(1);
    expect(emulator.requestLog.filter((e) => e.method !== 'GET')).toEqual([]);
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
});
