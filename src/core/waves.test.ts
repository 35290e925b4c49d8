// Rollout waves, the pure half: the annotation parsed, the waves of a plan's writes, the grouping apply follows, the WaveHeld hold.
import { describe, expect, it } from 'vitest';
import { parseManifestBytes } from './manifest/parse.js';
import { resourceKey, type DesiredResource, type PlanChange } from './model.js';
import type { Outcome } from './decide.js';
import { gateWaves, groupByWave, markWaves, waveHeldHold, waveOf } from './waves.js';

function manifest(name: string, wave?: string): string {
  const annotations = wave === undefined ? '' : `  annotations: { converge/wave: ${wave} }\n`;
  return `apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: ${name}\n${annotations}spec:\n  source: external_docker\n  source_config: { resource_spec: { max_scale: 2 } }\n  source_revision_config: { image_uri: docker.io/acme/a:1 }\n`;
}

function parse(text: string): ReturnType<typeof parseManifestBytes> {
  return parseManifestBytes('apps/a.yaml', new TextEncoder().encode(text), { allowLiteralSecrets: false });
}

function change(name: string, action: PlanChange['action'] = 'update'): PlanChange {
  return { kind: 'Deployment', name, action, new_revision: true, fields: [], reason: null };
}

function resources(waves: Record<string, number | undefined>): Map<string, DesiredResource> {
  return new Map(
    Object.entries(waves).map(([name, wave]) => [
      resourceKey('Deployment', name),
      {
        kind: 'Deployment',
        name,
        suspend: false,
        location: { file: 'a.yaml', line: 1, column: 1 },
        spec: { source: 'internal_docker' },
        ...(wave === undefined ? {} : { wave }),
      } satisfies DesiredResource,
    ]),
  );
}

describe('converge/wave', () => {
  it('reads an integer as a string, negative allowed; no annotation and "0" are wave 0, left out of the model', () => {
    const two = parse(manifest('a', '"2"'));
    expect(two.diagnostics).toEqual([]);
    expect(waveOf(two.resources[0])).toBe(2);
    expect(parse(manifest('a', '"-1"')).resources[0]!.wave).toBe(-1);
    expect(parse(manifest('a', '"0"')).resources[0]).not.toHaveProperty('wave');
    expect(parse(manifest('a')).resources[0]).not.toHaveProperty('wave');
  });

  it('refuses a value that is not an integer at its place, saying what to write', () => {
    const unquoted = parse(manifest('a', '2'));
    expect(unquoted.resources).toEqual([]);
    expect(unquoted.diagnostics.map((d) => `${d.line}:${d.column} ${d.message}`).join('\n')).toMatch(
      /^5:\d+ .*annotation values are strings: quote it, e\.g\. "2"/m,
    );
    const word = parse(manifest('a', 'canary'));
    expect(word.diagnostics.map((d) => d.message).join('\n')).toContain('must be an integer, e.g. "0", "1" or "-1"');
    expect(parse(manifest('a', '"1.5"')).resources).toEqual([]);
  });
});

describe('markWaves', () => {
  it('marks nothing when the writes are in one wave, whatever waves the noops declare', () => {
    const changes = [change('a'), change('b'), change('c', 'noop')];
    expect(markWaves(changes, resources({ a: 1, b: 1, c: 0 }))).toBeUndefined();
    expect(changes.some((c) => 'wave' in c)).toBe(false);
  });

  it('marks each declared resource with its wave and counts the writes of each wave, ascending; deletes get none', () => {
    const changes = [change('a', 'create'), change('b'), change('c', 'noop'), change('d', 'delete'), change('e')];
    const waves = markWaves(changes, resources({ a: 2, b: -1, c: 0, e: 2 }));
    expect(waves).toEqual([
      { wave: -1, create: 0, update: 1, adopt: 0 },
      { wave: 2, create: 1, update: 1, adopt: 0 },
    ]);
    expect(changes.map((c) => c.wave)).toEqual([2, -1, 0, undefined, 2]);
  });

  it('a suspended write is in no wave: it is never written', () => {
    const suspended = { ...change('b'), suspended: true };
    expect(markWaves([change('a'), suspended], resources({ a: 0, b: 1 }))).toBeUndefined();
  });
});

