// Two workers whose wall clocks differ write one resource in turn: the later write is the one shown (Redis' clock).
import { afterEach, describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import type { Outcome } from '../../src/core/decide.js';
import type { DeploymentResource } from '../../src/core/model.js';
import type { ResourceEvent, ResourceState } from '../../src/core/resource-state-model.js';
import { buildJobData } from '../../src/jobs/queue/jobs.js';
import { leaseKey } from '../../src/leader/lease.js';
import { redisNow } from '../../src/store/clock.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
import { decidedWrite, deployment } from '../helpers/job-fixtures.js';
import { seededApi, seededProcessor } from '../helpers/seeded-api.js';

const KEY = 'Deployment/api';
const HOUR = 3_600_000;
const V1 = { kind: 'content' as const, id: '111111111111', readAt: '2026-01-01T00:00:00.000Z' };
const V2 = { kind: 'content' as const, id: '222222222222', readAt: '2026-01-01T00:00:01.000Z' };

/** A reconcile's decision that `api` has nothing to write (the decision's own fields; the test reads appliedFrom). */
const NOOP: Outcome = {
  key: KEY,
  kind: 'Deployment',
  name: 'api',
  action: 'noop',
  sync: { status: 'synced', reason: 'Synced', message: 'in sync' },
  health: { status: 'healthy', reason: 'RevisionDeployed', message: 'deployed' },
  write: null,
  skip: { code: 'Synced', message: 'in sync' },
  drift: null,
};

describe("the applied record's time: Redis' clock, whichever worker wrote", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('a worker an hour fast writes first, one on time second: the decision that read the first record shows the second', async () => {
    const api = await seededApi('applied-clock', cleanups);
    const { redis, prefix, store, client, live } = api;
    const worker = (by: string, now: () => Date) => seededProcessor(api, by, { now });
    const jobOf = async (image: string, version: typeof V1) => {
      const base = deployment('api', 1);
      const resource: DeploymentResource = {
        ...base,
        spec: {
          ...base.spec,
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: image },
        },
      };
      const current = await client.readDeployment(live.id);
      const write = decidedWrite(resource, current);
      expect(write.fields).toEqual(['source_revision_config.image_uri']);
      return buildJobData(resource, 'patch-deployment', {
        origin: 'test',
        write,
        deploymentId: live.id,
        manifestVersion: version,
      });
    };
    const run = (processor: ReturnType<typeof worker>, id: string, data: unknown) =>
      processor({ id, data, attemptsMade: 0, opts: { attempts: 1 } } as unknown as Job);

    // The resource's state as a first reconcile made it (nothing written by converge yet).
    const folds = new ResourceFolds(redis, prefix, leaseKey(prefix));
    const decision = (appliedFrom?: ResourceState['appliedFrom']): ResourceEvent => ({
      type: 'decided',
      outcome: NOOP,
      context: { file: 'apps/a.yaml', planReason: null, drift: null, heldAtLastGood: false, appliedFrom },
    });
    const meta = { at: new Date().toISOString(), by: 'leader' };
    expect((await folds.fold([{ key: KEY, events: [decision()], meta }]))[0]).toMatchObject({ status: 'written' });

    // Worker A, its wall clock an hour ahead of Redis', writes V1 (and folds its result).
    const fast = worker('worker-a', () => new Date(Date.now() + HOUR));
    expect(await run(fast, 'a1', await jobOf('docker.io/acme/api:2', V1))).toMatchObject({ outcome: 'adopted' });
    const first = await store.get(KEY);
    expect(first).toMatchObject({ jobId: 'a1', manifestVersion: V1 });
    // A reconcile reads the applied record now: V1's write.
    const read: NonNullable<ResourceState['appliedFrom']> = { ...first!.manifestVersion!, appliedAt: first!.appliedAt };

    // Worker B, its clock right, writes V2 next (and folds its result) before that reconcile's decision is folded.
    const onTime = worker('worker-b', () => new Date());
    expect(await run(onTime, 'b1', await jobOf('docker.io/acme/api:3', V2))).toMatchObject({ outcome: 'updated' });
    const second = await store.get(KEY);
    expect(second).toMatchObject({ jobId: 'b1', manifestVersion: V2 });

    // The decision that read V1's record is folded now: the later write, V2, is the one shown.
    expect((await folds.read([KEY])).get(KEY)?.state?.appliedFrom).toMatchObject({ id: V2.id });
    const [outcome] = await folds.fold([{ key: KEY, events: [decision(read)], meta }]);
    expect(outcome).toMatchObject({ status: 'written' });
    const shown = (await folds.read([KEY])).get(KEY)?.state?.appliedFrom;
    expect(shown).toEqual({ ...V2, appliedAt: second!.appliedAt });

    // Each record's time is Redis' at its write (within this test's run), not its worker's wall clock.
    const redisAt = await redisNow(redis);
    for (const record of [first!, second!]) {
      expect(Date.parse(record.appliedAt)).toBeLessThanOrEqual(redisAt);
      expect(Date.parse(record.appliedAt)).toBeGreaterThan(redisAt - 60_000);
    }
    expect(Date.parse(second!.appliedAt)).toBeGreaterThanOrEqual(Date.parse(first!.appliedAt));
  });
});
