// apply's waves: the order the jobs run in, the stop at a failed rollout, wave_max_in_flight's parts, and apply without --wait.
import { describe, expect, it } from 'vitest';
import { resourceKey, type AppliedRecord, type DesiredResource, type PlanChange } from '../core/model.js';
import type { DecidedJob } from '../jobs/queue/decided-jobs.js';
import type { ResourceResult } from './apply-state.js';
import type { JobEnd } from './wait-jobs.js';
import { isWaved, runWaves, waveSteps, type WavePorts } from './waves.js';

function job(name: string, action: PlanChange['action'] = 'update'): DecidedJob {
  return { change: { kind: 'Deployment', name, action, new_revision: true, fields: [], reason: null } };
}

function resources(waves: Record<string, number>): Map<string, DesiredResource> {
  return new Map(
    Object.entries(waves).map(([name, wave]) => [
      resourceKey('Deployment', name),
      { kind: 'Deployment', name, wave } as DesiredResource,
    ]),
  );
}

/** Ports that record each run and follow, and fail the rollout of the names in `failing`. */
function ports(failing: readonly string[] = []): WavePorts & { runs: string[][]; follows: string[][] } {
  const runs: string[][] = [];
  const follows: string[][] = [];
  return {
    runs,
    follows,
    run: (changes) => {
      runs.push(changes.map((c) => c.change.name));
      return Promise.resolve(
        changes.map((c): JobEnd => ({
          kind: 'Deployment',
          name: c.change.name,
          key: resourceKey('Deployment', c.change.name),
          jobId: `j-${c.change.name}`,
          event: { type: 'interrupted', message: 'x' },
        })),
      );
    },
    results: (ends) =>
      ends.map((e): ResourceResult => ({
        kind: e.kind,
        name: e.name,
        key: e.key,
        status: 'done',
        new_revision: true,
        deploymentId: `d-${e.name}`,
        jobId: e.jobId,
      })),
    follow: (results) => {
      follows.push(results.filter((r) => r.startedBy === 'apply').map((r) => r.name));
      for (const r of results) r.revision = failing.includes(r.name) ? 'failed' : 'active';
      for (const r of results) if (failing.includes(r.name)) r.revisionStatus = 'BUILD_FAILED';
      return Promise.resolve();
    },
    interrupted: () => false,
  };
}

/** Applied records of deleted resources, each with the wave its manifest last declared. */
function records(waves: Record<string, number | undefined>): Map<string, AppliedRecord> {
  return new Map(
    Object.entries(waves).map(([name, wave]) => [
      resourceKey('Deployment', name),
      { secrets: {}, appliedAt: '', ...(wave === undefined ? {} : { wave }) },
    ]),
  );
}

const TEN = resources({ canary: 0, a: 1, b: 1, c: 1, d: 2, e: 2, f: 2, g: 2, h: 2, i: 2 });
const JOBS = ['i', 'a', 'canary', 'd', 'b', 'e', 'c', 'f', 'g', 'h'].map((n) => job(n));