describe('groupByWave', () => {
  it('ascending, keeping the given order within a wave; undefined (a delete) after the last', () => {
    const items = [
      { n: 'a', w: 1 },
      { n: 'd', w: undefined },
      { n: 'b', w: 0 },
      { n: 'c', w: 1 },
      { n: 'e', w: -3 },
    ];
    const groups = groupByWave(items, (i) => i.w);
    expect(groups.map((g) => [g.wave, g.items.map((i) => i.n).join('')])).toEqual([
      [-3, 'e'],
      [0, 'b'],
      [1, 'ac'],
      ['prune', 'd'],
    ]);
  });
});

describe('waveHeldHold', () => {
  it('names the wave, the failed resource and how it failed, and what to do', () => {
    const hold = waveHeldHold(
      'fp',
      2,
      { wave: 1, key: 'Deployment/eu-1', said: 'revision r-9 ended BUILD_FAILED' },
      new Date('2026-01-01T00:00:00Z'),
    );
    expect(hold).toMatchObject({ reason: 'WaveHeld', desired: 'fp', since: '2026-01-01T00:00:00.000Z' });
    expect(hold.message).toBe(
      'wave 2 waits behind wave 1, where Deployment/eu-1 failed (revision r-9 ended BUILD_FAILED); fix its manifest and commit (a new change starts from the first wave), or after a fix outside git run "converge reconcile --retry-failed eu-1" (or "converge apply --wait" again)',
    );
  });
});

