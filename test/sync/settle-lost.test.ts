// A job's own lost write settled by reading only: recorded from live state, a newer job's write left alone.
import { afterEach, describe, expect, it } from 'vitest';
import { fieldHash } from '../../src/core/kinds/deployment/three-way.js';
import type { PendingWrite } from '../../src/core/kinds/index.js';
import type { LiveDeployment } from '../../src/core/model.js';
import { JobAppliedState } from '../../src/jobs/runner/job-applied-state.js';
import { settleLostWrite } from '../../src/sync/sync.js';
import { data } from '../helpers/job-fixtures.js';
import { seededApi } from '../helpers/seeded-api.js';

const KEY = 'Deployment/api';
const IMAGE = 'source_revision_config.image_uri';
const MAX_SCALE = 'source_config.resource_spec.max_scale';
const VERSION = { kind: 'content' as const, id: 'abcdef012345', readAt: '2026-01-01T00:00:00.000Z' };

describe("settleLostWrite (a former leader's job, dropped, settles its own lost write)", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup() {
    const { emulator, store, client, live } = await seededApi('settle-lost', cleanups);
    const job = (jobId: string) => new JobAppliedState(store, { ...data('api', 1), manifestVersion: VERSION }, jobId);
    const settle = (jobId: string) =>
      settleLostWrite(
        { kind: 'Deployment', name: 'api', key: KEY },
        jobId,
        { service: client, appliedState: job(jobId) },
        live.id,
      );
    const nonGets = () => emulator.requestLog.filter((e) => e.method !== 'GET');
    return { emulator, store, client, live, job, settle, nonGets };
  }

  /** The pending write of a PATCH as the job's sync marks it. */
  function patchPending(fields: Record<string, unknown>, live: LiveDeployment, startsRevision: boolean): PendingWrite {
    const hashes = Object.fromEntries(Object.entries(fields).map(([path, value]) => [path, fieldHash(value)]));
    return {
      op: 'patch',
      secrets: {},
      fields: hashes,
      sentAt: new Date().toISOString(),
      revisionBefore: live.latest_revision_id ?? null,
      startsRevision,
    };
  }

  it('a PATCH that started a revision, its answer lost, is recorded once from live state; only GETs sent', async () => {
    const { emulator, store, client, live, job, settle, nonGets } = await setup();
    await job('7').setPending(KEY, patchPending({ [IMAGE]: 'docker.io/acme/api:2' }, live, true));
    expect((await store.getPending(KEY))?.jobId).toBe('7');
    await client.patchDeployment(live.id, { source_revision_config: { image_uri: 'docker.io/acme/api:2' } });
    emulator.resetLog();

    const settled = await settle('7');
    expect(settled).toMatchObject({ landed: { outcome: 'updated', new_revision: true, deploymentId: live.id } });
    const after = await store.read(KEY);
    expect(after.pending).toBeUndefined();
    expect(after.applied?.manifestVersion).toEqual(VERSION);
    // What the settled write did, recorded with it (its job's result but the message): a lost fold is rebuilt from it.
    const { message: _message, ...answer } = settled && settled.landed ? settled.landed : { message: undefined };
    expect(after.applied?.answer).toEqual(answer);
    expect(after.applied?.fields?.[IMAGE]).toEqual({
      sent: fieldHash('docker.io/acme/api:2'),
      answered: fieldHash('docker.io/acme/api:2'),
    });
    // a second settle of the same job finds nothing of its own left: nothing recorded twice
    expect(await settle('7')).toBeUndefined();
    expect(nonGets()).toEqual([]);
  });

  it('a PATCH that starts no revision landed when live state reads every field as sent', async () => {
    const { client, store, live, job, settle, nonGets, emulator } = await setup();
    await job('9').setPending(KEY, patchPending({ [MAX_SCALE]: 3 }, live, false));
    await client.patchDeployment(live.id, { source_config: { resource_spec: { max_scale: 3 } } });
    emulator.resetLog();
    expect(await settle('9')).toMatchObject({ landed: { outcome: 'updated', new_revision: false } });
    expect(await store.getPending(KEY)).toBeUndefined();
    expect(nonGets()).toEqual([]);
  });

  it('a write that did not land: its pending write is removed, nothing recorded, nothing sent', async () => {
    const { store, live, job, settle, nonGets } = await setup();
    await job('11').setPending(KEY, patchPending({ [IMAGE]: 'docker.io/acme/api:2' }, live, true));
    expect(await settle('11')).toEqual({ landed: false });
    expect(await store.read(KEY)).toEqual({ applied: undefined, pending: undefined });
    expect(nonGets()).toEqual([]);
  });

  it('the pending write of a newer job is never settled in its stead, landed or not', async () => {
    const { store, client, live, job, settle } = await setup();
    await job('12').setPending(KEY, patchPending({ [IMAGE]: 'docker.io/acme/api:2' }, live, true));
    await job('13').setPending(KEY, patchPending({ [IMAGE]: 'docker.io/acme/api:3' }, live, true));
    await client.patchDeployment(live.id, { source_revision_config: { image_uri: 'docker.io/acme/api:3' } });
    expect(await settle('12')).toBeUndefined();
    expect((await store.getPending(KEY))?.jobId).toBe('13');
    expect(await store.get(KEY)).toBeUndefined();
  });

  it('the store settles only the pending write it was given: same job, same send time', async () => {
    const { store, live, job } = await setup();
    const first = patchPending({ [IMAGE]: 'docker.io/acme/api:2' }, live, true);
    await job('14').setPending(KEY, first);
    const stored = (await store.getPending(KEY))!;
    expect(await store.clearSettled(KEY, { ...stored, sentAt: '2000-01-01T00:00:00.000Z' })).toBe(false);
    expect(await store.clearSettled(KEY, { ...stored, jobId: '15' })).toBe(false);
    // a pending write that names no job (an older converge's) is left to its next sync
    expect(await store.clearSettled(KEY, first)).toBe(false);
    expect(await store.getPending(KEY)).toEqual(stored);
    expect(await store.clearSettled(KEY, stored)).toBe(true);
    expect(await store.getPending(KEY)).toBeUndefined();
  });
});