describe('waveSteps', () => {
  it('ascending waves, plan order within one, deletes after the last; one wave is not waved', () => {
    const steps = waveSteps([...JOBS, job('gone', 'delete')], TEN);
    expect(steps.map((s) => [s.wave, s.changes.map((c) => c.change.name).join(',')])).toEqual([
      [0, 'canary'],
      [1, 'a,b,c'],
      [2, 'i,d,e,f,g,h'],
      ['prune', 'gone'],
    ]);
    expect(isWaved(steps)).toBe(true);
    expect(isWaved(waveSteps([job('a'), job('b'), job('gone', 'delete')], TEN))).toBe(false);
  });

  it('apply --plan: the waves the saved plan recorded, not the manifests read now', () => {
    const steps = waveSteps([job('a'), job('d')], TEN, [
      {
        kind: 'Deployment',
        name: 'a',
        action: 'update',
        op: 'update',
        fields: [],
        wave: 5,
        secrets: {},
        seen: { live: null, applied_at: null },
      },
      {
        kind: 'Deployment',
        name: 'd',
        action: 'update',
        op: 'update',
        fields: [],
        secrets: {},
        seen: { live: null, applied_at: null },
      },
    ]);
    expect(steps.map((s) => [s.wave, s.changes.map((c) => c.change.name).join(',')])).toEqual([
      [0, 'd'],
      [5, 'a'],
    ]);
  });

  it('deletes after the last wave in descending order of the wave their manifest last declared (the applied record keeps it)', () => {
    const applied = records({ x: 1, y: 2, z: undefined, w: 1 });
    const deletes = ['x', 'y', 'z', 'w'].map((n) => job(n, 'delete'));
    const steps = waveSteps([job('a'), ...deletes], TEN, undefined, applied);
    expect(steps.map((s) => [s.wave, s.deleteWave, s.changes.map((c) => c.change.name).join(',')])).toEqual([
      [1, undefined, 'a'],
      ['prune', 2, 'y'],
      ['prune', 1, 'x,w'],
      ['prune', 0, 'z'],
    ]);
    expect(isWaved(steps)).toBe(true);
    // Deletes all of one wave: one step, as before.
    expect(waveSteps([job('a'), job('z', 'delete')], TEN, undefined, applied).map((s) => s.deleteWave)).toEqual([
      undefined,
      undefined,
    ]);
  });
});

describe('runWaves', () => {
  it('runs and follows wave by wave', async () => {
    const p = ports();
    const out = await runWaves(waveSteps(JOBS, TEN), p, { wait: true });
    expect(p.runs).toEqual([['canary'], ['a', 'b', 'c'], ['i', 'd', 'e', 'f', 'g', 'h']]);
    expect(p.follows).toEqual(p.runs);
    expect(out.failure).toBeUndefined();
    expect(out.held).toEqual([]);
  });

  it('a failed rollout in wave 1 runs nothing of wave 2 and holds its six, naming the wave and the resource', async () => {
    const p = ports(['b']);
    const out = await runWaves(waveSteps([...JOBS, job('gone', 'delete')], TEN), p, { wait: true });
    expect(p.runs).toEqual([['canary'], ['a', 'b', 'c']]);
    expect(out.failure).toMatchObject({ wave: 1, key: 'Deployment/b' });
    expect(out.held.map((h) => h.key)).toEqual(['i', 'd', 'e', 'f', 'g', 'h', 'gone'].map((n) => `Deployment/${n}`));
    expect(out.held[0]!.message).toMatch(/^wave 2 waits behind wave 1, where Deployment\/b failed \(/);
    expect(out.held.at(-1)!.message).toMatch(/^the deletes after the last wave wait/);
  });

  it('wave_max_in_flight: a wave in parts of at most that many, each followed before the next; a failure holds the rest of its wave', async () => {
    const p = ports(['f']);
    const out = await runWaves(waveSteps(JOBS, TEN), p, { wait: true, maxInFlight: () => 2 });
    expect(p.runs).toEqual([['canary'], ['a', 'b'], ['c'], ['i', 'd'], ['e', 'f']]);
    expect(out.held.map((h) => h.key)).toEqual(['Deployment/g', 'Deployment/h']);
  });

  it('without --wait: the first wave only, nothing followed, the others waiting', async () => {
    const p = ports();
    const out = await runWaves(waveSteps(JOBS, TEN), p, { wait: false });
    expect(p.runs).toEqual([['canary']]);
    expect(p.follows).toEqual([]);
    expect(out.waiting).toEqual([1, 2]);
    expect(out.held).toHaveLength(9);
  });

  it('deletes by wave: each step after the one before is done, without --wait too; a failed delete holds the lower ones', async () => {
    const applied = records({ x: 1, y: 2 });
    const steps = waveSteps(
      ['x', 'y', 'z'].map((n) => job(n, 'delete')),
      TEN,
      undefined,
      applied,
    );
    const p = ports();
    await runWaves(steps, p, { wait: false });
    expect(p.runs).toEqual([['y'], ['x'], ['z']]);
    const failing = ports(['y']);
    const out = await runWaves(steps, failing, { wait: true });
    expect(failing.runs).toEqual([['y']]);
    expect(out.held.map((h) => h.key)).toEqual(['Deployment/x', 'Deployment/z']);
  });
});