describe('gateWaves (the daemon)', () => {
  const R = resources({ canary: 0, a: 1, b: 1, d: 2 });
  function outcome(
    name: string,
    o: { write?: boolean; health?: 'healthy' | 'progressing' | 'degraded'; reason?: string },
  ): Outcome {
    const reason = o.reason ?? (o.write ? 'OutOfSync' : 'Synced');
    return {
      key: resourceKey('Deployment', name),
      kind: 'Deployment',
      name,
      action: o.write ? 'update' : 'noop',
      sync: {
        status: o.write ? 'out_of_sync' : 'synced',
        reason: reason as Outcome['sync']['reason'],
        message: `${name} ${reason}`,
      },
      health: {
        status: o.health ?? 'healthy',
        reason: 'RevisionBuilding',
        message: `revision r-${name} ended BUILD_FAILED`,
      },
      write: o.write ? { op: 'update', drift: false } : null,
      skip: null,
      drift: null,
    };
  }
  const map = (...os: Outcome[]): Map<string, Outcome> => new Map(os.map((o) => [o.key, o]));

  it('a commit changing all: only wave 0 goes; the rest wait for it to be written and healthy', () => {
    const gated = gateWaves(
      map(
        outcome('canary', { write: true }),
        outcome('a', { write: true }),
        outcome('b', { write: true }),
        outcome('d', { write: true }),
      ),
      R,
    );
    expect([...gated.keys()]).toEqual(['Deployment/a', 'Deployment/b', 'Deployment/d']);
    expect(gated.get('Deployment/a')).toEqual({
      reason: 'WaveWaiting',
      message:
        'wave 1 waits until wave 0 is written and healthy (every new revision DEPLOYED); it is written at the reconcile after that',
    });
  });

  it('wave 0 building: nothing of wave 1 or 2; wave 0 healthy: wave 1 goes, wave 2 waits for it', () => {
    expect(
      gateWaves(
        map(outcome('canary', { health: 'progressing' }), outcome('a', { write: true }), outcome('d', { write: true })),
        R,
      ).size,
    ).toBe(2);
    const next = gateWaves(
      map(
        outcome('canary', {}),
        outcome('a', { write: true }),
        outcome('b', { write: true }),
        outcome('d', { write: true }),
      ),
      R,
    );
    expect([...next.keys()]).toEqual(['Deployment/d']);
  });

  it('a failed build in wave 1 holds wave 2, naming it; a queued job is not done', () => {
    const gated = gateWaves(
      map(
        outcome('canary', {}),
        outcome('a', {}),
        outcome('b', { health: 'degraded', reason: 'RevisionFailed' }),
        outcome('d', { write: true }),
      ),
      R,
    );
    expect(gated.get('Deployment/d')?.reason).toBe('WaveHeld');
    expect(gated.get('Deployment/d')?.message).toMatch(
      /^wave 2 waits behind wave 1, where Deployment\/b failed \(revision r-b ended BUILD_FAILED\)/,
    );
    expect(
      gateWaves(map(outcome('canary', { reason: 'Applying' }), outcome('a', { write: true })), R).has('Deployment/a'),
    ).toBe(true);
  });

  it('one wave only: nothing gated', () => {
    expect(gateWaves(map(outcome('a', { write: true }), outcome('b', { health: 'degraded' })), R).size).toBe(0);
  });

  it('wave_max_in_flight: the current wave lets only as many writes through as places are free; a job in flight takes one', () => {
    const four = resources({ canary: 0, a: 1, b: 1, c: 1, e: 1 });
    const wave1 = ['a', 'b', 'c', 'e'].map((n) => outcome(n, { write: true }));
    const all = map(outcome('canary', {}), ...wave1);
    expect([...gateWaves(all, four, { limit: { count: 2 } }).keys()]).toEqual(['Deployment/c', 'Deployment/e']);
    expect(gateWaves(all, four, { limit: { percent: 25 } }).size).toBe(3);
    // a building and b's job queued: no place left; a healthy: one.
    const building = map(outcome('canary', {}), outcome('a', { health: 'progressing' }), ...wave1.slice(1));
    expect([...gateWaves(building, four, { limit: { count: 2 }, inFlight: new Set(['Deployment/b']) }).keys()]).toEqual(
      ['Deployment/c', 'Deployment/e'],
    );
    const one = map(outcome('canary', {}), outcome('a', {}), ...wave1.slice(1));
    const gated = gateWaves(one, four, { limit: { count: 2 }, inFlight: new Set(['Deployment/b']) });
    expect([...gated.keys()]).toEqual(['Deployment/e']);
    expect(gated.get('Deployment/e')).toEqual({
      reason: 'WaveWaiting',
      message:
        'wave 1 waits for a place: wave_max_in_flight lets 2 of its writes build at once; it is written when one of them is healthy',
    });
    expect(gateWaves(one, four).size).toBe(0);
  });

  it('deletes go in descending wave order: a delete of wave 1 waits while one of wave 2 is sent or queued', () => {
    const del = (name: string, o: { write?: boolean; reason?: string }): Outcome => ({
      ...outcome(name, o),
      action: 'delete',
      write: o.write ? { op: 'delete', drift: false } : null,
    });
    const deleteWaves = new Map([
      ['Deployment/x', 2],
      ['Deployment/y', 1],
      ['Deployment/z', 1],
      ['Deployment/w', 0],
    ]);
    const both = map(
      outcome('a', {}),
      del('x', { write: true }),
      del('y', { write: true }),
      del('z', { write: true }),
      del('w', { write: true }),
    );
    const gated = gateWaves(both, R, { deleteWaves });
    expect([...gated.keys()]).toEqual(['Deployment/y', 'Deployment/z', 'Deployment/w']);
    expect(gated.get('Deployment/w')).toEqual({
      reason: 'WaveWaiting',
      message:
        'the delete of wave 0 waits until the deletes of wave 1 are done (deletes go in descending wave order); it is sent at the reconcile after that',
    });
    const queued = map(outcome('a', {}), del('x', { reason: 'Applying' }), del('y', { write: true }));
    expect(gateWaves(queued, R, { deleteWaves }).has('Deployment/y')).toBe(true);
    expect(
      gateWaves(map(del('y', { write: true }), del('w', { write: true })), R, { deleteWaves }).has('Deployment/w'),
    ).toBe(true);
    expect(gateWaves(map(outcome('a', {}), del('y', { write: true })), R, { deleteWaves }).size).toBe(0);
    // Without the waves of the deletes (none recorded): all after the last wave at once, as before.
    expect(gateWaves(both, R).size).toBe(0);
  });
});
